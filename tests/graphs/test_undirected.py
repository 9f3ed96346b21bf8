"""Undirected graphs and the moral graph of a DAG."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from fedstruct.errors import CyclicGraphError, GraphError
from fedstruct.graphs.graph import NONE, TAIL, Graph
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.graphs.undirected import moral_graph, undirected, undirected_adjacency


def _pairs(graph: Graph) -> set[frozenset[str]]:
    return {frozenset((e.a, e.b)) for e in graph.edges()}


def test_undirected_marks_tails_at_both_ends():
    g = undirected(["A", "B", "C"], [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    assert g.names == ("A", "B", "C")
    expected = np.array([[NONE, TAIL, NONE], [TAIL, NONE, TAIL], [NONE, TAIL, NONE]])
    np.testing.assert_array_equal(g.marks, expected)
    assert [str(e) for e in g.edges()] == ["A --- B", "B --- C"]


@pytest.mark.parametrize(
    ("matrix", "needle"),
    [
        (np.zeros((2, 3)), "square"),
        (np.zeros((2, 2)), "expected (3, 3)"),
        ([[0, 1, 0], [0, 0, 0], [0, 0, 0]], "not symmetric: ['A', 'B']"),
        ([[0, 0, 0], [0, 1, 0], [0, 0, 0]], "self-loop on 'B'"),
        ([[0, 2, 0], [2, 0, 0], [0, 0, 0]], "0/1"),
    ],
)
def test_undirected_rejects_bad_matrices(matrix, needle):
    with pytest.raises(GraphError) as info:
        undirected(["A", "B", "C"], matrix)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_moral_graph_of_v_structure_marries_the_parents():
    dag = Graph.from_edges(["A", "B", "C"], [("A", "C"), ("B", "C")])
    moral = moral_graph(dag)
    assert _pairs(moral) == {frozenset("AB"), frozenset("AC"), frozenset("BC")}
    assert set(np.unique(moral.marks[moral.adjacency()]).tolist()) == {TAIL}


def test_moral_graph_of_a_chain_is_its_skeleton():
    dag = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C")])
    assert _pairs(moral_graph(dag)) == {frozenset("AB"), frozenset("BC")}


def test_moral_graph_small_dag_by_hand():
    # A -> B -> D <- C, D -> E <- C: D marries B and C; E's parents C, D are adjacent.
    dag = Graph.from_edges(
        list("ABCDE"), [("A", "B"), ("B", "D"), ("C", "D"), ("D", "E"), ("C", "E")]
    )
    moral = moral_graph(dag)
    assert moral.names == tuple("ABCDE")
    assert _pairs(moral) == {frozenset(p) for p in ("AB", "BD", "CD", "DE", "CE", "BC")}
    assert moral.n_edges == 6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_moral_graph_matches_networkx(seed):
    dag = erdos_renyi_dag(12, seed=seed, edges_per_node=1.5, shuffle=True)
    nxg = nx.DiGraph()
    nxg.add_nodes_from(dag.names)
    nxg.add_edges_from((e.a, e.b) for e in dag.edges())
    oracle = {frozenset(e) for e in nx.moral_graph(nxg).edges()}
    assert _pairs(moral_graph(dag)) == oracle


def test_moral_graph_requires_a_dag():
    cycle = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C"), ("C", "A")])
    with pytest.raises(CyclicGraphError, match="cycle"):
        moral_graph(cycle)
    with pytest.raises(GraphError, match="non-directed edge 'A o-> B'"):
        moral_graph(Graph.from_edges(["A", "B"], ["A o-> B"]))


def test_undirected_adjacency_is_symmetric_copy():
    g = Graph.from_edges(["A", "B", "C"], [("A", "B"), "B o-o C"])
    adj = undirected_adjacency(g)
    expected = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)
    np.testing.assert_array_equal(adj, expected)
    adj[0, 0] = True  # a writable copy: the graph is untouched
    assert not g.adjacency()[0, 0]
