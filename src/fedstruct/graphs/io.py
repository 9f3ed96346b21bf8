"""Graph files: JSON, DOT, GraphML and edges CSV, every endpoint mark kept.

Every format stores each edge once, as ``from``, ``to`` and the marks at both ends,
``mark_from`` and ``mark_to``, named ``"tail"``, ``"arrow"`` or ``"circle"``. So
``A o-> B`` is ``from=A, to=B, mark_from=circle, mark_to=arrow``, a bidirected
``A <-> B`` has ``arrow`` at both ends and an undirected ``A --- B`` ``tail`` at both
ends. An edge may carry a number (a confidence, a vote share, a strength).

``graph.json`` (fedstruct's own format, version 1)
    One JSON object with exactly these keys::

        {
          "format": "fedstruct.graph",          # required, this exact string
          "version": 1,                         # required, a whole number
          "kind": "pag",                        # optional: dag | cpdag | pag | undirected
          "names": ["A", "B", "C"],             # required: every variable, in order
          "edges": [                            # required: each adjacent pair once
            {"from": "A", "to": "B", "mark_from": "circle", "mark_to": "arrow",
             "weight": 0.8}                     # "weight" optional, a finite number
          ]
        }

    After a bootstrap (docs/confidence.md) every edge also has ``"frequencies"``:
    its share of the resampled runs where the pair was ``"adjacent"``, held each
    mark pattern read from ``from`` to ``to`` (``"-->"``, ``"<--"``, ``"o->"``, ...)
    and none (``"none"``), and the file a top-level ``"bootstrap": {"replicates": B}``.
    ``names`` fixes the variable order (isolated variables included), so reading
    gives back the very same :class:`Graph`. A ``kind`` is checked on reading: a
    ``dag`` has only ``-->`` edges and no cycle, a ``cpdag`` only ``-->`` and ``---``
    with acyclic ``-->``, an ``undirected`` graph only ``---``; a ``pag`` may have
    any marks. Unknown keys are errors (nothing is silently dropped); a newer
    ``version`` asks the reader to upgrade fedstruct.
DOT (``.dot``, ``.gv``)
    A Graphviz ``digraph``: every variable as a node statement (in order), then one
    ``"A" -> "B" [dir=both, arrowtail=odot, arrowhead=normal, mark_from=circle,
    mark_to=arrow, confidence="0.8"]`` per edge. Graphviz draws ``normal`` (arrow),
    ``odot`` (circle) and ``none`` (tail); ``mark_from``/``mark_to`` make reading
    exact. Graph attributes ``fedstruct_version`` and ``kind`` carry the version
    and kind. The reader takes the DOT subset that such files and other tools'
    plain files use: ``strict``, ``graph``/``digraph``, node, edge (chains
    ``a -> b -> c`` too) and attribute statements, quoted or bare names, comments.
    Without ``mark_from``/``mark_to`` an edge's marks come from ``dir``,
    ``arrowtail`` and ``arrowhead`` (Graphviz defaults: ``a -> b`` in a digraph is
    ``-->``, ``a -- b`` in a graph is ``---``). Subgraphs and ports are refused.
GraphML (``.graphml``)
    Through networkx: a directed graph whose edges carry the string attributes
    ``mark_from``, ``mark_to`` and, where given, the double ``weight``; graph
    attributes ``format``, ``version`` and ``kind``. A directed GraphML from
    another tool, without mark attributes, reads as ``-->`` edges; an undirected
    one as ``---`` edges.
``edges.csv``
    Header ``from,to,mark_from,mark_to`` plus ``confidence`` when some edge has a
    number (empty where an edge has none), and after a bootstrap one column per
    frequency of ``graph.json``'s ``"frequencies"``, ``freq_adjacent``,
    ``freq_-->``, ... ``freq_none``. A CSV holds edges only: isolated
    variables and the variable order are not in it; :func:`read_edges_csv` takes
    ``names`` to restore them.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from fedstruct.errors import DataError, GraphError, UnknownVariableError, unknown_choice_message
from fedstruct.graphs.convert import MARK_NAMES
from fedstruct.graphs.frequencies import EdgeFrequencies
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph, find_cycle

__all__ = [
    "FILE_FORMATS",
    "FILE_KINDS",
    "FORMAT",
    "VERSION",
    "WeightedGraph",
    "Weights",
    "edge_weights",
    "from_dot",
    "from_graph_json",
    "graph_kind",
    "read_edges_csv",
    "read_graph",
    "read_graph_with_weights",
    "to_dot",
    "to_graph_json",
    "write_graph",
]

#: The ``"format"`` tag of fedstruct's graph files.
FORMAT = "fedstruct.graph"
#: The graph file version this fedstruct writes and the newest it reads.
VERSION = 1
#: The values of a graph file's optional ``"kind"``.
FILE_KINDS: tuple[str, ...] = ("dag", "cpdag", "pag", "undirected")
#: File formats by suffix.
FILE_FORMATS: dict[str, str] = {
    ".json": "json",
    ".dot": "dot",
    ".gv": "dot",
    ".graphml": "graphml",
    ".csv": "csv",
}

_MARK_CODES = {name: code for code, name in MARK_NAMES.items()}
_ARROW_SHAPES: dict[int, str] = {TAIL: "none", ARROW: "normal", CIRCLE: "odot"}
_SHAPE_CODES = {shape: code for code, shape in _ARROW_SHAPES.items()}
_JSON_KEYS = {"format", "version", "kind", "names", "edges", "bootstrap"}
_EDGE_KEYS = {"from", "to", "mark_from", "mark_to", "weight", "frequencies"}

Weights = Mapping[tuple[str, str], float] | ArrayLike


class WeightedGraph(NamedTuple):
    """A graph read from a file and its edges' numbers.

    ``weights`` maps ``(a, b)`` to the edge's number, keyed as
    :meth:`Graph.edges` writes the pair (``A --> B`` is ``("A", "B")``); edges
    without a number are absent.
    """

    graph: Graph
    weights: dict[tuple[str, str], float]


class _Row(NamedTuple):
    """One edge as a file gives it; ``where`` locates it in messages."""

    a: str
    b: str
    mark_a: int
    mark_b: int
    weight: float | None
    where: str


# ===================================================================== dispatch
def write_graph(
    graph: Graph,
    path: str | Path,
    *,
    format: str | None = None,
    weights: Weights | None = None,
    kind: str | None = None,
    frequencies: EdgeFrequencies | None = None,
) -> Path:
    """Write ``graph`` to ``path`` as JSON, DOT, GraphML or edges CSV.

    Parameters
    ----------
    graph
        Any graph.
    path
        The file; its suffix (``.json``, ``.dot``/``.gv``, ``.graphml``, ``.csv``)
        picks the format unless ``format`` is given.
    format
        ``"json"``, ``"dot"``, ``"graphml"`` or ``"csv"``.
    weights
        Optional numbers per edge: a mapping ``(a, b) -> float`` over adjacent pairs
        (either order), or an ``(n, n)`` array over ``graph.names`` where the edge
        written from ``a`` to ``b`` (as :meth:`Graph.edges` writes it: ``A --> B``
        from ``A``) takes ``weights[a, b]`` — e.g. ``StrengthVote.strength``.
    kind
        The graph's kind (one of :data:`FILE_KINDS`), checked against its marks;
        default: :func:`graph_kind`. Written to JSON, DOT and GraphML.
    frequencies
        A bootstrap's edge frequencies (JSON and edges CSV carry each edge's).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    DataError
        If the format is unknown or the file cannot be written.
    GraphError
        If a weight is not finite or names a non-adjacent pair, or ``kind`` does not
        fit the graph.
    """
    path = Path(path)
    fmt = _format_of(path, format)
    numbers = edge_weights(graph, weights)
    kind = _writable_kind(graph, kind)
    if fmt == "graphml":
        _write_graphml(graph, path, numbers, kind)
        return path
    if fmt == "json":
        document = to_graph_json(graph, weights=numbers, kind=kind, frequencies=frequencies)
        text = json.dumps(document, indent=2) + "\n"
    elif fmt == "dot":
        text = to_dot(graph, weights=numbers, kind=kind)
    else:
        text = _edges_csv_text(graph, numbers, frequencies)
    try:
        path.write_text(text, encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(f"cannot write graph file '{path}': {exc.strerror or exc}") from None
    return path


def read_graph(path: str | Path) -> Graph:
    """Read a graph file (``.json``, ``.dot``/``.gv``, ``.graphml``, ``.csv``).

    Raises
    ------
    DataError
        If the file is missing, unreadable, not in the format its suffix says, or of
        a newer version than this fedstruct reads.
    GraphError
        If a mark is unknown, a pair is given twice, or the graph does not fit its
        declared kind.
    UnknownVariableError
        If an edge names a variable that a JSON file's ``names`` lacks.
    """
    return read_graph_with_weights(path).graph


def read_graph_with_weights(path: str | Path) -> WeightedGraph:
    """Like :func:`read_graph`, with the edges' numbers (``weight``/``confidence``)."""
    path = Path(path)
    fmt = _format_of(path, None)
    if not path.exists():
        raise DataError(f"graph file '{path}' does not exist")
    if fmt == "graphml":
        return _read_graphml(path)
    if fmt == "csv":
        return _read_csv(path, None)
    text = _read_text(path)
    source = f"graph file '{path}'"
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{source} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
        return from_graph_json(data, source)
    return from_dot(text, source)


