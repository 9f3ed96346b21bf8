"""d-separation in DAGs and m-separation in ancestral graphs, by one reachability search.

A path between ``x`` and ``y`` in a mixed graph with edges ``->`` and ``<->`` is
*m-connecting* given ``Z`` iff every collider on it (a node with arrowheads on both
sides) is in ``An(Z)`` and every non-collider is not in ``Z``; ``x`` and ``y`` are
*m-separated* by ``Z`` iff no such path exists (Richardson & Spirtes 2002, "Ancestral
graph Markov models", Ann. Statist. 30(4), Section 3.4). In a DAG this is
d-separation (Pearl 1988).

The search walks states ``(node, arrived with an arrowhead at node?)`` in the manner
of the "reachable" / Bayes-ball algorithm (Koller & Friedman 2009, Algorithm 3.1;
Shachter 1998): from a node entered through an arrowhead, a further edge with an
arrowhead at that node makes it a collider (allowed iff the node is in ``An(Z)``),
any other continuation makes it a non-collider (allowed iff the node is not in
``Z``). A connecting *walk* of this kind exists iff a connecting *path* exists
(a collider in ``An(Z) \\ Z`` can be detoured down its directed path into ``Z``), so
the search is exact. Node sets are Python integers used as bit sets, which keeps one
query at a few tens of microseconds on graphs of ~100 nodes.

Selection bias (undirected edges) and PAG circle marks are not supported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import GraphError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, TAIL, Graph

__all__ = [
    "SeparationOracle",
    "ancestor_matrix",
    "d_separated",
    "m_separated",
]


def ancestor_matrix(graph: Graph) -> NDArray[np.bool_]:
    """Reflexive ancestor relation along directed (``->``) edges.

    Parameters
    ----------
    graph
        Any graph; only its ``->`` edges are followed.

    Returns
    -------
    numpy.ndarray
        Boolean ``(n, n)`` matrix, ``[i, j]`` is ``True`` iff ``i`` is an ancestor of
        ``j`` (every node is its own ancestor). Computed as the transitive closure
        (Warshall 1962), one vectorised update per node.
    """
    reach = graph.directed().copy()
    np.fill_diagonal(reach, True)
    for k in range(reach.shape[0]):
        reach |= np.outer(reach[:, k], reach[k, :])
    return reach


def _masks(matrix: NDArray[np.bool_]) -> list[int]:
    """Row ``i`` of a boolean matrix as the bit set ``sum(2**j for True [i, j])``."""
    if matrix.shape[1] == 0:
        return [0] * matrix.shape[0]
    packed = np.packbits(matrix, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def _require_mixed(graph: Graph, what: str) -> None:
    """Raise unless every edge of ``graph`` is ``->`` or ``<->``."""
    m = graph.marks
    bad = (m == CIRCLE) | ((m == TAIL) & (m.T == TAIL))
    if bad.any():
        i, j = sorted(int(v) for v in np.argwhere(bad)[0])
        edge = graph.edge(graph.names[i], graph.names[j])
        raise GraphError(
            f"{what} has the edge '{edge}'; m-separation needs a DAG or MAG whose edges are "
            "all '-->' or '<->' (convert circle/undirected edges first)"
        )


class SeparationOracle:
    """Fast index-level m-separation (d-separation for DAGs) queries on one graph.

    Neighbour sets and ancestor sets are precomputed once as bit sets; each
    :meth:`separated` call is then one reachability search (module docstring).

    Parameters
    ----------
    graph
        A DAG or a mixed graph with ``->`` and ``<->`` edges only (e.g. a MAG).
    observed
        Optional names of the variables the indices refer to. With ``observed``,
        index ``k`` means ``observed[k]``, and queries are answered by separation in
        the *whole* graph, i.e. the other variables are latent: for a DAG with
        latent variables this is the perfect conditional-independence oracle over
        the observed ones. Without it, indices are positions in ``graph.names``.

    Raises
    ------
    GraphError
        If the graph has a circle or undirected edge, or ``observed`` repeats a name.
    UnknownVariableError
        If ``observed`` names a variable not in the graph.

    Examples
    --------
    >>> g = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("C", "B")])
    >>> oracle = SeparationOracle(g)
    >>> oracle.separated(0, 2), oracle.separated(0, 2, [1])
    (True, False)
    """

    __slots__ = ("_anc", "_children", "_parents", "_position", "_spouses", "n_queries", "names")

    def __init__(self, graph: Graph, observed: Sequence[str] | None = None) -> None:
        _require_mixed(graph, "graph given to SeparationOracle")
        m = graph.marks
        head = m == ARROW
        tail = m == TAIL
        self._children = _masks(head & tail.T)  # [v]: w with v -> w
        self._parents = _masks(tail & head.T)  # [v]: w with w -> v
        self._spouses = _masks(head & head.T)  # [v]: w with v <-> w
        self._anc = _masks(ancestor_matrix(graph).T)  # [v]: ancestors of v, v included
        if observed is None:
            self.names: tuple[str, ...] = graph.names
            self._position: list[int] = list(range(graph.n_nodes))
        else:
            self.names = tuple(observed)
            if len(set(self.names)) != len(self.names):
                dupes = sorted({n for n in self.names if self.names.count(n) > 1})
                raise GraphError(f"observed variables {dupes} are listed twice; list each once")
            self._position = graph.indices(self.names)
        self.n_queries = 0  # queries answered so far

    @property
    def n_variables(self) -> int:
        """How many variables the indices range over."""
        return len(self.names)

    def _bit(self, k: int) -> int:
        if not 0 <= k < len(self._position):
            raise UnknownVariableError(
                f"variable index {k} is out of range; this oracle has {len(self._position)} "
                "variables (indices 0..n-1)"
            )
        return 1 << self._position[k]

    def separated(self, i: int, j: int, z: Iterable[int] = ()) -> bool:
        """Whether variables ``i`` and ``j`` are m-separated (d-separated) given ``z``.

        Parameters
        ----------
        i, j
            Distinct variable indices.
        z
            Indices of the conditioning set; must not contain ``i`` or ``j``.

        Raises
        ------
        UnknownVariableError
            If an index is out of range.
        GraphError
            If ``i == j`` or ``z`` contains ``i`` or ``j``.
        """
        self.n_queries += 1
        xs, ys = self._bit(i), self._bit(j)
        zs = 0
        for k in z:
            zs |= self._bit(int(k))
        if xs == ys or (xs | ys) & zs:
            raise GraphError(
                f"separation query between {self.names[i]!r} and {self.names[j]!r} is "
                "malformed; the two variables must differ and not be in the conditioning set"
            )
        return not self._connected(xs, ys, zs)

    def separated_sets(self, x: Iterable[int], y: Iterable[int], z: Iterable[int] = ()) -> bool:
        """Set version of :meth:`separated`: no member of ``x`` m-connected to one of ``y``.

        Raises
        ------
        UnknownVariableError
            If an index is out of range.
        GraphError
            If ``x`` or ``y`` is empty or the three sets are not disjoint.
        """
        masks = []
        for part in (x, y, z):
            mask = 0
            for k in part:
                bit = self._bit(int(k))
                if bit & mask or any(bit & other for other in masks):
                    raise GraphError(
                        f"variable {self.names[int(k)]!r} appears twice in a separation query; "
                        "x, y and the conditioning set must be disjoint"
                    )
                mask |= bit
            masks.append(mask)
        if not masks[0] or not masks[1]:
            raise GraphError("a separation query needs at least one variable on each side")
        self.n_queries += 1
        return not self._connected(*masks)

    def _connected(self, xs: int, ys: int, zs: int) -> bool:
        """Whether some node of bit set ``xs`` is m-connected to one of ``ys`` given ``zs``."""
        an = 0
        rest = zs
        while rest:
            low = rest & -rest
            an |= self._anc[low.bit_length() - 1]
            rest ^= low
        ch, pa, sp = self._children, self._parents, self._spouses
        open_ = ~zs  # nodes allowed as non-colliders
        seen_in, seen_out = 0, xs  # reached through an arrowhead / through a tail (or start)
        todo_in, todo_out = 0, xs
        while todo_in or todo_out:
            new_in = new_out = 0
            rest = todo_out & open_  # entered by a tail: every continuation is a non-collider
            while rest:
                low = rest & -rest
                v = low.bit_length() - 1
                new_in |= ch[v] | sp[v]
                new_out |= pa[v]
                rest ^= low
            rest = todo_in & open_  # entered by an arrowhead, leave by a tail: non-collider
            while rest:
                low = rest & -rest
                new_in |= ch[low.bit_length() - 1]
                rest ^= low
            rest = todo_in & an  # entered by an arrowhead, leave by an arrowhead: collider
            while rest:
                low = rest & -rest
                v = low.bit_length() - 1
                new_in |= sp[v]
                new_out |= pa[v]
                rest ^= low
            if (new_in | new_out) & ys:
                return True
            todo_in = new_in & ~seen_in
            todo_out = new_out & ~seen_out
            seen_in |= todo_in
            seen_out |= todo_out
        return False


def _name_set(graph: Graph, names: str | Iterable[str], role: str) -> list[int]:
    items = [names] if isinstance(names, str) else list(names)
    for name in items:
        if name not in graph:
            raise UnknownVariableError(
                f"{role} variable {name!r} is not in the graph; its variables are "
                f"{list(graph.names)}"
            )
    return sorted(set(graph.indices(items)))


def m_separated(
    graph: Graph,
    x: str | Iterable[str],
    y: str | Iterable[str],
    given: str | Iterable[str] = (),
) -> bool:
    """Whether ``x`` and ``y`` are m-separated by ``given`` in a DAG or ancestral graph.

    Richardson & Spirtes (2002), Section 3.4: no path between a node of ``x`` and a
    node of ``y`` has every collider in ``An(given)`` and every non-collider outside
    ``given``. For a DAG this is d-separation.

    Parameters
    ----------
    graph
        A graph with ``->`` and ``<->`` edges only.
    x, y, given
        A variable name or an iterable of names each; the three sets must be disjoint
        and ``x``, ``y`` non-empty.

    Raises
    ------
    UnknownVariableError
        If a name is not in the graph.
    GraphError
        If the graph has circle or undirected edges, ``x`` or ``y`` is empty, or the
        sets overlap.
    """
    _require_mixed(graph, "graph given to m_separated")
    xs = _name_set(graph, x, "x")
    ys = _name_set(graph, y, "y")
    zs = _name_set(graph, given, "conditioning")
    for a, b, what in ((xs, ys, "x and y"), (xs, zs, "x and given"), (ys, zs, "y and given")):
        common = sorted(set(a) & set(b))
        if common:
            raise GraphError(
                f"{what} share the variable {graph.names[common[0]]!r}; a separation query "
                "needs disjoint sets"
            )
    if not xs or not ys:
        raise GraphError("a separation query needs at least one variable in x and in y")
    return SeparationOracle(graph).separated_sets(xs, ys, zs)


def d_separated(
    graph: Graph,
    x: str | Iterable[str],
    y: str | Iterable[str],
    given: str | Iterable[str] = (),
) -> bool:
    """Whether ``x`` and ``y`` are d-separated by ``given`` in a DAG (Pearl 1988).

    The same search as :func:`m_separated`, after checking that ``graph`` is a DAG.

    Raises
    ------
    GraphError
        If ``graph`` has a non-directed edge, or the query is malformed.
    CyclicGraphError
        If ``graph`` has a directed cycle.
    UnknownVariableError
        If a name is not in the graph.
    """
    graph.require_dag("graph given to d_separated")
    return m_separated(graph, x, y, given)
