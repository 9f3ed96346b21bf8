"""Tests for fedstruct.graphs.io: JSON, DOT, GraphML and edges CSV graph files."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from fedstruct.errors import DataError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, TAIL, Graph
from fedstruct.graphs.io import (
    from_dot,
    graph_kind,
    read_edges_csv,
    read_graph,
    read_graph_with_weights,
    to_dot,
    to_graph_json,
    write_graph,
)

# "G" is isolated and "F" comes first: names order and isolated variables must survive.
NAMES = ["F", "A", "B", "C", "D", "E", "G"]
EDGES = ["A o-o B", "B o-> C", "C --> D", "D <-> E", "E --- F"]
WEIGHTS = {("A", "B"): 0.25, ("C", "D"): 1e-5, ("D", "E"): 2 / 3}


@pytest.fixture
def pag() -> Graph:
    return Graph.from_edges(NAMES, EDGES)


@pytest.mark.parametrize("suffix", [".json", ".dot", ".gv", ".graphml"])
def test_pag_round_trip_keeps_every_mark_and_the_order(tmp_path: Path, pag: Graph, suffix: str):
    path = write_graph(pag, tmp_path / f"g{suffix}", weights=WEIGHTS)
    back = read_graph_with_weights(path)
    assert back.graph == pag
    assert back.graph.names == tuple(NAMES)
    assert {str(e) for e in back.graph.edges()} == {
        "A o-o B",
        "B o-> C",
        "C --> D",
        "D <-> E",
        "F --- E",
    }
    assert back.weights == WEIGHTS  # floats exactly, 1e-05 and 2/3 included
    assert read_graph(path) == pag


def test_bidirected_and_undirected_stay_distinct(tmp_path: Path):
    bi = Graph.from_edges(["A", "B"], ["A <-> B"])
    un = Graph.from_edges(["A", "B"], ["A --- B"])
    for suffix in (".json", ".dot", ".graphml"):
        assert read_graph(write_graph(bi, tmp_path / f"bi{suffix}")).marks[0, 1] == ARROW
        assert read_graph(write_graph(un, tmp_path / f"un{suffix}")).marks[0, 1] == TAIL


def test_json_layout_is_the_documented_one(pag: Graph):
    data = to_graph_json(pag, weights=WEIGHTS)
    assert list(data) == ["format", "version", "kind", "names", "edges"]
    assert data["format"] == "fedstruct.graph" and data["version"] == 1
    assert data["kind"] == "pag"
    assert data["names"] == NAMES
    assert data["edges"][1] == {
        "from": "A",
        "to": "B",
        "mark_from": "circle",
        "mark_to": "circle",
        "weight": 0.25,
    }
    assert {"from": "B", "to": "C", "mark_from": "circle", "mark_to": "arrow"} in data["edges"]


def test_weights_from_a_matrix_take_the_written_direction(tmp_path: Path):
    g = Graph.from_edges(["A", "B", "C"], [("B", "A"), "B o-o C"])
    w = np.zeros((3, 3))
    w[1, 0] = 0.7  # B -> A is written from B
    w[1, 2] = 0.4  # B o-o C is written from B (matrix order)
    back = read_graph_with_weights(write_graph(g, tmp_path / "g.json", weights=w))
    assert back.weights == {("B", "A"): 0.7, ("B", "C"): 0.4}


@pytest.mark.parametrize(
    ("edges", "kind"),
    [
        ([("A", "B"), ("B", "C")], "dag"),
        ([], "dag"),
        (["A --- B", "B --- C"], "undirected"),
        ([("A", "B"), "B --- C"], "cpdag"),
        (["A o-> B", ("B", "C")], "pag"),
        (["A <-> B"], "pag"),
        ([("A", "B"), ("B", "C"), ("C", "A")], None),
    ],
)
def test_graph_kind(edges: list, kind: str | None):
    assert graph_kind(Graph.from_edges(["A", "B", "C"], edges)) == kind


def test_kind_is_written_and_checked(tmp_path: Path):
    dag = Graph.from_edges(["A", "B"], [("A", "B")])
    assert to_graph_json(dag)["kind"] == "dag"
    assert to_graph_json(dag, kind="pag")["kind"] == "pag"
    cyclic = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C"), ("C", "A")])
    assert "kind" not in to_graph_json(cyclic)
    with pytest.raises(GraphError, match=r"declares kind 'cpdag' but has the edge 'A o-> B'"):
        write_graph(Graph.from_edges(["A", "B"], ["A o-> B"]), tmp_path / "g.json", kind="cpdag")


# ------------------------------------------------------------------ networkx
@pytest.mark.skipif(
    importlib.util.find_spec("pydot") is None and importlib.util.find_spec("pygraphviz") is None,
    reason="networkx reads DOT through pydot or pygraphviz; neither is installed",
)
@pytest.mark.filterwarnings("ignore:'setParseAction' deprecated")  # pydot's own use of pyparsing
def test_networkx_reads_our_dot(tmp_path: Path, pag: Graph):
    path = write_graph(pag, tmp_path / "g.dot", weights=WEIGHTS)
    if importlib.util.find_spec("pydot") is not None:
        g = nx.nx_pydot.read_dot(path)
    else:
        g = nx.nx_agraph.read_dot(path)
    assert list(g.nodes) == NAMES
    data = g.get_edge_data("B", "C")
    data = data.get(0, data)  # read_dot gives a multigraph
    assert (data["mark_from"], data["mark_to"]) == ("circle", "arrow")
    assert (data["dir"], data["arrowtail"], data["arrowhead"]) == ("both", "odot", "normal")


def test_networkx_reads_our_graphml(tmp_path: Path, pag: Graph):
    g = nx.read_graphml(write_graph(pag, tmp_path / "g.graphml", weights=WEIGHTS))
    assert list(g.nodes) == NAMES
    assert g.is_directed()
    assert g.edges["D", "E"] == {"mark_from": "arrow", "mark_to": "arrow", "weight": 2 / 3}
    assert g.edges["F", "E"] == {"mark_from": "tail", "mark_to": "tail"}
    assert g.graph["format"] == "fedstruct.graph" and g.graph["version"] == 1


# ------------------------------------------------------ other tools' files
TRUTH = Graph.from_edges(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("a", "d"), ("d", "c")])


def test_plain_digraph_from_another_tool_reads_as_a_dag(tmp_path: Path):
    path = tmp_path / "other.gv"
    path.write_text(
        "/* written by hand */\n"
        "strict digraph {\n"
        "  node [shape=box];\n"
        "  rankdir=LR\n"
        "  a; b\n"
        "  a -> b -> c [color=red];  // a chain\n"
        "  a -> d; d -> c\n"
        "}\n"
    )
    g = read_graph(path)
    assert g == TRUTH and g.is_dag()


def test_graphviz_arrow_attributes_without_mark_attributes():
    g = from_dot(
        'digraph { x -> y [dir=both, arrowtail=odot]; y -> z [dir=none]; "w" -> x [dir=back] }'
    ).graph
    assert str(g.edge("x", "y")) == "x o-> y"
    assert str(g.edge("y", "z")) == "y --- z"
    assert str(g.edge("w", "x")) == "w <-- x"


def test_undirected_dot_reads_as_undirected_edges():
    g = from_dot("graph g {\n a -- b\n b -- c\n}\n").graph
    assert graph_kind(g) == "undirected" and g.n_edges == 2


def test_plain_graphml_from_another_tool_reads_as_a_dag(tmp_path: Path):
    path = tmp_path / "other.graphml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        '  <graph id="G" edgedefault="directed">\n'
        '    <node id="a"/><node id="b"/><node id="c"/><node id="d"/>\n'
        '    <edge source="a" target="b"/><edge source="b" target="c"/>\n'
        '    <edge source="a" target="d"/><edge source="d" target="c"/>\n'
        "  </graph>\n"
        "</graphml>\n"
    )
    g = read_graph(path)
    assert g == TRUTH and g.is_dag()


def test_edges_csv(tmp_path: Path, pag: Graph):
    path = write_graph(pag, tmp_path / "edges.csv", weights=WEIGHTS)
    lines = path.read_text().splitlines()
    assert lines[0] == "from,to,mark_from,mark_to,confidence"
    assert lines[1] == "F,E,tail,tail,"
    assert lines[2] == "A,B,circle,circle,0.25"
    back = read_edges_csv(path, names=NAMES)
    assert back.graph == pag and back.weights == WEIGHTS
    # Without names: the variables the edges name, in order of first appearance.
    assert read_graph(path).names == ("F", "E", "A", "B", "C", "D")
    assert write_graph(pag, tmp_path / "plain.csv").read_text().splitlines()[0] == (
        "from,to,mark_from,mark_to"
    )


def test_csv_without_mark_columns_reads_as_directed(tmp_path: Path):
    path = tmp_path / "e.csv"
    path.write_text("from,to\na,b\nb,c\na,d\nd,c\n")
    assert read_graph(path) == TRUTH


def test_dot_quotes_awkward_names():
    names = ['say "hi"', "a b", "node", "x\\y", "é"]
    g = Graph.from_edges(names, [(names[0], names[1]), (names[3], names[4]), (names[2], names[1])])
    assert from_dot(to_dot(g)).graph == g


# ------------------------------------------------------------------- errors
def _json_file(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return path


def _valid(**changes: object) -> dict:
    data = {
        "format": "fedstruct.graph",
        "version": 1,
        "names": ["A", "B"],
        "edges": [{"from": "A", "to": "B", "mark_from": "tail", "mark_to": "arrow"}],
    }
    data.update(changes)
    return data


def test_missing_file(tmp_path: Path):
    path = tmp_path / "nope.json"
    with pytest.raises(DataError, match=rf"^graph file '{re.escape(str(path))}' does not exist$"):
        read_graph(path)


def test_unknown_suffix(tmp_path: Path, pag: Graph):
    with pytest.raises(DataError, match=r"cannot tell the format of graph file '.*g\.txt'"):
        write_graph(pag, tmp_path / "g.txt")
    with pytest.raises(DataError, match=r"unknown graph file format 'yaml'; valid graph"):
        write_graph(pag, tmp_path / "g.txt", format="yaml")


def test_not_json(tmp_path: Path):
    path = tmp_path / "g.json"
    path.write_text("{\n  'names': []\n}")
    with pytest.raises(DataError, match=r"g\.json' is not valid JSON \(line 2: "):
        read_graph(path)


def test_not_our_json_format(tmp_path: Path):
    path = _json_file(tmp_path, {"names": ["A"], "edges": []})
    with pytest.raises(
        DataError,
        match=r"g\.json' is not a fedstruct graph file: its \"format\" is None, "
        r"expected 'fedstruct.graph'$",
    ):
        read_graph(path)


def test_newer_version_says_upgrade(tmp_path: Path):
    path = _json_file(tmp_path, _valid(version=2))
    with pytest.raises(
        DataError,
        match=r"g\.json' is graph format version 2, newer than this fedstruct reads "
        r"\(version 1\); upgrade fedstruct \(pip install -U fedstruct\)$",
    ):
        read_graph(path)


@pytest.mark.parametrize(
    ("version", "message"),
    [("1.0", r"version '1\.0' is not a whole number"), (0, r"version 0 does not exist")],
)
def test_bad_version(tmp_path: Path, version: object, message: str):
    with pytest.raises(DataError, match=message):
        read_graph(_json_file(tmp_path, _valid(version=version)))


def test_unknown_variable_in_an_edge(tmp_path: Path):
    edges = [{"from": "A", "to": "Z", "mark_from": "tail", "mark_to": "arrow"}]
    with pytest.raises(
        UnknownVariableError,
        match=r"g\.json' edge 1: edge 'A'-'Z' names 'Z', which is not among the file's "
        r"variables; add it to \"names\" or fix the edge$",
    ):
        read_graph(_json_file(tmp_path, _valid(edges=edges)))


def test_unknown_mark_name(tmp_path: Path):
    edges = [{"from": "A", "to": "B", "mark_from": "tail", "mark_to": "arow"}]
    with pytest.raises(
        GraphError,
        match=r"g\.json' edge 1: mark_to is 'arow'; marks are 'tail', 'arrow' or 'circle'$",
    ):
        read_graph(_json_file(tmp_path, _valid(edges=edges)))


def test_json_shape_errors(tmp_path: Path):
    with pytest.raises(DataError, match=r"has unknown keys \['colour'\]; the keys are"):
        read_graph(_json_file(tmp_path, _valid(colour="red")))
    edges = [{"from": "A", "to": "B", "mark_to": "arrow"}]
    with pytest.raises(DataError, match=r"edge 1 lacks \['mark_from'\]; an edge has"):
        read_graph(_json_file(tmp_path, _valid(edges=edges)))
    edges = [{"from": "A", "to": "B", "mark_from": "tail", "mark_to": "arrow", "weight": "x"}]
    with pytest.raises(GraphError, match=r"edge 1: weight of edge 'A'-'B' is 'x'; use a finite"):
        read_graph(_json_file(tmp_path, _valid(edges=edges)))
    with pytest.raises(DataError, match=r"\"names\" must be a list of variable names"):
        read_graph(_json_file(tmp_path, _valid(names="AB")))


def test_pair_given_twice(tmp_path: Path):
    edges = [
        {"from": "A", "to": "B", "mark_from": "tail", "mark_to": "arrow"},
        {"from": "B", "to": "A", "mark_from": "tail", "mark_to": "arrow"},
    ]
    with pytest.raises(
        GraphError, match=r"g\.json' edge 2: the pair 'B'-'A' is given a second time"
    ):
        read_graph(_json_file(tmp_path, _valid(edges=edges)))


def test_declared_kind_is_checked(tmp_path: Path):
    edges = [
        {"from": "A", "to": "B", "mark_from": "tail", "mark_to": "arrow"},
        {"from": "B", "to": "C", "mark_from": "tail", "mark_to": "arrow"},
        {"from": "C", "to": "A", "mark_from": "tail", "mark_to": "arrow"},
    ]
    data = _valid(names=["A", "B", "C"], edges=edges, kind="dag")
    with pytest.raises(
        GraphError, match=r"declares kind 'dag' but has the directed cycle A -> B -> C -> A$"
    ):
        read_graph(_json_file(tmp_path, data))
    with pytest.raises(GraphError, match=r"kind 'tree' is not one of dag, cpdag, pag"):
        read_graph(_json_file(tmp_path, _valid(kind="tree")))


def test_malformed_dot_line_number(tmp_path: Path):
    path = tmp_path / "bad.dot"
    path.write_text("digraph {\n  a -> b;\n  a -> ;\n}\n")
    with pytest.raises(
        DataError,
        match=r"bad\.dot' line 3: malformed DOT, expected a node name after '->', got ';'$",
    ):
        read_graph(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("digraph {\n a -- b\n}", r"line 2: malformed DOT, expected '->' in a digraph, got '--'"),
        ("graph {\n\n a -> b }", r"line 3: malformed DOT, expected '--' in a graph, got '->'"),
        ("digraph {\n subgraph s { a }\n}", r"line 2: DOT subgraphs are not supported"),
        ("digraph {\n a:n -> b\n}", r"line 2: DOT ports \(a:p\) are not supported"),
        ("digraph {\n a -> b\n", r"line 3: malformed DOT, expected a node name or a statement"),
        ("tree { a }", r"line 1: malformed DOT, expected 'digraph' or 'graph', got 'tree'"),
        (
            "digraph {\n a -> b [color=red\n}",
            r"line 3: malformed DOT, expected an attribute name or '\]', got '}'",
        ),
    ],
)
def test_malformed_dot(text: str, message: str):
    with pytest.raises(DataError, match=message):
        from_dot(text, "graph file 'x.dot'")


def test_dot_unknown_mark_and_shape():
    with pytest.raises(GraphError, match=r"line 2: mark_from is 'dot'; marks are 'tail'"):
        from_dot("digraph {\n a -> b [mark_from=dot, mark_to=arrow]\n}")
    with pytest.raises(GraphError, match=r"line 1: arrowhead is 'vee'; fedstruct reads the arrow"):
        from_dot("digraph { a -> b [arrowhead=vee] }")


def test_dot_newer_version():
    with pytest.raises(DataError, match=r"is graph format version 3, newer than this fedstruct"):
        from_dot("digraph {\n graph [fedstruct_version=3]\n a -> b\n}")


def test_graphml_errors(tmp_path: Path):
    path = tmp_path / "bad.graphml"
    path.write_text("<graphml><graph>")
    with pytest.raises(DataError, match=r"bad\.graphml' is not readable GraphML: "):
        read_graph(path)
    g = nx.DiGraph(format="fedstruct.graph", version=1)
    g.add_edge("a", "b", mark_from="tail", mark_to="spear")
    nx.write_graphml(g, path)
    with pytest.raises(GraphError, match=r"edge 'a'->'b': mark_to is 'spear'; marks are"):
        read_graph(path)
    nx.write_graphml(nx.DiGraph(format="fedstruct.graph", version=2), path)
    with pytest.raises(DataError, match=r"version 2, newer .*; upgrade fedstruct"):
        read_graph(path)


def test_csv_errors(tmp_path: Path):
    path = tmp_path / "e.csv"
    path.write_text("source,target\na,b\n")
    with pytest.raises(DataError, match=r"has the columns \['source', 'target'\]; an edges CSV"):
        read_graph(path)
    path.write_text("from,to,mark_from,mark_to\na,b,tail,arrow\nb,c,tail,hook\n")
    with pytest.raises(GraphError, match=r"e\.csv' line 3: mark_to is 'hook'"):
        read_graph(path)
    path.write_text("from,to\na,b\nb,c\n")
    with pytest.raises(UnknownVariableError, match=r"line 3: edge 'b'-'c' names 'c'"):
        read_edges_csv(path, names=["a", "b"])


def test_weight_errors(pag: Graph, tmp_path: Path):
    with pytest.raises(GraphError, match=r"weights name the pair \('A', 'C'\), which is not an"):
        write_graph(pag, tmp_path / "g.json", weights={("A", "C"): 1.0})
    with pytest.raises(GraphError, match=r"weight of edge 'A'-'B' is nan; use a finite number"):
        write_graph(pag, tmp_path / "g.json", weights={("B", "A"): float("nan")})
    with pytest.raises(GraphError, match=r"weights matrix has shape \(2, 2\), expected \(7, 7\)"):
        write_graph(pag, tmp_path / "g.json", weights=np.zeros((2, 2)))


def test_dot_cannot_quote_a_trailing_backslash(tmp_path: Path):
    g = Graph.empty(["a\\"])
    with pytest.raises(GraphError, match=r"ends with a backslash, which DOT cannot quote"):
        write_graph(g, tmp_path / "g.dot")


def test_declared_dag_with_a_cycle_in_dot():
    with pytest.raises(GraphError, match=r"declares kind 'dag' but has the directed cycle a -> b"):
        from_dot("digraph {\n graph [kind=dag]\n a -> b -> c -> a\n}")


def test_marks_matrix_convention_after_reading(pag: Graph, tmp_path: Path):
    g = read_graph(write_graph(pag, tmp_path / "g.dot"))
    b, c = g.index("B"), g.index("C")
    assert g.marks[b, c] == ARROW and g.marks[c, b] == CIRCLE  # B o-> C