def _format_of(path: Path, format: str | None) -> str:
    if format is not None:
        if format not in set(FILE_FORMATS.values()):
            raise DataError(
                unknown_choice_message(
                    "graph file format", format, {"json", "dot", "graphml", "csv"}
                )
            )
        return format
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(
            f"cannot tell the format of graph file '{path}' from its suffix; "
            "use .json, .dot, .gv, .graphml or .csv"
        )
    return fmt


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read graph file '{path}': {exc}") from None


# ======================================================================= kinds
def graph_kind(graph: Graph) -> str | None:
    """The narrowest of :data:`FILE_KINDS` that fits the graph's marks, or ``None``.

    ``"dag"`` if every edge is ``-->`` and there is no cycle (an empty graph too);
    ``"undirected"`` if every edge is ``---``; ``"cpdag"`` if the edges are ``-->``
    and ``---`` with acyclic ``-->``; ``"pag"`` if some edge has a circle or
    arrowheads at both ends; ``None`` otherwise (e.g. a directed cycle).
    """
    for kind in ("dag", "undirected", "cpdag"):
        if _kind_problem(graph, kind) is None:
            return kind
    m = graph.marks
    if np.any(m == CIRCLE) or np.any((m == ARROW) & (m.T == ARROW)):
        return "pag"
    return None


