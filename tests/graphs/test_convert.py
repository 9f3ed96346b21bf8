"""Tests for fedstruct.graphs.convert: networkx, pgmpy and causal-learn round trips."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from fedstruct.errors import ConfigError, CyclicGraphError, GraphError, UnknownVariableError
from fedstruct.graphs.convert import (
    from_causallearn,
    from_networkx,
    from_pgmpy,
    to_causallearn,
    to_networkx,
    to_pgmpy,
)
from fedstruct.graphs.graph import Graph

NAMES = ["A", "B", "C", "D", "E", "F"]


@pytest.fixture
def dag() -> Graph:
    # F is isolated: conversions must keep it.
    return Graph.from_edges(NAMES, [("A", "B"), ("C", "B"), ("B", "D"), ("A", "E")])


@pytest.fixture
def pag() -> Graph:
    # Every mark combination Graph allows, incl. tail-circle and undirected.
    return Graph.from_edges(
        NAMES, ["A o-o B", "B o-> C", "C <-> D", "D --> E", "A --o E", "E <-o F", "B --- F"]
    )


# ------------------------------------------------------------------- networkx
def test_networkx_dag_is_plain_digraph(dag):
    g = to_networkx(dag)
    assert list(g.nodes()) == NAMES
    assert set(g.edges()) == {("A", "B"), ("C", "B"), ("B", "D"), ("A", "E")}
    assert nx.is_directed_acyclic_graph(g)
    assert all(not d for _, _, d in g.edges(data=True))
    assert from_networkx(g) == dag


def test_networkx_marks_round_trip(pag):
    g = to_networkx(pag)
    assert g.number_of_edges() == 2 * pag.n_edges
    assert g.edges["B", "C"]["mark"] == "arrow" and g.edges["C", "B"]["mark"] == "circle"
    assert g.edges["A", "E"]["mark"] == "circle" and g.edges["E", "A"]["mark"] == "tail"
    assert from_networkx(g) == pag
    # A DAG written with marks reads back the same.
    d = Graph.from_edges(["X", "Y"], [("X", "Y")])
    assert from_networkx(to_networkx(d, marks=True)) == d


def test_networkx_names_order_and_undirected():
    g = nx.Graph()
    g.add_edges_from([("A", "B"), ("B", "C")])
    got = from_networkx(g, names=["C", "B", "A"])
    assert got.names == ("C", "B", "A")
    assert {str(e) for e in got.edges()} == {"C --- B", "B --- A"}


def test_networkx_errors(pag):
    with pytest.raises(GraphError, match="has 'A o-o B'"):
        to_networkx(pag, marks=False)
    two = nx.DiGraph([("A", "B"), ("B", "A")])
    with pytest.raises(GraphError, match="both 'A'->'B' and 'B'->'A'"):
        from_networkx(two)
    with pytest.raises(GraphError, match="node 1 is not a string"):
        from_networkx(nx.DiGraph([(1, 2)]))
    mixed = nx.DiGraph()
    mixed.add_edge("A", "B", mark="arrow")
    mixed.add_edge("B", "A")
    with pytest.raises(GraphError, match="no 'mark' attribute"):
        from_networkx(mixed)
    one_sided = nx.DiGraph()
    one_sided.add_edge("A", "B", mark="arrow")
    with pytest.raises(GraphError, match="one end only"):
        from_networkx(one_sided)
    with pytest.raises(UnknownVariableError, match=r"\['Z'\] are not nodes, \['B'\] are missing"):
        from_networkx(nx.DiGraph([("A", "B")]), names=["A", "Z"])


# ---------------------------------------------------------------------- pgmpy
def test_pgmpy_round_trips(dag):
    from pgmpy.base import DAG
    from pgmpy.models import DiscreteBayesianNetwork

    model = to_pgmpy(dag)
    assert isinstance(model, DAG)
    assert list(model.nodes()) == NAMES
    assert set(model.edges()) == {("A", "B"), ("C", "B"), ("B", "D"), ("A", "E")}
    assert sorted(model.get_parents("B")) == ["A", "C"]
    assert from_pgmpy(model) == dag
    bn = to_pgmpy(dag, "bayesian_network")
    assert isinstance(bn, DiscreteBayesianNetwork)
    assert from_pgmpy(bn) == dag


def test_pgmpy_pdag_round_trip():
    cpdag = Graph.from_edges(["A", "B", "C", "D"], ["A --- B", ("B", "C"), ("D", "C")])
    pdag = to_pgmpy(cpdag, "pdag")
    assert pdag.directed_edges == {("B", "C"), ("D", "C")}
    assert pdag.undirected_edges == {("A", "B")}
    assert list(pdag.nodes()) == ["A", "B", "C", "D"]
    assert from_pgmpy(pdag) == cpdag
    # pgmpy's own PDAG constructor, nodes in its own order, read into a given order.
    from pgmpy.base import PDAG

    native = PDAG(directed_ebunch=[("B", "C"), ("D", "C")], undirected_ebunch=[("B", "A")])
    assert from_pgmpy(native, names=["A", "B", "C", "D"]) == cpdag


def test_pgmpy_errors(pag):
    with pytest.raises(GraphError, match="must be a DAG"):
        to_pgmpy(pag)
    with pytest.raises(GraphError, match="PDAG holds"):
        to_pgmpy(pag, "pdag")
    cyclic = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C"), ("C", "A")])
    with pytest.raises(CyclicGraphError, match="cycle"):
        to_pgmpy(cyclic)
    with pytest.raises(ConfigError, match="pgmpy kinds"):
        to_pgmpy(pag, "markov")  # type: ignore[arg-type]


# --------------------------------------------------------------- causal-learn
def test_causallearn_round_trip_and_matrix_convention(pag, dag):
    cl = to_causallearn(pag)
    assert cl.get_node_names() == NAMES
    i = {n: k for k, n in enumerate(NAMES)}
    # D --> E: tail (-1) at D, arrow (1) at E; graph[i, j] is the endpoint at i.
    assert cl.graph[i["D"], i["E"]] == -1 and cl.graph[i["E"], i["D"]] == 1
    # B o-> C: circle (2) at B.
    assert cl.graph[i["B"], i["C"]] == 2 and cl.graph[i["C"], i["B"]] == 1
    assert from_causallearn(cl) == pag
    assert from_causallearn(cl.graph, names=NAMES) == pag
    assert from_causallearn(cl, names=NAMES[::-1]) == pag.restrict(NAMES[::-1])
    # causal-learn's own accessors agree on the directed graph.
    cd = to_causallearn(dag)
    node = {n.get_name(): n for n in cd.get_nodes()}
    assert sorted(p.get_name() for p in cd.get_parents(node["B"])) == ["A", "C"]
    assert [c.get_name() for c in cd.get_children(node["B"])] == ["D"]
    assert cd.is_directed_from_to(node["A"], node["E"])
    assert not cd.is_directed_from_to(node["E"], node["A"])
    assert from_causallearn(cd) == dag


def test_causallearn_errors():
    with pytest.raises(GraphError, match="needs `names`"):
        from_causallearn(np.zeros((2, 2), dtype=int))
    bad = np.array([[0, 4], [5, 0]])  # causal-learn's TAIL_AND_ARROW / ARROW_AND_ARROW
    with pytest.raises(GraphError, match="endpoint 4 at 'A'"):
        from_causallearn(bad, names=["A", "B"])
