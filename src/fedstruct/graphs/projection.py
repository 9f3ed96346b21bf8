"""Project a directed graph with cycles onto a DAG by deleting least-supported edges.

F-CMs paper, Section 4.2.1: the candidate graph of the three-way strength vote "is
finally projected to a DAG by iteratively resolving cycles". The reference code
deletes whichever back-edge its depth-first search meets; here each cycle is broken
at its *least-supported* edge (docs/graphs.md, "DAG projection").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import GraphError
from fedstruct.graphs.graph import Graph, find_cycle, reachable

__all__ = ["Projection", "break_cycles", "project_to_dag"]


@dataclass(frozen=True)
class Projection:
    """Result of :func:`break_cycles`.

    Attributes
    ----------
    dag
        The acyclic graph.
    removed
        The deleted edges as ``(source, target, strength)``, in deletion order.
    """

    dag: Graph
    removed: tuple[tuple[str, str, float], ...]


def _check_strength(graph: Graph, strength: ArrayLike) -> NDArray[np.float64]:
    s = np.asarray(strength, dtype=np.float64)
    n = graph.n_nodes
    if s.shape != (n, n):
        raise GraphError(
            f"strength matrix has shape {s.shape}, expected ({n}, {n}) for the graph's variables"
        )
    directed = graph.directed()
    if np.isnan(s[directed]).any():
        i, j = (int(v) for v in np.argwhere(directed & np.isnan(s))[0])
        raise GraphError(
            f"strength of edge {graph.names[i]}->{graph.names[j]} is NaN; give every edge a number"
        )
    return s


def break_cycles(graph: Graph, strength: ArrayLike, restore: bool = True) -> Projection:
    """Break every directed cycle at its least-supported edge.

    Repeatedly find a directed cycle (:func:`fedstruct.graphs.graph.find_cycle`,
    deterministic) and delete its edge of minimum ``strength``; among edges of equal
    minimum strength the one with the smallest ``(source, target)`` position in
    ``graph.names`` is deleted. Stop when the graph is acyclic.

    With ``restore=True`` (default) the deleted edges are then tried again, strongest
    first (ties by position as above), and put back when they close no cycle: a greedy
    clean-up that keeps edges whose cycles were already broken elsewhere. The
    result is still acyclic, and an edge stays deleted only if putting it back
    would close a directed cycle.

    Parameters
    ----------
    graph
        A directed graph (every edge ``->``), possibly cyclic.
    strength
        ``strength[i, j]``: support of the edge ``i -> j`` (e.g.
        :attr:`fedstruct.graphs.combine.StrengthVote.strength`). Entries off the
        edges are ignored.
    restore
        Whether to put back deleted edges that no longer close a cycle.

    Returns
    -------
    Projection
        The DAG and the edges finally deleted.

    Raises
    ------
    GraphError
        If the graph has a non-directed edge or ``strength`` has the wrong shape.
    """
    graph.require_directed("the graph given to DAG projection")
    s = _check_strength(graph, strength)
    adj = graph.directed().copy()
    removed: list[tuple[int, int]] = []
    cycle = find_cycle(adj)
    while cycle is not None:
        edges = [(cycle[k], cycle[(k + 1) % len(cycle)]) for k in range(len(cycle))]
        i, j = min(edges, key=lambda e: (s[e], e))
        adj[i, j] = False
        removed.append((i, j))
        cycle = find_cycle(adj)

    if restore and removed:
        kept: list[tuple[int, int]] = []
        for i, j in sorted(removed, key=lambda e: (-s[e], e)):
            # i -> j closes a cycle iff j already reaches i.
            if not reachable(adj, [j])[i]:
                adj[i, j] = True
                kept.append((i, j))
        restored = set(kept)
        removed = [e for e in removed if e not in restored]
    names = graph.names
    dag = Graph.from_dag_matrix(names, adj)
    return Projection(dag, tuple((names[i], names[j], float(s[i, j])) for i, j in removed))


def project_to_dag(graph: Graph, strength: ArrayLike, restore: bool = True) -> Graph:
    """The DAG of :func:`break_cycles` (see there for the rule and tie-break)."""
    return break_cycles(graph, strength, restore).dag
