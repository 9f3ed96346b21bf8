"""FCI's second edge-removal phase: tests given subsets of Possible-D-SEP.

Spirtes, Glymour & Scheines (2000), §6.7, FCI steps C-D; Zhang (2008), AIJ 172, §2.2.
After the adjacency search and R0, ``A`` is in Possible-D-SEP(x) (``pds(x)``) if
``A != x`` and some path ``<x, ..., A>`` of the current graph has, at every
inner node ``V`` of a sub-path ``<U, V, W>``, either a collider ``U *-> V <-* W`` or a
triangle (``U`` and ``W`` adjacent). If ``x`` and ``y`` are not adjacent in the true MAG,
some subset of ``pds(x)`` or of ``pds(y)`` separates them (Spirtes et al. 2000, §6.7,
the correctness of FCI: D-SEP(x, y) ⊆ pds(x)), so every remaining edge ``x - y`` is
tested given the subsets of ``pds(x) \\ {x, y}`` and of ``pds(y) \\ {x, y}``, by
increasing size, and removed at the first independence.

Choices (as pcalg's ``pdsep``, Kalisch et al. 2012):

- ``pds`` is computed once per node, from the graph after R0, by a breadth-first
  search over edge states ``(U, V)`` ("arrived at V from U"); the search may revisit
  nodes along different edges, so it finds the nodes reachable by such *walks*, a
  superset of the path definition (a larger candidate set only adds tests).
  ``max_path_length`` bounds the number of edges of the walks.
- Subsets contained in ``adj(x) \\ {y}`` or ``adj(y) \\ {x}`` (current adjacencies) of
  size at most the adjacency search's depth are skipped: it already found them
  dependent (adjacencies only shrink, so every such subset was tried). Subset sizes
  are bounded by ``depth``.
- With ``biconnected=True`` the candidates are intersected with the biconnected
  component of the current skeleton that holds the edge ``x - y`` (pcalg's ``biCC``):
  every path between ``x`` and ``y`` lies in it, and a separating set keeps separating
  after dropping the variables outside it (they can only be colliders' descendants,
  whose conditioning only opens paths), so no separation is lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from itertools import combinations

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from fedstruct.graphs.graph import ARROW, NONE
from fedstruct.methods.fedcdnv.local.evidence import Evidence
from fedstruct.methods.fedcdnv.local.skeleton import check_depth

__all__ = ["AUTO", "auto_pds_depth", "possible_dsep", "remove_by_possible_dsep"]

#: ``pds_depth="auto"``: bound the phase by the separating sets the adjacency search found.
AUTO = "auto"
#: Share of the adjacency search's separating sets that may be larger than the auto bound.
AUTO_OUTLIER_SHARE = 0.01


def auto_pds_depth(sepsets: Iterable[Sequence[int]], outliers: float = AUTO_OUTLIER_SHARE) -> int:
    """The data-driven bound on Possible-D-SEP conditioning sets (``pds_depth="auto"``).

    The smallest ``k >= 1`` such that at most ``outliers`` (1 %) of the separating sets
    found by the adjacency search have more than ``k`` variables. The adjacency search
    tries every subset of the current neighbours, so its separating sets show how large
    the sets that separate variables in this data are; Possible-D-SEP sets are larger
    candidate pools, not larger separators. On real data the unbounded phase is
    exponential in the size of Possible-D-SEP (hepar2, 10,000 rows: more than 8
    minutes), while the adjacency search's separating sets rarely exceed 2 variables
    (hepar2: 12 of 2,328 larger than 2; win95pts: 2 of 2,767), so this bound gives 2
    there. What it costs: an edge whose only separating sets within Possible-D-SEP
    are larger than ``k`` stays (FCI's completeness needs the unbounded search,
    ``pds_depth=None``; the oracle tests use it). Choice documented in
    docs/local_learners.md.
    """
    sizes = np.array([len(s) for s in sepsets], dtype=np.int64)
    if sizes.size == 0:
        return 1
    k = 1
    while np.mean(sizes > k) > outliers:
        k += 1
    return k


def possible_dsep(marks: NDArray[np.int8], x: int, max_path_length: int | None = None) -> list[int]:
    """Possible-D-SEP of ``x`` in a partially oriented graph (module docstring).

    Parameters
    ----------
    marks
        ``(n, n)`` endpoint marks (``marks[i, j]`` = mark at ``j``), after R0.
    x
        The start node.
    max_path_length
        Longest walk, in edges, that may reach a member; ``None``: no bound.

    Returns
    -------
    list[int]
        The members, sorted (``x`` excluded).
    """
    limit = check_depth(max_path_length, "max_path_length")
    adj = marks != NONE
    nbrs = [np.flatnonzero(row).tolist() for row in adj]
    found: set[int] = set()
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[int, int, int]] = deque()
    for v in nbrs[x]:
        found.add(v)
        seen.add((x, v))
        queue.append((x, v, 1))
    while queue:
        u, v, length = queue.popleft()
        if length >= limit:
            continue
        into_v = marks[u, v] == ARROW
        for w in nbrs[v]:
            if w == u or w == x or (v, w) in seen:
                continue
            if (into_v and marks[w, v] == ARROW) or adj[u, w]:
                seen.add((v, w))
                found.add(w)
                queue.append((v, w, length + 1))
    found.discard(x)
    return sorted(found)


def _biconnected_members(adj: NDArray[np.bool_]) -> dict[tuple[int, int], set[int]]:
    """For every edge ``(i, j)``, ``i < j``: the nodes of its biconnected component."""
    g = nx.Graph()
    g.add_nodes_from(range(adj.shape[0]))
    g.add_edges_from(zip(*np.nonzero(np.triu(adj, 1)), strict=True))
    out: dict[tuple[int, int], set[int]] = {}
    for comp_edges in nx.biconnected_component_edges(g):
        edges = list(comp_edges)
        nodes = {int(v) for e in edges for v in e}
        for a, b in edges:
            out[(min(int(a), int(b)), max(int(a), int(b)))] = nodes
    return out


def remove_by_possible_dsep(
    evidence: Evidence,
    marks: NDArray[np.int8],
    *,
    depth: int | None = None,
    max_path_length: int | None = None,
    biconnected: bool = True,
    searched_depth: int | None = None,
) -> NDArray[np.bool_]:
    """Remove the edges separated given subsets of Possible-D-SEP (module docstring).

    Parameters
    ----------
    evidence
        Records the tests and the separating sets.
    marks
        Marks after the adjacency search and R0; read only.
    depth
        Largest conditioning-set size; ``None``: no bound.
    max_path_length
        Bound on the walks defining Possible-D-SEP; ``None``: no bound.
    biconnected
        Restrict the candidates to the edge's biconnected component (default).
    searched_depth
        The ``depth`` bound of the adjacency search that produced ``marks`` (``None``:
        unbounded): subsets of ``adj(x)`` or ``adj(y)`` up to that size are known to be
        dependent and skipped.

    Returns
    -------
    numpy.ndarray
        The new symmetric adjacency matrix.
    """
    max_depth = check_depth(depth)
    known_depth = check_depth(searched_depth, "searched_depth")
    adj = marks != NONE
    d = adj.shape[0]
    pds = [possible_dsep(marks, v, max_path_length) for v in range(d)]
    blocks = _biconnected_members(adj) if biconnected else {}
    adj = adj.copy()
    for x in range(d):
        for y in range(x + 1, d):
            if not adj[x, y]:
                continue
            block = blocks.get((x, y))
            if _search_pair(evidence, adj, pds, block, x, y, max_depth, known_depth):
                adj[x, y] = adj[y, x] = False
    return adj


def _search_pair(
    evidence: Evidence,
    adj: NDArray[np.bool_],
    pds: list[list[int]],
    block: set[int] | None,
    x: int,
    y: int,
    max_depth: int,
    known_depth: int,
) -> bool:
    """Test ``x``, ``y`` given subsets of ``pds(x)`` then ``pds(y)``; record a separation.

    Skipped: subsets of ``adj(x) \\ {y}`` or ``adj(y) \\ {x}`` of at most ``known_depth``
    variables (the adjacency search found them dependent) and, on the second side, the
    subsets of the first side's candidates (tried already).
    """
    adj_x = {int(v) for v in np.flatnonzero(adj[x]) if v != y}
    adj_y = {int(v) for v in np.flatnonzero(adj[y]) if v != x}
    done: set[int] = set()
    for side in (x, y):
        cand = [v for v in pds[side] if v != x and v != y and (block is None or v in block)]
        members = set(cand)
        top = min(len(cand), max_depth, evidence.ci_test.max_testable_size(x, y, cand))
        known = top <= known_depth and (members <= adj_x or members <= adj_y)
        if known or members <= done:
            done = members
            continue
        for size in range(1, top + 1):
            for s in combinations(cand, size):
                ss = set(s)
                if ss <= done or (size <= known_depth and (ss <= adj_x or ss <= adj_y)):
                    continue
                indep, p = evidence.independent(x, y, s)
                if indep:
                    evidence.separate(x, y, s, p)
                    return True
        done = members
    return False