def _kind_problem(graph: Graph, kind: str) -> str | None:
    """Why ``graph`` is not of ``kind``, or ``None`` if it is."""
    allowed = {
        "dag": {(TAIL, ARROW)},
        "cpdag": {(TAIL, ARROW), (TAIL, TAIL)},
        "undirected": {(TAIL, TAIL)},
        "pag": None,
    }[kind]
    if allowed is None:
        return None
    for e in graph.edges():
        if (e.mark_a, e.mark_b) not in allowed:
            return f"has the edge '{e}'"
    cycle = find_cycle(graph.directed())
    if cycle is not None:
        return "has the directed cycle " + " -> ".join(graph.names[i] for i in [*cycle, cycle[0]])
    return None


def _check_kind(graph: Graph, kind: Any, source: str) -> None:
    if kind not in FILE_KINDS:
        raise GraphError(f"{source}: kind {kind!r} is not one of {', '.join(FILE_KINDS)}")
    problem = _kind_problem(graph, kind)
    if problem is not None:
        raise GraphError(f"{source} declares kind {kind!r} but {problem}")


def _writable_kind(graph: Graph, kind: str | None) -> str | None:
    if kind is None:
        return graph_kind(graph)
    _check_kind(graph, kind, "the graph to write")
    return kind


# ===================================================================== weights
def edge_weights(graph: Graph, weights: Weights | None) -> dict[tuple[str, str], float]:
    """The edges' numbers keyed as :meth:`Graph.edges` writes each pair.

    Parameters
    ----------
    graph
        The graph the numbers belong to.
    weights
        ``None`` (no numbers), a mapping ``(a, b) -> float`` over adjacent pairs
        (either order), or an ``(n, n)`` array over ``graph.names`` read at
        ``[a, b]`` for the edge written from ``a`` to ``b`` (see :func:`write_graph`).

    Returns
    -------
    dict
        ``(a, b) -> float`` for the edges that have a number.

    Raises
    ------
    GraphError
        If a number is not finite, a key is not an edge of the graph, or the
        matrix has the wrong shape.
    """
    if weights is None:
        return {}
    keys = {frozenset((e.a, e.b)): (e.a, e.b) for e in graph.edges()}
    if isinstance(weights, Mapping):
        out: dict[tuple[str, str], float] = {}
        for pair, value in weights.items():
            key = keys.get(frozenset(pair))
            if key is None:
                raise GraphError(
                    f"weights name the pair {tuple(pair)!r}, which is not an edge of the graph"
                )
            out[key] = _finite(value, key)
        return out
    matrix = np.asarray(weights, dtype=float)
    n = graph.n_nodes
    if matrix.shape != (n, n):
        raise GraphError(f"weights matrix has shape {matrix.shape}, expected ({n}, {n})")
    return {
        key: _finite(matrix[graph.index(key[0]), graph.index(key[1])], key) for key in keys.values()
    }


