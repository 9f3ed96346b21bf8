"""Conversions between :class:`Graph` and networkx, pgmpy and causal-learn.

networkx
    A DAG (every edge ``->``) becomes a plain ``nx.DiGraph``. Any other graph
    becomes an ``nx.DiGraph`` holding *both* ``(u, v)`` and ``(v, u)`` for each
    edge, each with the attribute ``mark`` = the mark at its head (``"tail"``,
    ``"arrow"`` or ``"circle"``), i.e. ``G.edges[u, v]["mark"]`` is
    ``marks[u, v]``. An undirected ``nx.Graph`` is read as undirected
    (tail–tail) edges.
pgmpy (imported lazily)
    ``pgmpy.base.DAG``, ``pgmpy.models.DiscreteBayesianNetwork`` (structure only)
    and ``pgmpy.base.PDAG`` (directed and undirected edges, for CPDAGs).
causal-learn (imported lazily; a test-time dependency)
    ``causallearn.graph.GeneralGraph.GeneralGraph``. Its matrix ``graph[i, j]`` is
    the endpoint *at i* (TAIL -1, ARROW 1, CIRCLE 2, none 0), so ``i -> j`` is
    ``graph[i, j] = -1, graph[j, i] = 1``: the transpose of our convention, where
    ``marks[i, j]`` is the mark at ``j``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from fedstruct.errors import ConfigError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "from_causallearn",
    "from_networkx",
    "from_pgmpy",
    "to_causallearn",
    "to_networkx",
    "to_pgmpy",
]

MARK_NAMES: dict[int, str] = {TAIL: "tail", ARROW: "arrow", CIRCLE: "circle"}
_MARK_CODES = {v: k for k, v in MARK_NAMES.items()}

# causal-learn's Endpoint values (causallearn/graph/Endpoint.py).
_CL_TAIL, _CL_ARROW, _CL_CIRCLE = -1, 1, 2
_TO_CL = {NONE: 0, TAIL: _CL_TAIL, ARROW: _CL_ARROW, CIRCLE: _CL_CIRCLE}
_FROM_CL = {v: k for k, v in _TO_CL.items()}


def _require_directed(graph: Graph, target: str) -> None:
    if not graph.is_directed():
        bad = next(e for e in graph.edges() if (e.mark_a, e.mark_b) != (TAIL, ARROW))
        raise GraphError(f"{target} holds directed edges only; the graph has '{bad}'")


def _ordered_names(found: Sequence[Any], names: Sequence[str] | None, source: str) -> list[str]:
    """Check node names are strings and resolve the output order."""
    for node in found:
        if not isinstance(node, str):
            raise GraphError(
                f"{source} node {node!r} is not a string; relabel the nodes with string names"
            )
    if names is None:
        return list(found)
    names = list(names)
    if set(names) != set(found) or len(names) != len(found):
        unknown = sorted(set(names) - set(found))
        missing = sorted(set(found) - set(names))
        raise UnknownVariableError(
            f"`names` must list every {source} node exactly once: {unknown} are not nodes, "
            f"{missing} are missing"
        )
    return names


# ------------------------------------------------------------------- networkx
def to_networkx(graph: Graph, marks: bool | None = None) -> nx.DiGraph:
    """A networkx ``DiGraph`` of the graph (see the module docstring).

    Parameters
    ----------
    graph
        Any graph.
    marks
        ``False``: a plain ``DiGraph`` (the graph must be directed). ``True``: both
        directions with a ``mark`` attribute. Default: plain iff the graph is directed.

    Raises
    ------
    GraphError
        If ``marks=False`` and the graph has a non-directed edge.
    """
    import networkx as nx

    if marks is None:
        marks = not graph.is_directed()
    out = nx.DiGraph()
    out.add_nodes_from(graph.names)
    names = graph.names
    if not marks:
        _require_directed(graph, "a plain networkx DiGraph")
        rows, cols = np.nonzero(graph.directed())
        out.add_edges_from((names[i], names[j]) for i, j in zip(rows, cols, strict=True))
        return out
    m = graph.marks
    rows, cols = np.nonzero(m)
    out.add_edges_from(
        (names[i], names[j], {"mark": MARK_NAMES[int(m[i, j])]})
        for i, j in zip(rows, cols, strict=True)
    )
    return out


def from_networkx(g: nx.Graph, names: Sequence[str] | None = None) -> Graph:
    """Read a networkx graph written by :func:`to_networkx` (or any simple graph).

    A ``DiGraph`` whose edges carry ``mark`` attributes is read mark by mark; a
    ``DiGraph`` without them is read as ``u -> v`` per edge; an undirected ``Graph``
    as tail–tail edges.

    Parameters
    ----------
    g
        The networkx graph; node names must be strings.
    names
        Output order (default: the node order of ``g``).

    Raises
    ------
    GraphError
        For multigraphs, non-string nodes, unknown or one-sided marks, a mix of
        marked and unmarked edges, or both ``u -> v`` and ``v -> u`` unmarked.
    UnknownVariableError
        If ``names`` is not the node set of ``g``.
    """
    if g.is_multigraph():
        raise GraphError("multigraphs cannot be read; keep at most one edge per pair")
    order = _ordered_names(list(g.nodes()), names, "networkx")
    index = {n: i for i, n in enumerate(order)}
    n = len(order)
    m = np.zeros((n, n), dtype=np.int8)
    edges = list(g.edges(data=True))
    if not g.is_directed():
        for u, v, _ in edges:
            if u == v:
                raise GraphError(f"networkx graph has a self-loop on {u!r}; remove it")
            m[index[u], index[v]] = m[index[v], index[u]] = TAIL
        return Graph(order, m)
    marked = [("mark" in d) for _, _, d in edges]
    if any(marked) and not all(marked):
        u, v, _ = edges[marked.index(False)]
        raise GraphError(
            f"networkx edge {u!r}->{v!r} has no 'mark' attribute while others do; "
            "give every edge a mark or none"
        )
    use_marks = bool(edges) and all(marked)
    for u, v, data in edges:
        i, j = index[u], index[v]
        if use_marks:
            code = _MARK_CODES.get(data["mark"])
            if code is None:
                raise GraphError(
                    f"networkx edge {u!r}->{v!r} has mark {data['mark']!r}; "
                    "use 'tail', 'arrow' or 'circle'"
                )
            m[i, j] = code
        else:
            if g.has_edge(v, u):
                raise GraphError(
                    f"networkx graph has both {u!r}->{v!r} and {v!r}->{u!r}; a directed graph "
                    "has one direction per pair (use 'mark' attributes for other edges)"
                )
            m[i, j], m[j, i] = ARROW, TAIL
    return Graph(order, m)


# ---------------------------------------------------------------------- pgmpy
def to_pgmpy(graph: Graph, kind: Literal["dag", "bayesian_network", "pdag"] = "dag") -> Any:
    """The graph as a pgmpy structure.

    Parameters
    ----------
    graph
        A DAG for ``"dag"`` and ``"bayesian_network"``; a graph with only ``->`` and
        undirected ``---`` edges (a CPDAG) for ``"pdag"``.
    kind
        ``"dag"`` (``pgmpy.base.DAG``), ``"bayesian_network"``
        (``pgmpy.models.DiscreteBayesianNetwork``, without CPDs) or ``"pdag"``
        (``pgmpy.base.PDAG``).

    Raises
    ------
    ConfigError
        If ``kind`` is unknown.
    GraphError, CyclicGraphError
        If the graph does not fit the requested kind.
    """
    if kind not in ("dag", "bayesian_network", "pdag"):
        raise ConfigError(
            f"unknown pgmpy kind {kind!r}; valid pgmpy kinds: bayesian_network, dag, pdag"
        )
    names = graph.names
    if kind == "pdag":
        from pgmpy.base import PDAG

        undirected = (graph.marks == TAIL) & (graph.marks.T == TAIL)
        other = graph.adjacency() & ~undirected & ~(graph.directed() | graph.directed().T)
        if other.any():
            i, j = (int(v) for v in np.argwhere(other)[0])
            raise GraphError(
                f"a pgmpy PDAG holds '-->' and '---' edges only; the graph has "
                f"'{graph.edge(names[i], names[j])}'"
            )
        directed = [(names[i], names[j]) for i, j in np.argwhere(graph.directed())]
        und = [(names[i], names[j]) for i, j in np.argwhere(np.triu(undirected, 1))]
        pdag = PDAG()
        pdag.add_nodes_from(names)
        pdag.add_edges_from(directed + und + [(b, a) for a, b in und])
        pdag.directed_edges = set(directed)
        pdag.undirected_edges = set(und)
        return pdag
    graph.require_dag("graph converted to pgmpy")
    if kind == "dag":
        from pgmpy.base import DAG as model_class
    else:
        from pgmpy.models import DiscreteBayesianNetwork as model_class
    model = model_class()
    model.add_nodes_from(names)
    model.add_edges_from((names[i], names[j]) for i, j in np.argwhere(graph.directed()))
    return model


def from_pgmpy(model: Any, names: Sequence[str] | None = None) -> Graph:
    """Read a pgmpy ``DAG``, Bayesian network or ``PDAG``.

    Every node becomes a variable, including nodes pgmpy marks as latent.

    Parameters
    ----------
    model
        A pgmpy structure (any ``networkx.DiGraph`` subclass; a ``PDAG`` is read
        through its ``directed_edges`` and ``undirected_edges``).
    names
        Output order (default: the model's node order).

    Raises
    ------
    GraphError
        If the structure has both ``u -> v`` and ``v -> u`` outside a PDAG's
        undirected edges, or non-string node names.
    UnknownVariableError
        If ``names`` is not the model's node set.
    """
    order = _ordered_names(list(model.nodes()), names, "pgmpy")
    undirected = getattr(model, "undirected_edges", None)
    directed = getattr(model, "directed_edges", None)
    if undirected is None or directed is None:
        return from_networkx(model, order)
    index = {n: i for i, n in enumerate(order)}
    n = len(order)
    m = np.zeros((n, n), dtype=np.int8)
    for u, v in undirected:
        m[index[u], index[v]] = m[index[v], index[u]] = TAIL
    for u, v in directed:
        i, j = index[u], index[v]
        if m[i, j] or m[j, i]:
            raise GraphError(f"pgmpy PDAG gives the pair {u!r}-{v!r} twice; keep one edge")
        m[i, j], m[j, i] = ARROW, TAIL
    return Graph(order, m)


# --------------------------------------------------------------- causal-learn
def to_causallearn(graph: Graph) -> Any:
    """A ``causallearn.graph.GeneralGraph.GeneralGraph`` with the same marks.

    Nodes are ``GraphNode(name)`` in ``graph.names`` order; ``result.graph`` is
    ``-1 / 1 / 2`` at the *first* index's end (see the module docstring).
    """
    from causallearn.graph.Edge import Edge as ClEdge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GeneralGraph import GeneralGraph
    from causallearn.graph.GraphNode import GraphNode

    endpoint = {TAIL: Endpoint.TAIL, ARROW: Endpoint.ARROW, CIRCLE: Endpoint.CIRCLE}
    # GeneralGraph.add_edge accepts node1 *-# node2 with (end1, end2) in this set;
    # any other pair is added the other way round.
    accepted = {
        (TAIL, TAIL), (TAIL, ARROW), (TAIL, CIRCLE),
        (ARROW, ARROW), (CIRCLE, ARROW), (CIRCLE, CIRCLE),
    }  # fmt: skip
    nodes = [GraphNode(name) for name in graph.names]
    out = GeneralGraph(nodes)
    m = graph.marks
    for i, j in zip(*np.nonzero(np.triu(m, 1)), strict=True):
        at_i, at_j = int(m[j, i]), int(m[i, j])
        if (at_i, at_j) in accepted:
            out.add_edge(ClEdge(nodes[i], nodes[j], endpoint[at_i], endpoint[at_j]))
        else:
            out.add_edge(ClEdge(nodes[j], nodes[i], endpoint[at_j], endpoint[at_i]))
    expected = np.vectorize(_TO_CL.__getitem__, otypes=[int])(m.T)
    if not np.array_equal(out.graph, expected):  # pragma: no cover - causal-learn changed
        raise GraphError("causal-learn did not store the edges as given; check its version")
    return out


def from_causallearn(g: Any, names: Sequence[str] | None = None) -> Graph:
    """Read a causal-learn ``GeneralGraph`` (or its raw endpoint matrix).

    Parameters
    ----------
    g
        A ``GeneralGraph`` (e.g. ``cg.G`` from PC, or the graph FCI returns), or a
        square integer matrix in causal-learn's convention (``g[i, j]`` = endpoint
        at ``i``).
    names
        Variable names: required for a matrix (in its order); for a
        ``GeneralGraph``, an optional output order (default its node order).

    Raises
    ------
    GraphError
        If an endpoint is not tail / arrow / circle (e.g. causal-learn's combined
        ``TAIL_AND_ARROW`` values), or the matrix does not match the names.
    UnknownVariableError
        If ``names`` is not the graph's node set.
    """
    if isinstance(g, np.ndarray) or not hasattr(g, "get_node_names"):
        if names is None:
            raise GraphError("a causal-learn endpoint matrix needs `names`, one per row")
        order = list(names)
        matrix: ArrayLike = np.asarray(g)
        if np.shape(matrix) != (len(order), len(order)):
            raise GraphError(
                f"causal-learn matrix has shape {np.shape(matrix)} for {len(order)} names"
            )
        cl = np.asarray(matrix)
    else:
        found = list(g.get_node_names())
        order = _ordered_names(found, names, "causal-learn")
        pos = [found.index(n) for n in order]
        cl = np.asarray(g.graph)[np.ix_(pos, pos)]
    bad = ~np.isin(cl, list(_FROM_CL))
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise GraphError(
            f"causal-learn endpoint {int(cl[i, j])} at {order[i]!r} on the pair "
            f"{order[i]!r}-{order[j]!r} is not tail (-1), arrow (1) or circle (2)"
        )
    at_first = np.vectorize(_FROM_CL.__getitem__, otypes=[np.int8])(cl.astype(int))
    return Graph(order, at_first.T)
