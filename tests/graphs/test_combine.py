"""Tests for fedstruct.graphs.combine: union and the three-way strength rule."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import ConfigError, GraphError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.combine import BeliefMatrix, strength_vote, union, union_names
from fedstruct.graphs.graph import Graph


def edges(g: Graph) -> set[str]:
    return {str(e) for e in g.edges()}


@pytest.fixture
def clients() -> list[Graph]:
    """Three clients over different variables (weights used below: 3, 1, 1)."""
    g1 = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C")])
    g2 = Graph.from_edges(["B", "A"], [("B", "A")])
    g3 = Graph.from_edges(["A", "C"], ["A o-> C"])
    return [g1, g2, g3]


# ------------------------------------------------------------------------ union
def test_union_paper_example_keeps_only_arrowheads():
    # FedCDnv Section 3.2.3: X o-o Y, X o-> Y and X -> Y give X o-> Y.
    gs = [
        Graph.from_edges(["X", "Y"], ["X o-o Y"]),
        Graph.from_edges(["X", "Y"], ["X o-> Y"]),
        Graph.from_edges(["X", "Y"], [("X", "Y")]),
    ]
    assert edges(union(gs)) == {"X o-> Y"}
    # A single directed edge loses its tail.
    assert edges(union(gs[2:])) == {"X o-> Y"}


def test_union_over_different_variable_sets(clients):
    u = union(clients)
    assert u.names == ("A", "B", "C")
    assert edges(u) == {"A <-> B", "B o-> C", "A o-> C"}


def test_union_names_order_and_extra_variable(clients):
    u = union(clients, names=["D", "C", "B", "A"])
    assert u.names == ("D", "C", "B", "A")
    assert u.neighbors("D") == ()
    assert str(u.edge("B", "C")) == "B o-> C"
    assert union_names([clients[1], clients[2], clients[0]]) == ("B", "A", "C")


def test_union_missing_name_raises(clients):
    with pytest.raises(UnknownVariableError, match=r"graph 0 has variables \['C'\]"):
        union(clients, names=["A", "B"])


# ----------------------------------------------------------------- strength rule
def test_strength_vote_directed_graphs_and_cycle():
    g1 = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C")])
    g2 = Graph.from_edges(["A", "B"], [("B", "A")])
    g3 = Graph.from_edges(["B", "C"], [("C", "B")])
    g4 = Graph.from_edges(["A", "C"], [("C", "A")])
    res = strength_vote([g1, g2, g3, g4], weights=[3, 2, 2, 4])
    # A-B: 3 vs 2 vs 0; B-C: 3 vs 2 vs 0; A-C: none 3 vs C->A 4.
    assert edges(res.graph) == {"A --> B", "B --> C", "C --> A"}
    np.testing.assert_allclose(res.strength, [[0, 3, 0], [0, 0, 3], [4, 0, 0]])
    np.testing.assert_allclose(res.forward, [[0, 3, 0], [2, 0, 3], [4, 2, 0]])
    np.testing.assert_allclose(res.absent, [[0, 0, 3], [0, 0, 0], [3, 0, 0]])
    np.testing.assert_allclose(res.observed, [[0, 5, 7], [5, 0, 5], [7, 5, 0]])
    assert not res.tied.any()


def test_strength_vote_confidences_and_seeded_ties():
    c1 = BeliefMatrix(("A", "B"), np.array([[0.0, 0.6], [0.1, 0.0]]))
    # Client 2 orders its variables B, A, C.
    s2 = np.array(
        [
            [0.0, 0.5, 0.45],  # B->A, B->C
            [0.2, 0.0, 0.1],  # A->B, A->C
            [0.45, 0.1, 0.0],  # C->B, C->A
        ]
    )
    sources = [c1, (["B", "A", "C"], s2)]
    res = strength_vote(sources, weights=[1, 2], seed=7)
    # A-B: A->B 0.6+0.4=1.0, B->A 0.1+1.0=1.1, none 0.3+0.6=0.9 -> B->A.
    assert res.forward[0, 1] == pytest.approx(1.0)
    assert res.forward[1, 0] == pytest.approx(1.1)
    assert res.absent[0, 1] == pytest.approx(0.9)
    assert res.strength[1, 0] == pytest.approx(1.1)
    # A-C: none 1.6 beats 0.2 / 0.2.
    assert res.absent[0, 2] == pytest.approx(1.6)
    assert not res.graph.is_adjacent("A", "C")
    # B-C: 0.9 vs 0.9 (none 0.2): a tie decided by the third draw (pairs AB, AC, BC).
    assert res.tied[1, 2] and res.tied.sum() == 2
    u = np.random.default_rng(7).random(3)[2]
    expected = "B --> C" if u < 0.5 else "C --> B"
    assert expected in edges(res.graph)
    outcomes = set()
    for seed in range(20):
        g = strength_vote(sources, weights=[1, 2], seed=seed).graph
        outcomes.add(g.is_adjacent("B", "C") and g.directed()[1, 2])
        assert g.is_adjacent("B", "C")
        assert edges(strength_vote(sources, weights=[1, 2], seed=seed).graph) == edges(g)
    assert outcomes == {True, False}


def test_strength_vote_unobserved_pair_has_no_edge():
    g1 = Graph.from_edges(["A", "B"], [])
    g2 = Graph.from_edges(["B", "C"], [])
    res = strength_vote([g1, g2], seed=0)
    # A-C is observed by nobody: no random edge although all three supports are 0.
    assert res.graph.n_edges == 0
    assert res.observed[0, 2] == 0 and not res.tied[0, 2]


def test_strength_vote_rejects_non_directed_and_bad_probabilities():
    with pytest.raises(GraphError, match="graph 1 has the non-directed edge 'A o-> B'"):
        strength_vote([Graph.from_edges(["A", "B"], []), Graph.from_edges(["A", "B"], ["A o-> B"])])
    with pytest.raises(GraphError, match="exceeds 1"):
        strength_vote([(["A", "B"], [[0, 0.7], [0.5, 0]])])
    with pytest.raises(NonFiniteDataError, match="client 0 has NaN"):
        strength_vote([(["A", "B"], [[0, np.nan], [0.5, 0]])])
    with pytest.raises(GraphError, match="client 0 has shape"):
        strength_vote([(["A"], np.zeros((2, 2)))])
    chain = Graph.from_edges(["A", "B"], [("A", "B")])
    with pytest.raises(ConfigError, match=r"weight of graph 1 is -1\.0"):
        strength_vote([chain, chain], weights=[1, -1])
    with pytest.raises(ConfigError, match="1 weights for 2 graphs"):
        strength_vote([chain, chain], weights=[1])
