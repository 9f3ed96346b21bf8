"""Helpers shared by the data layer and the experiments' client-building protocols.

Seeding (every random draw comes from an explicit seed), half-up rounding of counts
and a row-wise softmax. Not user API: the public names live in :mod:`fedstruct.data`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import DataError, SampleSizeError

__all__ = [
    "SeedLike",
    "check_sample_size",
    "child_seed",
    "make_rng",
    "round_half_up",
    "softmax",
]

#: A seed: a non-negative integer, or a sequence of them (``np.random.default_rng`` entropy).
SeedLike = int | Sequence[int]


def make_rng(seed: object, what: str = "seed") -> np.random.Generator:
    """A ``numpy`` generator from an explicit seed (an int ≥ 0 or a sequence of them).

    Raises
    ------
    DataError
        If the seed is missing (``None``), negative, a ``bool`` or not integral.
    """
    parts = seed if isinstance(seed, Sequence) and not isinstance(seed, str) else [seed]
    ok = len(parts) > 0 and all(
        isinstance(p, int | np.integer) and not isinstance(p, bool) and p >= 0 for p in parts
    )
    if not ok:
        raise DataError(
            f"{what} must be a non-negative integer (or a sequence of them), got {seed!r}"
        )
    return np.random.default_rng([int(p) for p in parts])


def child_seed(seed: SeedLike, *tags: int) -> list[int]:
    """A child seed: the seed's entropy followed by ``tags`` (the seed is checked first).

    Independent streams for the parts of one procedure: ``child_seed(s, 0)`` and
    ``child_seed(s, 1)`` seed unrelated generators, both determined by ``s``.

    Raises
    ------
    DataError
        As :func:`make_rng`, for a bad ``seed``.
    """
    parts = list(seed) if isinstance(seed, Sequence) and not isinstance(seed, str) else [seed]
    make_rng(parts)
    return [*(int(p) for p in parts), *tags]


def check_sample_size(n: object, what: str = "n") -> int:
    """Return ``n`` as an ``int`` if it is a positive integer.

    Raises
    ------
    SampleSizeError
        If ``n`` is not an integer (``bool`` and ``float`` included) or is below 1.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise SampleSizeError(
            f"{what} must be a positive integer, got {n!r} ({type(n).__name__}); pass an int"
        )
    if n <= 0:
        raise SampleSizeError(f"{what} must be a positive integer, got {n}")
    return int(n)


def round_half_up(x: float, tolerance: float = 0.0) -> int:
    """``x`` rounded to the nearest integer, halves up (not Python's to-even).

    ``tolerance`` is added before flooring, so that a product such as ``0.3 * 5``
    (``1.4999999999999998`` in binary) rounds up as its decimal value does; the
    default 0 rounds the binary value as it is.
    """
    return math.floor(x + 0.5 + tolerance)


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Softmax over the last axis, shifted by the maximum for stability."""
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