def _read_weight(value: Any, key: tuple[str, str], where: str) -> float | None:
    """A read edge's number (``None`` if it has none), checked finite; errors name ``where``."""
    if value is None:
        return None
    try:
        return _finite(value, key)
    except GraphError as exc:
        raise GraphError(f"{where}: {exc}") from None


def _finite(value: Any, key: tuple[str, str]) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise GraphError(f"weight of edge {key[0]!r}-{key[1]!r} is {value!r}; use a finite number")
    return number


# ================================================================== assembling
def _assemble(names: Sequence[str], rows: Sequence[_Row], source: str) -> WeightedGraph:
    """Build the graph and its weights from a file's edges, with located errors."""
    index = {n: i for i, n in enumerate(names)}
    marks = np.zeros((len(names), len(names)), dtype=np.int8)
    numbers: dict[frozenset[str], float] = {}
    for row in rows:
        for v in (row.a, row.b):
            if v not in index:
                raise UnknownVariableError(
                    f"{source} {row.where}: edge {row.a!r}-{row.b!r} names {v!r}, which is "
                    'not among the file\'s variables; add it to "names" or fix the edge'
                )
        i, j = index[row.a], index[row.b]
        if i == j:
            raise GraphError(f"{source} {row.where}: self-loop on {row.a!r}; remove it")
        if marks[i, j] != NONE:
            raise GraphError(
                f"{source} {row.where}: the pair {row.a!r}-{row.b!r} is given a second time; "
                "keep one edge per pair"
            )
        marks[i, j], marks[j, i] = row.mark_b, row.mark_a
        if row.weight is not None:
            numbers[frozenset((row.a, row.b))] = row.weight
    try:
        graph = Graph(names, marks)
    except GraphError as exc:
        raise GraphError(f"{source}: {exc}") from None
    weights = {
        (e.a, e.b): numbers[frozenset((e.a, e.b))]
        for e in graph.edges()
        if frozenset((e.a, e.b)) in numbers
    }
    return WeightedGraph(graph, weights)


def _mark_code(value: Any, field: str, where: str) -> int:
    code = _MARK_CODES.get(value) if isinstance(value, str) else None
    if code is None:
        raise GraphError(f"{where}: {field} is {value!r}; marks are 'tail', 'arrow' or 'circle'")
    return code


def _check_version(version: Any, source: str) -> None:
    if isinstance(version, str) and version.strip().isdigit():
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int):
        raise DataError(f"{source}: version {version!r} is not a whole number")
    if version > VERSION:
        raise DataError(
            f"{source} is graph format version {version}, newer than this fedstruct reads "
            f"(version {VERSION}); upgrade fedstruct (pip install -U fedstruct)"
        )
    if version < 1:
        raise DataError(f"{source}: version {version} does not exist; graph files start at 1")


# ======================================================================== JSON
def to_graph_json(
    graph: Graph,
    *,
    weights: Weights | None = None,
    kind: str | None = None,
    frequencies: EdgeFrequencies | None = None,
) -> dict[str, Any]:
    """The ``graph.json`` object of ``graph`` (see the module docstring).

    Parameters
    ----------
    graph
        Any graph.
    weights
        As for :func:`write_graph`.
    kind
        As for :func:`write_graph`; the key is left out when no kind fits.
    frequencies
        A bootstrap's edge frequencies: each edge's ``"frequencies"``.
    """
    numbers = edge_weights(graph, weights)
    kind = _writable_kind(graph, kind)
    edges = []
    for e in graph.edges():
        edge: dict[str, Any] = {
            "from": e.a,
            "to": e.b,
            "mark_from": MARK_NAMES[e.mark_a],
            "mark_to": MARK_NAMES[e.mark_b],
        }
        if (e.a, e.b) in numbers:
            edge["weight"] = numbers[(e.a, e.b)]
        if frequencies is not None:
            edge["frequencies"] = frequencies.row(e.a, e.b)
        edges.append(edge)
    out: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    if kind is not None:
        out["kind"] = kind
    out.update(names=list(graph.names), edges=edges)
    if frequencies is not None:
        out["bootstrap"] = {"replicates": frequencies.replicates}
    return out


