"""A graph weighted by a client's row count, as planes the privacy audit can check.

Some secure sums need ``Σ_k n_k G_k`` for 0/1 or endpoint-mark matrices ``G_k`` (a
strength vote weighted by row counts). A client's ``n_k G_k`` is a rescaled 0/1
pattern, which the message audit (:mod:`fedstruct.privacy.audit`) rightly cannot
tell from a rescaled row of categorical data. Written in binary, ``n_k = Σ_b 2^b
β_kb`` with ``β_kb ∈ {0, 1}``, it is ``Σ_b 2^b (β_kb G_k)``: every plane ``β_kb G_k``
is ``G_k`` or zeros, a valid endpoint-mark matrix that the protocol declares as a
graph (checked as one instead of row-checked). The server sums each plane over the
clients securely and recombines them exactly: ``Σ_k n_k G_k = Σ_b 2^b Σ_k β_kb G_k``.
Every client sends :data:`PLANES` planes, so that the replies share one layout.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError

__all__ = ["PLANES", "directed_counts", "plane_names", "planes", "recombine"]

#: Planes per weighted matrix: row counts up to ``2**PLANES - 1``.
PLANES = 24


def plane_names(name: str) -> tuple[str, ...]:
    """The array names of ``name``'s planes (for ``handles(graph_arrays=...)``)."""
    return tuple(f"{name}.{b}" for b in range(PLANES))


def planes(name: str, weight: int, matrix: NDArray[np.integer]) -> dict[str, NDArray[np.int64]]:
    """``weight * matrix`` as :data:`PLANES` arrays ``name.b``: ``matrix`` where bit
    ``b`` of ``weight`` is set, zeros elsewhere.

    Raises
    ------
    ProtocolError
        If ``weight`` is negative or needs more than :data:`PLANES` bits.
    """
    if not 0 <= weight < 2**PLANES:
        raise ProtocolError(
            f"a weight of {weight} does not fit the {PLANES} planes of a weighted graph"
        )
    m = np.asarray(matrix, dtype=np.int64)
    zeros = np.zeros_like(m)
    return {f"{name}.{b}": (m if weight >> b & 1 else zeros) for b in range(PLANES)}


def recombine(sums: Mapping[str, NDArray], name: str) -> NDArray[np.int64]:
    """``Σ_k n_k G_k`` from the secure sums of ``name``'s planes (exact, in int64)."""
    total = np.zeros_like(np.asarray(sums[f"{name}.0"], dtype=np.int64))
    for b in range(PLANES):
        total += np.asarray(sums[f"{name}.{b}"], dtype=np.int64) << b
    return total


def directed_counts(marks: NDArray[np.integer]) -> NDArray[np.int64]:
    """How many clients (or how much weight) hold ``i -> j``, from the sum ``M`` of
    their DAGs' endpoint marks: a DAG's marks are ``m_ij = 2 a_ij + a_ji`` (arrowhead
    2 at ``j``, tail 1 at ``i``), so ``M = 2 A + A^T`` and ``A = (2 M - M^T) / 3``."""
    total = np.asarray(marks, dtype=np.int64)
    return (2 * total - total.T) // 3
