"""A run's secure-aggregation settings and the SecAgg+ communication graph.

SecAgg+ (Bell, Bonawitz, Gascón, Lepoint & Raykova 2020, "Secure Single-Server
Aggregation with (Poly)Logarithmic Overhead", CCS) replaces the complete graph of
the original protocol (Bonawitz et al. 2017, CCS) by a sparse random graph: each
client agrees masks with, and secret-shares its keys among, only its ``k``
neighbours, ``k = O(log n)``, so a client's work and bytes grow like ``log n`` and
the server's like ``n log n`` instead of ``n^2``. The graph here is a Harary graph
(a ring in which each node links to its ``k/2`` nearest nodes on each side) over a
random order of the clients, drawn afresh in every protocol session; the paper
uses a random ``k``-regular graph, of which this is one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError

__all__ = ["SecAggConfig", "neighbour_graph"]


@dataclass(frozen=True)
class SecAggConfig:
    """How a run aggregates summable replies securely.

    Parameters
    ----------
    fractional_bits
        ``s``: floats are sent as fixed-point integers ``round(x * 2**s)`` modulo
        ``2**64``. Each element of a client's value is off by at most ``2**-(s+1)``
        (plus float64 rounding), so an element of the sum of ``N`` clients by at most
        ``N * 2**-(s+1)``; the sum must stay within ``±2**(63 - s)`` (a client whose
        value exceeds ``2**(63 - s) / N`` in magnitude refuses, naming the array).
        Default 24: error ``N * 3.0e-8``, range ``±5.5e11``. Valid: 8 to 48 (fewer bits
        would round every weight to a coarse grid; 0 to integers).
    neighbours
        ``k``: how many neighbours each client masks with and shares its secrets
        among; default ``2 * ceil(log2 n)`` for ``n`` clients (SecAgg+'s ``O(log n)``),
        rounded up to even (the graph links ``k/2`` nodes on each side), at most
        ``n - 1`` (then every client is every other's neighbour, as in the original
        SecAgg).
    threshold
        ``t``: how many of a client's ``k`` neighbours must answer the last stage to
        remove its masks; default ``floor(k / 2) + 1`` (a majority, so the server
        can never gather both a client's self-mask seed and its mask key). Valid: 1
        to ``neighbours`` when both are given (a larger threshold is refused); with
        fewer clients than ``threshold + 1`` in a session, every client neighbours
        every other and all ``n - 1`` of them are needed. A round
        survives any number of dropouts as long as every client that sent its
        shares keeps ``t`` neighbours to the end; otherwise it fails with a
        :class:`~fedstruct.errors.SecureAggregationError`.
    min_clients
        Fewest clients whose values may be summed: a sum of fewer would show one
        client's value (default 2).
    """

    fractional_bits: int = 24
    neighbours: int | None = None
    threshold: int | None = None
    min_clients: int = 2

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "secure aggregation")
        if self.min_clients < 2:
            raise ConfigError(
                f"secure aggregation: min_clients must be >= 2 (a sum of one client is its "
                f"value), got {self.min_clients}"
            )
        if (
            self.threshold is not None
            and self.neighbours is not None
            and self.threshold > self.neighbours
        ):
            raise ConfigError(
                f"secure aggregation: threshold must be in 1..neighbours = 1..{self.neighbours} "
                f"(t of a client's k neighbours rebuild its masks), got {self.threshold}; "
                "lower threshold or raise neighbours"
            )

    def degree(self, n: int) -> int:
        """``k`` for ``n`` clients (see the class docstring)."""
        k = self.neighbours if self.neighbours is not None else 2 * math.ceil(math.log2(max(n, 2)))
        return max(1, min(k + k % 2, n - 1))

    def reconstruction_threshold(self, n: int) -> int:
        """``t`` for ``n`` clients (see the class docstring)."""
        k = self.degree(n)
        return min(k, self.threshold if self.threshold is not None else k // 2 + 1)


#: The fewest fractional bits: below, a weight is rounded to a coarse grid (at 0 bits,
#: to an integer); 8 bits round each element to 2**-9 ≈ 0.002.
MIN_FRACTIONAL_BITS = 8

_CONSTRAINTS = {
    "fractional_bits": Interval(int, MIN_FRACTIONAL_BITS, 48),
    "neighbours": Interval(int, 1, allow_none=True),
    "threshold": Interval(int, 1, allow_none=True),
    "min_clients": Interval(int),
}


def neighbour_graph(
    nodes: Sequence[int], k: int, rng: np.random.Generator
) -> dict[int, tuple[int, ...]]:
    """Each node's neighbours in a Harary graph of degree about ``k`` over a random
    order of ``nodes`` (the module docstring); symmetric, no self-loops.

    With ``k >= len(nodes) - 1`` every node neighbours every other.
    """
    order = [int(v) for v in rng.permutation(np.asarray(sorted(nodes), dtype=np.int64))]
    n = len(order)
    if k >= n - 1:
        return {v: tuple(u for u in sorted(order) if u != v) for v in order}
    half = math.ceil(k / 2)  # k is even here (SecAggConfig.degree)
    links: dict[int, set[int]] = {v: set() for v in order}
    for i, v in enumerate(order):
        for step in range(1, half + 1):
            u = order[(i + step) % n]
            links[v].add(u)
            links[u].add(v)
    return {v: tuple(sorted(links[v])) for v in sorted(links)}
