"""What PC, FCI and RFCI do with background knowledge beyond the adjacency search.

The adjacency search takes the knowledge first
(:func:`~fedstruct.discovery.skeleton.adjacency_search`: pairs non-adjacent by
knowledge start removed and are never tested, required pairs are never tested, the
conditioning sets draw only on possible ancestors). This module holds the rest
(docs/knowledge.md gives the reasons and the references):

- :func:`separate_removed_pairs`: a pair removed without a test has no separating set,
  but the collider rule R0 (and FCI's R4) needs one for every unshielded triple
  ``x - z - y`` through it. After the last edge removal, each removed pair that still
  has a common neighbour gets one, searched as the adjacency search would (subsets of
  the final ``adj(x)`` then ``adj(y)``, by increasing size, among the possible
  ancestors), and, for FCI and RFCI, among the subsets of ``pds(x)`` and ``pds(y)``
  (the pair's separating sets in a MAG may hold non-neighbours; Spirtes et al. 2000,
  §6.7). Pairs without a common neighbour cost nothing: no rule reads their set.
- :func:`orient_pdag` (PC): every undirected edge whose direction the knowledge fixes
  is directed (Meek 1995: orient by the knowledge, then close under Meek's rules).
- :func:`orient_pag` (FCI, RFCI): the two marks a MAG's edge has that the knowledge
  implies, and only those: an arrowhead at ``y`` on ``x *-* y`` when ``y`` may not be an
  ancestor of ``x`` (tiers, ``forbidden [y, x]``), and ``x --> y`` for a required
  ``x -> y``. Nothing else: in particular an earlier tier never gives a tail.
- :func:`knowledge_dag` (F-CMs' graphs, which must be DAGs): a directed graph made
  acyclic and true to the knowledge by deleting edges, as F-CMs' DAG projection
  breaks cycles.
"""

from __future__ import annotations

from itertools import combinations, pairwise

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.knowledge import KnowledgeRules
from fedstruct.discovery.pds import possible_dsep
from fedstruct.discovery.skeleton import check_depth
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph, reachable
from fedstruct.graphs.projection import project_to_dag

__all__ = [
    "PHASE",
    "knowledge_dag",
    "orient_pag",
    "orient_pdag",
    "respect_knowledge",
    "separate_removed_pairs",
]

#: The ``tests_by_phase`` key of :func:`separate_removed_pairs`' tests.
PHASE = "knowledge_sepsets"

Marks = NDArray[np.int8]


def separate_removed_pairs(
    evidence: Evidence,
    adjacency: NDArray[np.bool_],
    knowledge: KnowledgeRules,
    *,
    latent_free: bool,
    depth: int | None = None,
    pds_marks: Marks | None = None,
    pds_depth: int | None = None,
    max_path_length: int | None = None,
) -> int:
    """Search a separating set for each pair the knowledge removed that has a common
    neighbour in ``adjacency`` (module docstring); record the first found.

    Parameters
    ----------
    evidence
        Asks the tests and records the separations.
    adjacency
        The final skeleton (symmetric boolean).
    knowledge, latent_free
        The run's knowledge and whether it assumes no latent confounder
        (:meth:`KnowledgeRules.removed`).
    depth
        Largest set tried among the neighbours; ``None``: no bound.
    pds_marks
        Marks to compute Possible-D-SEP on (FCI, RFCI: the graph after R0, where a
        triple through a pair without a set counts as a collider, which only widens
        Possible-D-SEP); ``None`` (PC): the neighbours only.
    pds_depth, max_path_length
        Largest set tried among Possible-D-SEP, and its walks' bound.

    Returns
    -------
    int
        The pairs left without a separating set (a perfect test leaves none: the
        rules then read their triples as colliders).
    """
    removed = np.triu(knowledge.removed(latent_free), 1)
    common = (adjacency.astype(np.int32) @ adjacency.astype(np.int32)) > 0
    nbrs = [np.flatnonzero(row).tolist() for row in adjacency]
    pds: dict[int, list[int]] = {}
    top = check_depth(depth)
    pds_top = check_depth(pds_depth, "pds_depth")
    missing = 0
    for x, y in np.argwhere(removed & common).tolist():
        pool = knowledge.pool(x, y)
        pools = [([v for v in nbrs[s] if pool[v]], top) for s in (x, y)]
        if pds_marks is not None:
            pds_pool = knowledge.pool(x, y, possible_dsep=True)
            for s in (x, y):
                if s not in pds:
                    pds[s] = possible_dsep(pds_marks, s, max_path_length)
                pools.append(([v for v in pds[s] if pds_pool[v]], pds_top))
        if _search(evidence, x, y, pools) is None:
            missing += 1
    evidence.ci_test.barrier()
    return missing


def _search(
    evidence: Evidence, x: int, y: int, pools: list[tuple[list[int], int]]
) -> tuple[int, ...] | None:
    """Try the subsets of each pool by increasing size (each set once); record the first
    separating one."""
    seen: set[tuple[int, ...]] = set()
    for cand, top in pools:
        limit = min(len(cand), top, evidence.ci_test.max_testable_size(x, y, cand))
        for size in range(limit + 1):
            sets = [s for s in combinations(cand, size) if s not in seen]
            seen.update(sets)
            asked = evidence.ci_test.provisional
            found = evidence.first_independent(x, y, sets, cand)
            if found is not None:
                return found
            if evidence.ci_test.provisional > asked:
                return None  # this size's tests are being gathered (CITest.barrier)
    return None


