"""Undirected graphs: conditional-independence graphs and the moral graph of a DAG.

An undirected graph is a :class:`~fedstruct.graphs.graph.Graph` whose every edge has
a tail at both ends (``A --- B``). It is the structure of a Markov network and of the
dependency graph a neural graphical model is constrained by (FedNGM paper, §2.1:
the graph constraint of an NGM is a symmetric adjacency matrix).

The moral graph of a DAG (Lauritzen 1996, *Graphical Models*, §3.2.1) joins the
parents of every common child ("marrying" them) and drops the directions. A
distribution that is Markov to the DAG is Markov to its moral graph, so the moral
graph is the conditional-independence graph of data sampled from a DAG model: a
variable is independent of all others given its neighbours there (its Markov blanket
in the DAG: parents, children and the children's other parents; Pearl 1988,
*Probabilistic Reasoning in Intelligent Systems*, §3.2.1).

:func:`dependency_graph` turns any graph a run learned (a DAG, CPDAG or PAG) into
the undirected graph a dependency model needs, by one of :data:`DEPENDENCY_RULES`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import ConfigError, GraphError, unknown_choice_message
from fedstruct.graphs.graph import NONE, TAIL, Graph
from fedstruct.graphs.pag import dag_member

__all__ = [
    "DEPENDENCY_RULES",
    "dependency_graph",
    "moral_graph",
    "undirected",
    "undirected_adjacency",
]

#: How :func:`dependency_graph` makes an undirected graph: ``moral`` — the moral
#: graph of one DAG of the class (:func:`~fedstruct.graphs.pag.dag_member`, a
#: bidirected edge oriented, not dropped: the dependence is real), whose neighbours
#: are the Markov blankets; ``skeleton`` — the adjacencies as they are (no spouses).
DEPENDENCY_RULES = ("moral", "skeleton")


def undirected(names: Sequence[str], adjacency: ArrayLike) -> Graph:
    """An undirected graph (every edge ``A --- B``) from a symmetric boolean matrix.

    Parameters
    ----------
    names
        The variable names, in matrix order.
    adjacency
        ``adjacency[i, j]`` is true when ``i`` and ``j`` are joined; booleans or
        ``0``/``1`` values, symmetric, with an all-false diagonal.

    Returns
    -------
    Graph
        Marks ``TAIL`` at both ends of every edge.

    Raises
    ------
    GraphError
        If the matrix is not square of size ``len(names)``, holds values other than
        0/1, is not symmetric (the message names a one-sided pair) or has a self-loop.
    """
    names = tuple(names)
    raw = np.asarray(adjacency)
    n = len(names)
    if raw.ndim != 2 or raw.shape[0] != raw.shape[1]:
        raise GraphError(f"adjacency matrix has shape {raw.shape}; it must be square")
    if raw.shape != (n, n):
        raise GraphError(
            f"adjacency matrix has shape {raw.shape}, expected ({n}, {n}) for {n} names"
        )
    if raw.dtype != np.bool_:
        if raw.dtype.kind not in "biuf" or not np.isin(raw, (0, 1)).all():
            raise GraphError("adjacency matrix must hold booleans or 0/1 values only")
    adj = raw.astype(bool)
    if np.any(np.diagonal(adj)):
        i = int(np.flatnonzero(np.diagonal(adj))[0])
        raise GraphError(f"self-loop on {names[i]!r}; the diagonal of the adjacency must be 0")
    one_sided = adj != adj.T
    if one_sided.any():
        i, j = (int(v) for v in np.argwhere(one_sided)[0])
        raise GraphError(
            f"adjacency matrix is not symmetric: [{names[i]!r}, {names[j]!r}] is "
            f"{bool(adj[i, j])} but [{names[j]!r}, {names[i]!r}] is {bool(adj[j, i])}; "
            "set both or use a directed graph"
        )
    return Graph(names, np.where(adj, TAIL, NONE).astype(np.int8))


def undirected_adjacency(graph: Graph) -> NDArray[np.bool_]:
    """The symmetric adjacency of any graph (an edge with any marks counts).

    :class:`Graph` requires a mark at both ends of every edge, so
    :meth:`Graph.adjacency` is already symmetric; this returns a writable copy of it.
    """
    return graph.adjacency().copy()


def moral_graph(dag: Graph) -> Graph:
    """The moral graph of a DAG (Lauritzen 1996, §3.2.1).

    ``i --- j`` when ``i -> j``, ``j -> i``, or ``i`` and ``j`` have a common child.

    Parameters
    ----------
    dag
        A directed acyclic graph.

    Returns
    -------
    Graph
        The undirected moral graph over the same names, in the same order.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.

    Examples
    --------
    >>> from fedstruct.graphs.graph import Graph
    >>> g = moral_graph(Graph.from_edges(["A", "B", "C"], [("A", "C"), ("B", "C")]))
    >>> [str(e) for e in g.edges()]
    ['A --- B', 'A --- C', 'B --- C']
    """
    dag.require_dag("the graph to moralise")
    d = dag.directed().astype(np.int64)
    married = (d @ d.T) > 0
    adj = (d > 0) | (d.T > 0) | married
    np.fill_diagonal(adj, False)
    return undirected(dag.names, adj)


def dependency_graph(graph: Graph, rule: str = "moral") -> Graph:
    """The undirected dependency graph of a DAG, CPDAG or PAG (:data:`DEPENDENCY_RULES`).

    ``moral``: ``moral_graph(dag_member(graph, "orient"))``. Markov-equivalent DAGs
    share their skeleton and unshielded colliders, hence their moral graph, so for a
    DAG or CPDAG (or a PAG without bidirected edges) this is the moral graph of every
    member; a bidirected edge, oriented along one order, can add spouse edges that
    another orientation would not. ``skeleton``: every adjacency, undirected. A graph
    that is undirected already (every edge ``---``) is its own dependency graph.

    Raises
    ------
    ConfigError
        For an unknown rule.
    GraphError
        If the graph has no MAG (``moral``).
    """
    if rule not in DEPENDENCY_RULES:
        raise ConfigError(unknown_choice_message("graph rule", rule, DEPENDENCY_RULES))
    adjacency = graph.adjacency()
    if rule == "skeleton" or np.all(graph.marks[adjacency] == TAIL):
        return undirected(graph.names, adjacency)
    return moral_graph(dag_member(graph, "orient"))
