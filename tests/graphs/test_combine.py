"""Tests for fedstruct.graphs.combine: union, votes, strength rule, belief averaging."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import ConfigError, GraphError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.combine import (
    BeliefMatrix,
    average_beliefs,
    edge_votes,
    strength_vote,
    union,
    union_names,
    vote,
)
from fedstruct.graphs.graph import ARROW, CIRCLE, TAIL, Graph


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


# ------------------------------------------------------------------------ votes
def test_edge_votes_counts_only_observers(clients):
    v = edge_votes(clients, weights=[3, 1, 1])
    a, b, c = 0, 1, 2
    assert v.names == ("A", "B", "C")
    np.testing.assert_array_equal(v.observed, [[0, 4, 4], [4, 0, 3], [4, 3, 0]])
    np.testing.assert_array_equal(v.adjacent, [[0, 4, 1], [4, 0, 3], [1, 3, 0]])
    np.testing.assert_array_equal(v.directed, [[0, 3, 0], [1, 0, 3], [0, 0, 0]])
    np.testing.assert_array_equal(v.backward, v.directed.T)
    assert v.mark[ARROW, a, b] == 3 and v.mark[TAIL, a, b] == 1  # marks at B on A-B
    assert v.mark[TAIL, b, a] == 3 and v.mark[ARROW, b, a] == 1  # marks at A on A-B
    assert v.mark[ARROW, a, c] == 1 and v.mark[CIRCLE, c, a] == 1
    assert v.absent[a, c] == 3 and v.absent[c, a] == 3
    np.testing.assert_array_equal(v.mark.sum(axis=0), v.observed)


def test_vote_weighted_majority(clients):
    assert edges(vote(clients, weights=[3, 1, 1])) == {"A --> B", "B --> C"}
    # 1/4 of the observing weight reports A-C: above a 0.2 threshold only.
    assert edges(vote(clients, weights=[3, 1, 1], threshold=0.2)) == {
        "A --> B",
        "B --> C",
        "A o-> C",
    }


def test_vote_ties_give_circles(clients):
    # Equal weights: A->B vs B->A splits 1:1 at both ends -> o-o; A-C has 1/2, not > 1/2.
    assert edges(vote(clients)) == {"A o-o B", "B --> C"}


def test_vote_arrowhead_rule(clients):
    got = vote(clients, weights=[3, 1, 1], marks="arrowheads")
    assert edges(got) == {"A <-> B", "B o-> C"}


def test_vote_zero_weight_has_no_say(clients):
    got = vote(clients, weights=[0, 1, 1])
    assert edges(got) == {"B --> A", "A o-> C"}


def test_vote_rejects_bad_input(clients):
    with pytest.raises(ConfigError, match="threshold"):
        vote(clients, threshold=1.0)
    with pytest.raises(ConfigError, match=r"weight of graph 1 is -1\.0"):
        vote(clients, weights=[1, -1, 1])
    with pytest.raises(ConfigError, match="2 weights for 3 graphs"):
        vote(clients, weights=[1, 1])
    with pytest.raises(ConfigError, match="mark rules"):
        vote(clients, marks="nosuch")  # type: ignore[arg-type]


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


# ------------------------------------------------------------ belief averaging
@pytest.fixture
def beliefs() -> list[tuple[list[str], np.ndarray]]:
    b1 = (["A", "B"], np.array([[0.0, 0.8], [0.2, 0.0]]))
    b2 = (
        ["B", "C", "A"],
        np.array(
            [
                [0.0, 0.5, 0.6],  # B->C, B->A
                [0.1, 0.0, 0.3],  # C->B, C->A
                [0.4, 0.9, 0.0],  # A->B, A->C
            ]
        ),
    )
    return [b1, b2]


def test_average_beliefs_renormalises_per_entry(beliefs):
    out = average_beliefs(beliefs, weights=[1, 3])
    assert out.names == ("A", "B", "C")
    # A->B: (1*0.8 + 3*0.4) / 4; B->A: (1*0.2 + 3*0.6) / 4; the rest only from client 2.
    np.testing.assert_allclose(
        out.values, [[0.0, 0.5, 0.9], [0.5, 0.0, 0.5], [0.3, 0.1, 0.0]], atol=1e-12
    )


def test_average_beliefs_fill_extra_names_and_entry_weights(beliefs):
    w1 = np.array([[1.0, 0.0], [1.0, 1.0]])
    out = average_beliefs(beliefs, weights=[w1, 3.0], names=["A", "B", "C", "D"], fill=-1)
    assert out.values[0, 1] == pytest.approx(0.4)  # client 1 gives A->B weight 0
    assert out.values[1, 0] == pytest.approx(0.5)
    np.testing.assert_array_equal(out.values[3], [-1, -1, -1, -1])
    np.testing.assert_array_equal(out.values[:, 3], [-1, -1, -1, -1])
    # An entry whose only observer has weight 0 gets the fill value.
    only = average_beliefs(beliefs[:1], weights=[w1], fill=7.0)
    assert only.values[0, 1] == 7.0


def test_average_beliefs_keeps_minus_infinity_without_nan():
    logits = np.array([[-np.inf, 1.0], [-1.0, -np.inf]])
    out = average_beliefs([(["A", "B"], logits), (["A", "B"], logits + 1.0)], weights=[0, 2])
    np.testing.assert_array_equal(out.values, [[-np.inf, 2.0], [0.0, -np.inf]])
    out2 = average_beliefs([(["A", "B"], logits), (["A", "B"], logits + 1.0)])
    np.testing.assert_array_equal(out2.values, [[-np.inf, 1.5], [-0.5, -np.inf]])


def test_average_beliefs_bad_input(beliefs):
    with pytest.raises(GraphError, match="client 1 has shape"):
        average_beliefs([beliefs[0], (["A"], np.zeros((2, 2)))])
    with pytest.raises(ConfigError, match="weight of client 0 has shape"):
        average_beliefs(beliefs, weights=[np.ones((3, 3)), 1.0])
    with pytest.raises(ConfigError, match="1 weights for 2 clients"):
        average_beliefs(beliefs, weights=[1.0])