def orient_pdag(marks: Marks, knowledge: KnowledgeRules) -> int:
    """Direct every undirected edge ``x --- y`` of a PDAG that the knowledge fixes, in place.

    ``x -> y`` when it is required or when ``y`` may not be an ancestor of ``x``. Edges
    already directed are left. Returns the edges directed.
    """
    count = 0
    for x, y in np.argwhere(marks != NONE).tolist():
        if marks[x, y] != TAIL or marks[y, x] != TAIL:
            continue
        if knowledge.required[x, y] or knowledge.not_ancestor[y, x]:
            marks[x, y], marks[y, x] = ARROW, TAIL
            count += 1
    return count


def orient_pag(marks: Marks, knowledge: KnowledgeRules) -> int:
    """Set the marks the knowledge implies on a partially oriented graph, in place.

    On every edge ``x *-* y`` (MAG semantics, no selection bias: a tail at ``x`` says
    ``x`` is an ancestor of ``y``, an arrowhead at ``y`` that ``y`` is not an ancestor of
    ``x``): an arrowhead at ``y`` if ``y`` may not be an ancestor of ``x``; a tail at ``x``
    and an arrowhead at ``y`` if ``x -> y`` is required. Knowledge wins over a mark the
    data set before (only possible with errors in the tests). Returns the marks changed.
    """
    count = 0
    for x, y in np.argwhere(marks != NONE).tolist():
        if (knowledge.required[x, y] or knowledge.not_ancestor[y, x]) and marks[x, y] != ARROW:
            marks[x, y] = ARROW
            count += 1
        if knowledge.required[x, y] and marks[y, x] != TAIL:
            marks[y, x] = TAIL
            count += 1
    return count


def respect_knowledge(marks: Marks, knowledge: KnowledgeRules, found: NDArray[np.bool_]) -> Marks:
    """A combined PAG-like graph made to respect the knowledge; a new array.

    ``forbidden_adjacent`` pairs lose their edge; a required pair that ``found`` holds
    adjacent (some local graph had the edge) but ``marks`` dropped gets it back, with
    circles before the knowledge's marks; then :func:`orient_pag` sets the marks the
    knowledge implies (and only those) on every edge, as a local FCI does.

    Parameters
    ----------
    marks
        The combined graph's marks (``marks[x, y]``: the mark at ``y``).
    knowledge
        The knowledge resolved against the graph's variables.
    found
        Symmetric boolean: the pairs some local graph holds adjacent.
    """
    out = marks.copy()
    out[knowledge.apart] = NONE
    restore = knowledge.fixed & found & (out == NONE) & (out.T == NONE)
    out[restore] = CIRCLE
    orient_pag(out, knowledge)
    return out


def knowledge_dag(
    adjacency: NDArray[np.bool_], strength: NDArray[np.float64], knowledge: KnowledgeRules
) -> NDArray[np.bool_]:
    """A DAG true to the knowledge from a directed graph (``adjacency[i, j]``: ``i -> j``).

    1. An edge the knowledge denies goes: ``i -> j`` where ``i`` may not be an ancestor
       of ``j`` (tiers, ``forbidden``), either way for a ``forbidden_adjacent`` pair.
    2. Every required ``i -> j`` is put in (replacing ``j -> i``): the knowledge says
       it is an edge of the causal DAG.
    3. Cycles are broken at their least-supported edge
       (:func:`~fedstruct.graphs.projection.project_to_dag`, deleted edges put back
       where they close no cycle); required edges have infinite support, and every
       cycle has another edge (the required edges are acyclic, :meth:`Knowledge.resolve`).
    4. A directed path ``x -> ... -> y`` where ``x`` may not be an ancestor of ``y`` is
       broken the same way, at its least-supported edge that is not required (some
       is: required chains never make such a path, :meth:`Knowledge.resolve`), until
       none is left.

    Only deletions, apart from the required edges: no orientation is invented.

    Parameters
    ----------
    adjacency
        The directed graph (square boolean, no bidirected pair needed).
    strength
        ``strength[i, j]``: the support of ``i -> j`` (ties: the smaller position goes).
    knowledge
        The knowledge resolved against the graph's variables.
    """
    adj = adjacency & ~knowledge.not_ancestor & ~knowledge.apart
    adj = (adj & ~knowledge.required.T) | knowledge.required
    support = np.where(knowledge.required, np.inf, np.asarray(strength, dtype=np.float64))
    graph = Graph.from_dag_matrix(knowledge.names, adj)
    adj = project_to_dag(graph, support).directed().copy()
    while (path := _forbidden_path(adj, knowledge.not_ancestor)) is not None:
        edges = [(a, b) for a, b in pairwise(path) if not knowledge.required[a, b]]
        i, j = min(edges, key=lambda e: (support[e], e))
        adj[i, j] = False
    return adj


def _forbidden_path(adj: NDArray[np.bool_], not_ancestor: NDArray[np.bool_]) -> list[int] | None:
    """One directed path ``x -> ... -> y`` of ``adj`` with ``not_ancestor[x, y]`` (nodes in
    order), or ``None``: the first ``x`` by position, a shortest path."""
    for x in np.flatnonzero(not_ancestor.any(axis=1)).tolist():
        reach = reachable(adj, [x])
        reach[x] = False
        targets = np.flatnonzero(reach & not_ancestor[x])
        if targets.size:
            return _shortest_path(adj, x, int(targets[0]))
    return None


def _shortest_path(adj: NDArray[np.bool_], x: int, y: int) -> list[int]:
    """A shortest directed path from ``x`` to ``y`` (``y`` reachable from ``x``)."""
    before = {x: x}
    frontier = [x]
    while y not in before:
        step = []
        for a in frontier:
            for b in np.flatnonzero(adj[a]).tolist():
                if b not in before:
                    before[b] = a
                    step.append(b)
        frontier = step
    path = [y]
    while path[-1] != x:
        path.append(before[path[-1]])
    return path[::-1]