def from_graph_json(data: Any, source: str = "graph JSON") -> WeightedGraph:
    """Read a ``graph.json`` object (see the module docstring).

    Parameters
    ----------
    data
        The parsed JSON.
    source
        How to name the data in messages, e.g. ``"graph file 'truth.json'"``.

    Raises
    ------
    DataError
        If it is not a fedstruct graph object, is of a newer version, or a key or
        value has the wrong shape.
    GraphError, UnknownVariableError
        For an unknown mark, an edge naming an unknown variable, a repeated pair or
        a graph that does not fit its kind.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise DataError(
            f'{source} is not a fedstruct graph file: its "format" is {found!r}, '
            f"expected {FORMAT!r}"
        )
    _check_version(data.get("version"), source)
    extra = sorted(set(data) - _JSON_KEYS)
    if extra:
        raise DataError(f"{source} has unknown keys {extra}; the keys are {sorted(_JSON_KEYS)}")
    names = data.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise DataError(f'{source}: "names" must be a list of variable names (strings)')
    edges = data.get("edges")
    if not isinstance(edges, list):
        raise DataError(f'{source}: "edges" must be a list of edge objects')
    _check_bootstrap(data.get("bootstrap", {}), source)
    rows = [_json_row(edge, k, source) for k, edge in enumerate(edges, start=1)]
    result = _assemble(names, rows, source)
    if "kind" in data:
        _check_kind(result.graph, data["kind"], source)
    return result


def _json_row(edge: Any, k: int, source: str) -> _Row:
    where = f"{source} edge {k}"
    if not isinstance(edge, dict):
        raise DataError(f'{where} is not an object with "from", "to", "mark_from", "mark_to"')
    missing = sorted({"from", "to", "mark_from", "mark_to"} - set(edge))
    extra = sorted(set(edge) - _EDGE_KEYS)
    if missing or extra:
        what = f"lacks {missing}" if missing else f"has unknown keys {extra}"
        raise DataError(f"{where} {what}; an edge has {sorted(_EDGE_KEYS)} (weight optional)")
    a, b = edge["from"], edge["to"]
    if not isinstance(a, str) or not isinstance(b, str):
        raise DataError(f'{where}: "from" and "to" must be variable names (strings)')
    weight = _read_weight(edge.get("weight"), (a, b), where)
    _check_frequencies(edge.get("frequencies", {}), where)
    return _Row(
        a,
        b,
        _mark_code(edge["mark_from"], "mark_from", where),
        _mark_code(edge["mark_to"], "mark_to", where),
        weight,
        f"edge {k}",
    )


def _check_bootstrap(value: Any, source: str) -> None:
    """A graph file's ``"bootstrap"`` is an object whose ``replicates`` is a count."""
    replicates = value.get("replicates", 1) if isinstance(value, dict) else None
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise DataError(f'{source}: "bootstrap" must be {{"replicates": B}} with B >= 1')


def _check_frequencies(value: Any, where: str) -> None:
    """An edge's ``"frequencies"`` map names to shares in ``[0, 1]``."""
    good = isinstance(value, dict) and all(
        isinstance(k, str)
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and 0.0 <= v <= 1.0
        for k, v in value.items()
    )
    if not good:
        raise DataError(f'{where}: "frequencies" must map names to shares between 0 and 1')


# ========================================================================= DOT
def to_dot(
    graph: Graph,
    *,
    weights: Weights | None = None,
    kind: str | None = None,
) -> str:
    """The DOT text of ``graph`` (see the module docstring); Graphviz draws every mark.

    Raises
    ------
    GraphError
        If a variable name ends with a backslash (DOT cannot quote it).
    """
    numbers = edge_weights(graph, weights)
    kind = _writable_kind(graph, kind)
    head = [f"fedstruct_version={VERSION}"] + ([f"kind={kind}"] if kind else [])
    lines = [
        f"// {FORMAT} version {VERSION}: mark_from/mark_to are the marks at each end",
        "digraph G {",
        f"  graph [{', '.join(head)}];",
    ]
    lines += [f"  {_dot_id(name)};" for name in graph.names]
    for e in graph.edges():
        attrs = [
            "dir=both",
            f"arrowtail={_ARROW_SHAPES[e.mark_a]}",
            f"arrowhead={_ARROW_SHAPES[e.mark_b]}",
            f"mark_from={MARK_NAMES[e.mark_a]}",
            f"mark_to={MARK_NAMES[e.mark_b]}",
        ]
        if (e.a, e.b) in numbers:
            attrs.append(f'confidence="{numbers[(e.a, e.b)]!r}"')
        lines.append(f"  {_dot_id(e.a)} -> {_dot_id(e.b)} [{', '.join(attrs)}];")
    return "\n".join([*lines, "}", ""])


def _dot_id(name: str) -> str:
    if name.endswith("\\"):
        raise GraphError(f"variable name {name!r} ends with a backslash, which DOT cannot quote")
    return '"' + name.replace('"', '\\"') + '"'


