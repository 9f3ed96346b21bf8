"""C-Update (Algorithm 2): a client refines its PAG with the integrated graph G0.

Zhang's orientation rules do not apply to ``G0`` itself (Figure 3), so each client
revisits its own graph: for every v-structure ``Xi *-> Y <-* Xj`` of ``G0`` (``Xi``
and ``Xj`` not adjacent in ``G0``) with ``Y`` observed by the client,

1. if the client observes all three and has both edges, it orients the arrowheads
   at ``Y`` (lines 5-6; the marks at ``Xi`` and ``Xj`` are kept);
2. for every other neighbour ``B`` of ``Y`` in its graph, if some
   ``Z ⊆ adj(Y) \\ {B, Xi, Xj}`` makes ``Xi ⫫ B | Z ∪ {Y}`` or ``Xj ⫫ B | Z ∪ {Y}``
   on its data, it orients ``Y -> B`` (lines 8-13): ``Y`` separates a parent of
   the collider from ``B``, so ``Y`` is not a collider between them.

The tests run on the client's cached CI test (the one its local learner used).
Orientations are applied in the order of ``G0``'s variables; a later one overwrites an
earlier one on the same edge end. The result is not propagated by the orientation
rules (Algorithm 2 does not), so it may be a mark pattern no PAG has.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from fedstruct.discovery import CITest
from fedstruct.graphs import ARROW, NONE, TAIL, Graph

__all__ = ["c_update"]


def c_update(
    pag: Graph, g0: Graph, ci_test: CITest, alpha: float, depth: int | None = None
) -> Graph:
    """``Pag_u`` of Algorithm 2 from the client's ``Pag_0`` (``pag``) and ``G0``.

    Parameters
    ----------
    pag
        The client's graph over its variables (indices as in ``ci_test``).
    g0
        The integrated graph over all variables.
    ci_test
        The client's cached CI test over its variables.
    alpha
        Significance level: ``p > alpha`` is independence.
    depth
        Largest ``Z`` searched (``None``: every subset, exponential in the degree).
    """
    marks = pag.marks.copy()
    local = {v: k for k, v in enumerate(pag.names)}
    adj_local = pag.adjacency()
    g = g0.marks
    g0_adj = g0.adjacency()
    for y_name in g0.names:
        if y_name not in local:
            continue
        y0 = g0.index(y_name)
        into = np.flatnonzero(g[:, y0] == ARROW)  # Xi *-> Y in G0
        y = local[y_name]
        nbrs = [int(b) for b in np.flatnonzero(adj_local[y])]
        for xi0, xj0 in combinations(into.tolist(), 2):
            if g0_adj[xi0, xj0]:
                continue  # shielded: not a v-structure
            xi_name, xj_name = g0.names[xi0], g0.names[xj0]
            xi, xj = local.get(xi_name), local.get(xj_name)
            if xi is not None and xj is not None and adj_local[xi, y] and adj_local[xj, y]:
                marks[xi, y] = ARROW
                marks[xj, y] = ARROW
            parents = [x for x in (xi, xj) if x is not None]
            for b in nbrs:
                if b in (xi, xj) or not parents:
                    continue
                rest = [v for v in nbrs if v not in (b, xi, xj)]
                if _separated_through(ci_test, parents, b, y, rest, alpha, depth):
                    marks[b, y] = TAIL
                    marks[y, b] = ARROW
    assert not np.any((marks != NONE) != (pag.marks != NONE))  # adjacency unchanged
    return pag.with_marks(marks)


def _separated_through(
    ci_test: CITest,
    parents: list[int],
    b: int,
    y: int,
    rest: list[int],
    alpha: float,
    depth: int | None,
) -> bool:
    """Some ``Z ⊆ rest`` (``|Z| <= depth``) gives ``X ⫫ B | Z ∪ {Y}`` for an ``X`` in parents.

    Sizes grow from 0; once every test of a size was skipped by the small-sample rule,
    larger sets (more cells, same rows) would be skipped too, so the search stops.
    """
    largest = len(rest) if depth is None else min(depth, len(rest))
    for size in range(largest + 1):
        performed = False
        for z in combinations(rest, size):
            for x in parents:
                p, skipped = ci_test.query(x, b, (*z, y))
                performed |= not skipped
                if p > alpha:
                    return True
        if not performed:
            return False
    return False
