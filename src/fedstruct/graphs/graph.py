"""One graph type for DAGs, CPDAGs and PAGs.

A :class:`Graph` is an ordered tuple of variable names and an ``int8`` matrix of
endpoint marks. ``marks[i, j]`` is the mark *at j's end* of the edge between
``i`` and ``j`` (the convention of pcalg's ``amat.pag``):

============  =====  ==============================
mark          value  meaning at that end
============  =====  ==============================
``NONE``      0      no edge between i and j
``TAIL``      1      ``-``
``ARROW``     2      ``>`` (arrowhead)
``CIRCLE``    3      ``o`` (undetermined, PAGs)
============  =====  ==============================

So ``i -> j`` is ``marks[i, j] == ARROW`` and ``marks[j, i] == TAIL``;
``i <-> j`` has arrowheads at both ends; ``i o-> j`` has ``marks[j, i] == CIRCLE``;
an undirected CPDAG edge ``i --- j`` has tails at both ends.

Edges are written as ``"A o-> B"``: the left character is the mark at ``A``
(``-``, ``<`` or ``o``), the right one the mark at ``B`` (``-``, ``>`` or ``o``).

Graphs are immutable: the mark matrix is a read-only copy. Algorithms that edit
marks work on ``graph.marks.copy()`` and wrap the result in a new ``Graph``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import CyclicGraphError, GraphError, UnknownVariableError

__all__ = [
    "ARROW",
    "CIRCLE",
    "NONE",
    "TAIL",
    "Edge",
    "Graph",
    "variable_position",
]

NONE: int = 0
TAIL: int = 1
ARROW: int = 2
CIRCLE: int = 3

_LEFT = {TAIL: "-", ARROW: "<", CIRCLE: "o"}
_RIGHT = {TAIL: "-", ARROW: ">", CIRCLE: "o"}
_PARSE_LEFT = {v: k for k, v in _LEFT.items()}
_PARSE_RIGHT = {v: k for k, v in _RIGHT.items()}


def variable_position(index: Mapping[str, int], name: str, where: str) -> int:
    """``index[name]``: a variable's position among the variables of ``where``.

    Raises
    ------
    UnknownVariableError
        If there is no variable ``name``; the message lists the variables of ``where``.
    """
    try:
        return index[name]
    except KeyError:
        raise UnknownVariableError(
            f"variable {name!r} is not in {where}; its variables are {list(index)}"
        ) from None


class Edge(NamedTuple):
    """An edge ``a <mark_a>-<mark_b> b`` with the marks at each end."""

    a: str
    b: str
    mark_a: int
    mark_b: int

    def __str__(self) -> str:
        return f"{self.a} {_LEFT[self.mark_a]}-{_RIGHT[self.mark_b]} {self.b}"


def parse_edge(text: str) -> Edge:
    """Parse an edge written as ``"A o-> B"`` (marks ``-``, ``<``/``>``, ``o``).

    Raises
    ------
    GraphError
        If the text is not ``name`` + a three-character edge token + ``name``.
    """
    parts = text.split()
    if len(parts) != 3 or len(parts[1]) != 3 or parts[1][1] != "-":
        raise GraphError(
            f"cannot parse edge {text!r}; write it as 'A --> B', 'A o-> B', 'A <-> B' or 'A o-o B'"
        )
    a, token, b = parts
    try:
        return Edge(a, b, _PARSE_LEFT[token[0]], _PARSE_RIGHT[token[2]])
    except KeyError:
        raise GraphError(
            f"unknown endpoint mark in edge {text!r}; "
            "the left end is one of '-<o', the right end one of '->o'"
        ) from None


class Graph:
    """A DAG, CPDAG or PAG over ordered, named variables.

    Parameters
    ----------
    names
        Unique variable names, in matrix order.
    marks
        Square matrix of endpoint marks, ``marks[i, j]`` being the mark at ``j``
        on the edge between ``i`` and ``j`` (see the module docstring). Copied and
        stored as a read-only ``int8`` array.

    Raises
    ------
    GraphError
        If names repeat, the matrix is not square with the right size, a value is
        not a mark, the diagonal is non-zero, or an edge has a mark at one end only.

    Examples
    --------
    >>> g = Graph.from_edges(["A", "B", "C"], [("A", "B"), "B o-> C"])
    >>> str(g.edge("B", "C"))
    'B o-> C'
    """

    __slots__ = ("_index", "_marks", "_names")

    def __init__(self, names: Sequence[str], marks: ArrayLike) -> None:
        names = tuple(names)
        for name in names:
            if not isinstance(name, str) or not name:
                raise GraphError(f"variable names must be non-empty strings, got {name!r}")
        index = {name: i for i, name in enumerate(names)}
        if len(index) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise GraphError(f"duplicate variable names {dupes}; give every variable a unique name")
        m = np.array(marks, dtype=np.int8, copy=True)
        n = len(names)
        if m.shape != (n, n):
            raise GraphError(f"mark matrix has shape {m.shape}, expected ({n}, {n}) for {n} names")
        if m.size and (m.min() < NONE or m.max() > CIRCLE):
            raise GraphError("mark values must be 0 (none), 1 (tail), 2 (arrow) or 3 (circle)")
        if np.any(np.diagonal(m)):
            i = int(np.flatnonzero(np.diagonal(m))[0])
            raise GraphError(
                f"self-loop on {names[i]!r}; the diagonal of the mark matrix must be 0"
            )
        half = (m != NONE) != (m.T != NONE)
        if half.any():
            i, j = (int(v) for v in np.argwhere(half)[0])
            raise GraphError(
                f"edge {names[i]!r}-{names[j]!r} has a mark at one end only; "
                "set marks[i, j] and marks[j, i] together"
            )
        m.setflags(write=False)
        self._names = names
        self._index = index
        self._marks = m

    # ----------------------------------------------------------------- builders
    @classmethod
    def empty(cls, names: Sequence[str]) -> Graph:
        """A graph with no edges over ``names``."""
        return cls(names, np.zeros((len(names), len(names)), dtype=np.int8))

    @classmethod
    def from_edges(
        cls, names: Sequence[str], edges: Iterable[tuple[str, str] | str | Edge]
    ) -> Graph:
        """Build a graph from edges.

        Parameters
        ----------
        names
            The variables, in order.
        edges
            Each edge is a pair ``(a, b)`` meaning ``a -> b``, a string such as
            ``"a o-> b"`` or ``"a <-> b"``, or an :class:`Edge`.

        Raises
        ------
        UnknownVariableError
            If an edge names a variable not in ``names``.
        GraphError
            If an edge is malformed or the same pair is given twice with other marks.
        """
        names = tuple(names)
        index = {n: i for i, n in enumerate(names)}
        m = np.zeros((len(names), len(names)), dtype=np.int8)
        for e in edges:
            if isinstance(e, str):
                edge = parse_edge(e)
            elif isinstance(e, Edge):
                edge = e
            else:
                a, b = e
                edge = Edge(a, b, TAIL, ARROW)
            for v in (edge.a, edge.b):
                if v not in index:
                    raise UnknownVariableError(
                        f"edge {edge} names {v!r}, which is not among the graph's variables"
                    )
            i, j = index[edge.a], index[edge.b]
            if i == j:
                raise GraphError(f"edge {edge} is a self-loop; remove it")
            if m[i, j] and (m[i, j], m[j, i]) != (edge.mark_b, edge.mark_a):
                raise GraphError(f"pair {edge.a!r}-{edge.b!r} is given twice with different marks")
            m[i, j], m[j, i] = edge.mark_b, edge.mark_a
        return cls(names, m)

    @classmethod
    def from_dag_matrix(cls, names: Sequence[str], matrix: ArrayLike) -> Graph:
        """Build a directed graph from a 0/1 matrix where ``matrix[i, j]`` means ``i -> j``.

        Raises
        ------
        GraphError
            If both ``i -> j`` and ``j -> i`` are set.
        """
        a = np.asarray(matrix).astype(bool)
        if a.shape != (len(names), len(names)):
            raise GraphError(f"matrix has shape {a.shape}, expected {(len(names), len(names))}")
        both = a & a.T
        if both.any():
            i, j = (int(v) for v in np.argwhere(both)[0])
            raise GraphError(
                f"matrix sets both {names[i]}->{names[j]} and {names[j]}->{names[i]}; "
                "a directed graph has at most one direction per pair"
            )
        m = np.where(a, ARROW, np.where(a.T, TAIL, NONE)).astype(np.int8)
        return cls(names, m)

    # --------------------------------------------------------------- accessors
    @property
    def names(self) -> tuple[str, ...]:
        """The variable names, in matrix order."""
        return self._names

    @property
    def marks(self) -> NDArray[np.int8]:
        """The read-only mark matrix (``marks[i, j]`` = mark at ``j``)."""
        return self._marks

    @property
    def n_nodes(self) -> int:
        """Number of variables."""
        return len(self._names)

    @property
    def n_edges(self) -> int:
        """Number of adjacent pairs."""
        return int(np.count_nonzero(self._marks)) // 2

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def index(self, name: str) -> int:
        """Position of ``name`` in the matrix.

        Raises
        ------
        UnknownVariableError
            If the graph has no variable of that name.
        """
        return variable_position(self._index, name, "this graph")

    def indices(self, names: Iterable[str]) -> list[int]:
        """Positions of several names (see :meth:`index`)."""
        return [self.index(n) for n in names]

    # ------------------------------------------------------------ edge views
    def adjacency(self) -> NDArray[np.bool_]:
        """Symmetric boolean skeleton: ``True`` where ``i`` and ``j`` are adjacent."""
        return self._marks != NONE

    def directed(self) -> NDArray[np.bool_]:
        """Boolean matrix of directed edges: ``[i, j]`` is ``True`` iff ``i -> j``."""
        m = self._marks
        return (m == ARROW) & (m.T == TAIL)

    def bidirected(self) -> NDArray[np.bool_]:
        """Symmetric boolean matrix of ``i <-> j`` edges."""
        m = self._marks
        return (m == ARROW) & (m.T == ARROW)

    def edges(self) -> list[Edge]:
        """All edges, each pair once (``i < j`` in matrix order, arrows shown as given)."""
        rows, cols = np.nonzero(np.triu(self._marks != NONE, 1))
        out = []
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            a, b = self._names[i], self._names[j]
            mi, mj = int(self._marks[j, i]), int(self._marks[i, j])
            # Write directed edges forwards: 'B --> A' rather than 'A <-- B'.
            if mi == ARROW and mj == TAIL:
                out.append(Edge(b, a, mj, mi))
            else:
                out.append(Edge(a, b, mi, mj))
        return out

    def edge(self, a: str, b: str) -> Edge | None:
        """The edge between ``a`` and ``b`` (marks as seen from ``a`` to ``b``), or ``None``."""
        i, j = self.index(a), self.index(b)
        if self._marks[i, j] == NONE:
            return None
        return Edge(a, b, int(self._marks[j, i]), int(self._marks[i, j]))

    def is_adjacent(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` share an edge."""
        return bool(self._marks[self.index(a), self.index(b)] != NONE)

    # ---------------------------------------------------------- classification
    def is_directed(self) -> bool:
        """Whether every edge is ``->`` (a directed graph, possibly cyclic)."""
        return bool(np.array_equal(self.directed() | self.directed().T, self.adjacency()))

    def is_acyclic(self) -> bool:
        """Whether the directed edges (``->`` only) form no cycle."""
        return _topological_order(self.directed()) is not None

    def is_dag(self) -> bool:
        """Whether every edge is directed and there is no directed cycle."""
        return self.is_directed() and self.is_acyclic()

    def require_directed(self, what: str = "graph") -> Graph:
        """Return ``self`` if every edge is ``->``, else raise naming an offending edge.

        Raises
        ------
        GraphError
            If some edge is not ``->``.
        """
        bad = self._non_directed_edge()
        if bad is not None:
            raise GraphError(f"{what} must be directed but has the non-directed edge '{bad}'")
        return self

    def _non_directed_edge(self) -> Edge | None:
        return next((e for e in self.edges() if (e.mark_a, e.mark_b) != (TAIL, ARROW)), None)

    def require_dag(self, what: str = "graph") -> Graph:
        """Return ``self`` if it is a DAG, else raise a clear error.

        Parameters
        ----------
        what
            How to name this graph in the message, e.g. ``"client 3's graph"``.

        Raises
        ------
        GraphError
            If some edge is not ``->``.
        CyclicGraphError
            If the directed edges contain a cycle (the message shows one).
        """
        bad = self._non_directed_edge()
        if bad is not None:
            raise GraphError(f"{what} must be a DAG but has the non-directed edge '{bad}'")
        if not self.is_acyclic():
            raise CyclicGraphError(
                f"{what} must be acyclic but has the cycle {self._cycle_text()}; "
                "remove or reverse an edge of it"
            )
        return self

    # -------------------------------------------------------- family relations
    def parents(self, name: str) -> tuple[str, ...]:
        """Variables ``p`` with ``p -> name``."""
        j = self.index(name)
        return tuple(self._names[i] for i in np.flatnonzero(self.directed()[:, j]))

    def children(self, name: str) -> tuple[str, ...]:
        """Variables ``c`` with ``name -> c``."""
        i = self.index(name)
        return tuple(self._names[j] for j in np.flatnonzero(self.directed()[i, :]))

    def neighbors(self, name: str) -> tuple[str, ...]:
        """Variables adjacent to ``name`` by any edge."""
        i = self.index(name)
        return tuple(self._names[j] for j in np.flatnonzero(self._marks[i] != NONE))

    def ancestors(self, names: str | Iterable[str]) -> set[str]:
        """Variables with a directed path into ``names``, including ``names`` themselves."""
        start = [names] if isinstance(names, str) else list(names)
        reach = reachable(self.directed().T, self.indices(start))
        return {self._names[i] for i in np.flatnonzero(reach)}

    def descendants(self, names: str | Iterable[str]) -> set[str]:
        """Variables reached by a directed path from ``names``, including ``names``."""
        start = [names] if isinstance(names, str) else list(names)
        reach = reachable(self.directed(), self.indices(start))
        return {self._names[i] for i in np.flatnonzero(reach)}

    def topological_order(self) -> tuple[str, ...]:
        """Variables ordered so that every directed edge points forwards.

        Ties are broken by matrix order, so the result is deterministic.

        Raises
        ------
        CyclicGraphError
            If the directed edges contain a cycle.
        """
        order = _topological_order(self.directed())
        if order is None:
            raise CyclicGraphError(f"graph has the directed cycle {self._cycle_text()}")
        return tuple(self._names[i] for i in order)

    def _cycle_text(self) -> str:
        cycle = find_cycle(self.directed()) or []
        return " -> ".join(self._names[i] for i in [*cycle, *cycle[:1]])

    # ----------------------------------------------------- variable-set changes
    def restrict(self, names: Iterable[str]) -> Graph:
        """The induced sub-graph over ``names`` (in the order given), marks unchanged.

        Raises
        ------
        UnknownVariableError
            If a name is not in this graph.
        """
        names = tuple(names)
        idx = self.indices(names)
        return Graph(names, self._marks[np.ix_(idx, idx)])

    def expand(self, names: Sequence[str]) -> Graph:
        """This graph placed into a larger (or reordered) variable set.

        Variables of ``names`` that this graph does not have are isolated.

        Raises
        ------
        UnknownVariableError
            If this graph has a variable that ``names`` lacks.
        """
        names = tuple(names)
        pos = {n: i for i, n in enumerate(names)}
        missing = [n for n in self._names if n not in pos]
        if missing:
            raise UnknownVariableError(
                f"cannot place the graph into {len(names)} variables: {missing} are missing"
            )
        idx = [pos[n] for n in self._names]
        m = np.zeros((len(names), len(names)), dtype=np.int8)
        m[np.ix_(idx, idx)] = self._marks
        return Graph(names, m)

    def with_marks(self, marks: ArrayLike) -> Graph:
        """A graph over the same names with another mark matrix."""
        return Graph(self._names, marks)

    # --------------------------------------------------------------- equality
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self._names == other._names and bool(np.array_equal(self._marks, other._marks))

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __repr__(self) -> str:
        shown = ", ".join(str(e) for e in self.edges()[:6])
        more = ", ..." if self.n_edges > 6 else ""
        return f"Graph({self.n_nodes} nodes, {self.n_edges} edges: {shown}{more})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form: ``{"names": [...], "edges": ["A --> B", ...]}``."""
        return {"names": list(self._names), "edges": [str(e) for e in self.edges()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Graph:
        """Inverse of :meth:`to_dict`."""
        return cls.from_edges(data["names"], data["edges"])


# ---------------------------------------------------------------- helpers
def reachable(adj: NDArray[np.bool_], start: Iterable[int]) -> NDArray[np.bool_]:
    """Nodes reachable from ``start`` along ``adj[i, j]`` edges (start included)."""
    n = adj.shape[0]
    seen = np.zeros(n, dtype=bool)
    queue = deque(int(s) for s in start)
    seen[list(queue)] = True
    nbrs = [np.flatnonzero(adj[i]) for i in range(n)]
    while queue:
        i = queue.popleft()
        for j in nbrs[i]:
            if not seen[j]:
                seen[j] = True
                queue.append(int(j))
    return seen


def _topological_order(adj: NDArray[np.bool_]) -> list[int] | None:
    """Kahn's algorithm on ``adj[i, j]`` (``i -> j``); ``None`` if there is a cycle."""
    indeg = adj.sum(axis=0).astype(int)
    ready = [i for i in range(adj.shape[0]) if indeg[i] == 0]
    order: list[int] = []
    heapq.heapify(ready)
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in np.flatnonzero(adj[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, int(j))
    return order if len(order) == adj.shape[0] else None


def find_cycle(adj: NDArray[np.bool_]) -> list[int] | None:
    """One directed cycle of ``adj`` as a list of node indices, or ``None``.

    Iterative depth-first search; deterministic (lowest index first).
    """
    n = adj.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 new, 1 on stack, 2 done
    nbrs = [np.flatnonzero(adj[i]).tolist() for i in range(n)]
    for root in range(n):
        if state[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path: list[int] = [root]
        state[root] = 1
        while stack:
            node, k = stack[-1]
            if k < len(nbrs[node]):
                stack[-1] = (node, k + 1)
                nxt = nbrs[node][k]
                if state[nxt] == 1:
                    return path[path.index(nxt) :]
                if state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None