_DOT_TOKEN = re.compile(
    r"(?P<space>[ \t\r\f\v]+)"
    r"|(?P<newline>\n)"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/|(?<![^\n])\#[^\n]*)"
    r'|(?P<string>"(?:[^"\\]|\\"|\\\n|\\(?!["\n]))*")'
    r"|(?P<edgeop>->|--)"
    r"|(?P<id>[A-Za-z_\u0080-\U0010ffff][\w\u0080-\U0010ffff]*|-?(?:\.\d+|\d+(?:\.\d*)?))"
    r"|(?P<punct>[{}\[\]=;,:])",
    re.DOTALL,
)


class _Token(NamedTuple):
    kind: str  # "id", "string", "edgeop", "punct" or "end"
    text: str
    line: int


def _dot_tokens(text: str, source: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, pos = 1, 0
    while pos < len(text):
        m = _DOT_TOKEN.match(text, pos)
        if m is None:
            raise DataError(f"{source} line {line}: cannot read DOT from {text[pos : pos + 20]!r}")
        kind, value = m.lastgroup or "", m.group()
        if kind == "string":
            value = value[1:-1].replace('\\"', '"').replace("\\\n", "")
        if kind in ("id", "string", "edgeop", "punct"):
            tokens.append(_Token(kind, value, line))
        line += m.group().count("\n")
        pos = m.end()
    tokens.append(_Token("end", "end of file", line))
    return tokens


class _DotReader:
    """Recursive descent over the DOT subset described in the module docstring."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.tokens = _dot_tokens(text, source)
        self.pos = 0
        self.names: dict[str, None] = {}
        self.rows: list[_Row] = []
        self.graph_attrs: dict[str, str] = {}
        self.edge_defaults: dict[str, str] = {}
        self.directed = True

    # ----------------------------------------------------------------- tokens
    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def fail(self, token: _Token, expected: str) -> DataError:
        shown = token.text if token.kind == "end" else repr(token.text)
        return DataError(
            f"{self.source} line {token.line}: malformed DOT, expected {expected}, got {shown}"
        )

    @staticmethod
    def is_punct(token: _Token, text: str) -> bool:
        return token.kind == "punct" and token.text == text

    def keyword(self, token: _Token, *words: str) -> bool:
        return token.kind == "id" and token.text.lower() in words

    def expect(self, text: str) -> _Token:
        token = self.take()
        if token.kind not in ("punct", "edgeop") or token.text != text:
            raise self.fail(token, repr(text))
        return token

    def identifier(self, what: str) -> str:
        token = self.take()
        if token.kind not in ("id", "string"):
            raise self.fail(token, what)
        return token.text

    # ---------------------------------------------------------------- grammar
    def read(self) -> WeightedGraph:
        if self.keyword(self.peek(), "strict"):
            self.take()
        token = self.take()
        if not self.keyword(token, "graph", "digraph"):
            raise self.fail(token, "'digraph' or 'graph'")
        self.directed = token.text.lower() == "digraph"
        if self.peek().kind in ("id", "string"):
            self.take()
        self.expect("{")
        while not self.is_punct(self.peek(), "}"):
            self.statement()
        self.expect("}")
        if self.peek().kind != "end":
            raise self.fail(self.peek(), "end of file after the closing '}'")
        return self.result()

    def statement(self) -> None:
        token = self.peek()
        if self.keyword(token, "subgraph") or self.is_punct(token, "{"):
            raise DataError(f"{self.source} line {token.line}: DOT subgraphs are not supported")
        if self.keyword(token, "graph", "node", "edge"):
            self.take()
            attrs = self.attr_lists(required=True)
            if token.text.lower() == "graph":
                self.graph_attrs.update(attrs)
            elif token.text.lower() == "edge":
                self.edge_defaults.update(attrs)
        else:
            first = self.identifier("a node name or a statement")
            if self.is_punct(self.peek(), "="):
                self.take()
                self.graph_attrs[first] = self.identifier("an attribute value")
            else:
                self.node_or_edge(first, token.line)
        if self.is_punct(self.peek(), ";"):
            self.take()

    def node_or_edge(self, first: str, line: int) -> None:
        chain = [first]
        self.no_port()
        op = "->" if self.directed else "--"
        while self.peek().kind == "edgeop":
            token = self.take()
            if token.text != op:
                kind = "digraph" if self.directed else "graph"
                raise self.fail(token, f"{op!r} in a {kind}")
            chain.append(self.identifier(f"a node name after {op!r}"))
            self.no_port()
        attrs = self.attr_lists(required=False)
        for name in chain:
            self.names.setdefault(name, None)
        if len(chain) > 1:
            attrs = {**self.edge_defaults, **attrs}
            for a, b in itertools.pairwise(chain):
                self.rows.append(self.edge_row(a, b, attrs, line))

    def no_port(self) -> None:
        token = self.peek()
        if self.is_punct(token, ":"):
            raise DataError(f"{self.source} line {token.line}: DOT ports (a:p) are not supported")

    def attr_lists(self, *, required: bool) -> dict[str, str]:
        attrs: dict[str, str] = {}
        if required and not self.is_punct(self.peek(), "["):
            raise self.fail(self.peek(), "'['")
        while self.is_punct(self.peek(), "["):
            self.take()
            while not self.is_punct(self.peek(), "]"):
                key = self.identifier("an attribute name or ']'")
                self.expect("=")
                attrs[key] = self.identifier(f"a value for {key!r}")
                if self.is_punct(self.peek(), ",") or self.is_punct(self.peek(), ";"):
                    self.take()
            self.take()
        return attrs

    # -------------------------------------------------------------- semantics
    def edge_row(self, a: str, b: str, attrs: Mapping[str, str], line: int) -> _Row:
        where = f"{self.source} line {line}"
        if "mark_from" in attrs or "mark_to" in attrs:
            mark_a = _mark_code(attrs.get("mark_from"), "mark_from", where)
            mark_b = _mark_code(attrs.get("mark_to"), "mark_to", where)
        else:
            mark_a, mark_b = self.drawn_marks(attrs, where)
        weight = None
        if "confidence" in attrs:
            try:
                weight = _finite(attrs["confidence"], (a, b))
            except GraphError as exc:
                raise GraphError(f"{where}: {exc}") from None
        return _Row(a, b, mark_a, mark_b, weight, f"line {line}")

    def drawn_marks(self, attrs: Mapping[str, str], where: str) -> tuple[int, int]:
        """Marks from Graphviz's ``dir``, ``arrowtail`` and ``arrowhead``."""
        direction = attrs.get("dir", "forward" if self.directed else "none")
        if direction not in ("forward", "back", "both", "none"):
            raise GraphError(f"{where}: dir is {direction!r}; use forward, back, both or none")
        tail = self.shape(attrs.get("arrowtail", "normal"), "arrowtail", where)
        head = self.shape(attrs.get("arrowhead", "normal"), "arrowhead", where)
        return {
            "forward": (TAIL, head),
            "back": (tail, TAIL),
            "both": (tail, head),
            "none": (TAIL, TAIL),
        }[direction]

    @staticmethod
    def shape(value: str, field: str, where: str) -> int:
        if value not in _SHAPE_CODES:
            raise GraphError(
                f"{where}: {field} is {value!r}; fedstruct reads the arrow shapes "
                "normal (arrow), odot (circle) and none (tail)"
            )
        return _SHAPE_CODES[value]

    def result(self) -> WeightedGraph:
        if "fedstruct_version" in self.graph_attrs:
            _check_version(self.graph_attrs["fedstruct_version"], self.source)
        result = _assemble(list(self.names), self.rows, self.source)
        if "kind" in self.graph_attrs:
            _check_kind(result.graph, self.graph_attrs["kind"], self.source)
        return result


def from_dot(text: str, source: str = "DOT text") -> WeightedGraph:
    """Read DOT ``text``: fedstruct's own files and plain ``digraph``/``graph`` files
    (``source`` names the text in messages, e.g. ``"graph file 'g.dot'"``).

    Raises
    ------
    DataError
        For DOT outside the supported subset (the message gives the line number)
        or a newer ``fedstruct_version``.
    GraphError
        For an unknown mark or arrow shape, a repeated pair or a graph that does
        not fit its ``kind``.
    """
    return _DotReader(text, source).read()


# ===================================================================== GraphML
def _write_graphml(
    graph: Graph, path: Path, weights: Mapping[tuple[str, str], float], kind: str | None
) -> None:
    import networkx as nx

    g = nx.DiGraph(format=FORMAT, version=VERSION)
    if kind is not None:
        g.graph["kind"] = kind
    g.add_nodes_from(graph.names)
    for e in graph.edges():
        attrs: dict[str, Any] = {"mark_from": MARK_NAMES[e.mark_a], "mark_to": MARK_NAMES[e.mark_b]}
        if (e.a, e.b) in weights:
            attrs["weight"] = weights[(e.a, e.b)]
        g.add_edge(e.a, e.b, **attrs)
    try:
        nx.write_graphml(g, path)
    except OSError as exc:
        raise DataError(f"cannot write graph file '{path}': {exc.strerror or exc}") from None


def _read_graphml(path: Path) -> WeightedGraph:
    import xml.etree.ElementTree as ET

    import networkx as nx

    source = f"graph file '{path}'"
    try:
        g = nx.read_graphml(path)
    except (ET.ParseError, nx.NetworkXError, OSError, ValueError, KeyError) as exc:
        raise DataError(f"{source} is not readable GraphML: {exc}") from None
    if "format" in g.graph and g.graph["format"] != FORMAT:
        raise DataError(
            f'{source}: its GraphML "format" is {g.graph["format"]!r}, expected {FORMAT!r}'
        )
    if "version" in g.graph:
        _check_version(g.graph["version"], source)
    rows = []
    for u, v, data in g.edges(data=True):
        where = f"{source} edge {u!r}->{v!r}"
        if g.is_directed() and ("mark_from" in data or "mark_to" in data):
            marks = (
                _mark_code(data.get("mark_from"), "mark_from", where),
                _mark_code(data.get("mark_to"), "mark_to", where),
            )
        else:
            marks = (TAIL, ARROW) if g.is_directed() else (TAIL, TAIL)
        weight = _read_weight(data.get("weight"), (u, v), where)
        rows.append(_Row(u, v, *marks, weight, f"edge {u!r}->{v!r}"))
    result = _assemble([str(n) for n in g.nodes], rows, source)
    if "kind" in g.graph:
        _check_kind(result.graph, g.graph["kind"], source)
    return result


# ================================================================== edges CSV
def _edges_csv_text(
    graph: Graph,
    weights: Mapping[tuple[str, str], float],
    frequencies: EdgeFrequencies | None = None,
) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["from", "to", "mark_from", "mark_to"] + (["confidence"] if weights else [])
    shares = ["adjacent", *frequencies.patterns, "none"] if frequencies is not None else []
    writer.writerow(header + [f"freq_{name}" for name in shares])
    for e in graph.edges():
        row = [e.a, e.b, MARK_NAMES[e.mark_a], MARK_NAMES[e.mark_b]]
        if weights:
            row.append(repr(weights[(e.a, e.b)]) if (e.a, e.b) in weights else "")
        if frequencies is not None:
            found = frequencies.row(e.a, e.b)
            row.extend(repr(found[name]) for name in shares)
        writer.writerow(row)
    return out.getvalue()


def read_edges_csv(path: str | Path, names: Sequence[str] | None = None) -> WeightedGraph:
    """Read an ``edges.csv`` (columns ``from``, ``to``, ``mark_from``, ``mark_to``, ``confidence``).

    ``mark_from``/``mark_to`` may be left out together (every edge is then ``-->``),
    and ``confidence`` may be left out or empty.

    Parameters
    ----------
    path
        The file.
    names
        The variables, in order (for isolated variables); default: the variables
        the edges name, in order of first appearance.

    Raises
    ------
    DataError
        If the file is missing or a required column is absent.
    GraphError, UnknownVariableError
        For an unknown mark, a repeated pair, or an edge naming a variable that
        ``names`` lacks.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"graph file '{path}' does not exist")
    return _read_csv(path, names)


def _read_csv(path: Path, names: Sequence[str] | None) -> WeightedGraph:
    source = f"graph file '{path}'"
    reader = csv.DictReader(io.StringIO(_read_text(path)))
    columns = set(reader.fieldnames or ())
    marked = {"mark_from", "mark_to"} & columns
    if not {"from", "to"} <= columns or len(marked) == 1:
        raise DataError(
            f"{source} has the columns {reader.fieldnames}; an edges CSV has from, to, "
            "mark_from, mark_to (both or neither) and optionally confidence"
        )
    rows, seen = [], dict.fromkeys(names or ())
    for k, record in enumerate(reader, start=2):
        where = f"{source} line {k}"
        a, b = record["from"], record["to"]
        mark_a = _mark_code(record["mark_from"], "mark_from", where) if marked else TAIL
        mark_b = _mark_code(record["mark_to"], "mark_to", where) if marked else ARROW
        text = (record.get("confidence") or "").strip()
        try:
            weight = _finite(text, (a, b)) if text else None
        except GraphError as exc:
            raise GraphError(f"{where}: {exc}") from None
        rows.append(_Row(a, b, mark_a, mark_b, weight, f"line {k}"))
        if names is None:
            seen.update(dict.fromkeys((a, b)))
    return _assemble(list(seen), rows, source)
