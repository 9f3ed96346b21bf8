"""Tests for fedstruct.graphs.metrics (worked examples of docs/graphs.md)."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import ConfigError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import (
    Scores,
    ancestral_pairs,
    edge_scores,
    edge_site_votes,
    fdr,
    graph_metrics,
    orientation_scores,
    pair_disagreement,
    relation_fdr,
    shd,
    site_agreement,
)

NAMES = ["A", "B", "C", "D"]


@pytest.fixture
def dag_pair() -> tuple[Graph, Graph]:
    truth = Graph.from_edges(NAMES, [("A", "B"), ("C", "B"), ("B", "D")])
    # Correct A->B, reversed B-C, missing B-D, extra A-D; stored in another order.
    pred = Graph.from_edges(["D", "C", "B", "A"], [("A", "B"), ("B", "C"), ("A", "D")])
    return truth, pred


@pytest.fixture
def pag_pair() -> tuple[Graph, Graph]:
    truth = Graph.from_edges(NAMES, ["A o-> B", "C o-> B", "B --> D"])
    pred = Graph.from_edges(NAMES, ["A o-o B", "B <-> C", "B o-> D", "A o-o C"])
    return truth, pred


def prf(s: Scores) -> tuple[float, float, float]:
    return s.precision, s.recall, s.f1


def test_dag_example(dag_pair):
    truth, pred = dag_pair
    assert shd(truth, pred) == 3
    assert pair_disagreement(truth, pred) == 3
    e = edge_scores(truth, pred)
    assert (e.n_true, e.n_pred, e.n_correct) == (3, 3, 2)
    assert prf(e) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    for convention in ("edge", "arrowhead", "tail"):
        s = orientation_scores(truth, pred, convention)
        assert (s.n_true, s.n_pred, s.n_correct) == (3, 3, 1), convention


def test_pag_example(pag_pair):
    truth, pred = pag_pair
    assert shd(truth, pred) == 4
    e = edge_scores(truth, pred)
    assert prf(e) == pytest.approx((3 / 4, 1.0, 6 / 7))
    edge = orientation_scores(truth, pred, "edge")
    assert (edge.n_true, edge.n_pred, edge.n_correct) == (3, 2, 0)
    assert prf(edge) == (0.0, 0.0, 0.0)
    arrow = orientation_scores(truth, pred, "arrowhead")
    assert (arrow.n_true, arrow.n_pred, arrow.n_correct) == (3, 3, 2)
    assert prf(arrow) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    tail = orientation_scores(truth, pred, "tail")
    assert (tail.n_true, tail.n_pred, tail.n_correct) == (1, 0, 0)
    assert prf(tail) == (0.0, 0.0, 0.0)


def test_orientation_edge_convention_counts_exact_marks():
    truth = Graph.from_edges(["A", "B", "C"], ["A o-> B", ("C", "B")])
    pred = Graph.from_edges(["A", "B", "C"], ["A o-> B", "C o-> B"])
    s = orientation_scores(truth, pred, "edge")
    assert (s.n_true, s.n_pred, s.n_correct) == (2, 2, 1)
    assert orientation_scores(truth, pred, "arrowhead").n_correct == 2
    # CPDAG: an undirected edge carries no orientation.
    cpdag = Graph.from_edges(["A", "B", "C"], ["A --- B", ("C", "B")])
    s2 = orientation_scores(cpdag, cpdag, "edge")
    assert (s2.n_true, s2.n_pred, s2.n_correct) == (1, 1, 1)


def test_zero_division_conventions():
    empty = Graph.empty(NAMES)
    full = Graph.from_edges(NAMES, [("A", "B")])
    assert prf(edge_scores(empty, empty)) == (1.0, 1.0, 1.0)
    assert prf(edge_scores(full, empty)) == (0.0, 0.0, 0.0)
    assert prf(edge_scores(empty, full)) == (0.0, 0.0, 0.0)
    assert shd(empty, empty) == 0
    assert shd(full, empty) == 1


def test_metrics_require_the_same_variables():
    a = Graph.from_edges(["A", "B", "C"], [])
    b = Graph.from_edges(["A", "B", "E"], [])
    message = r"only in truth: \['C'\], only in prediction: \['E'\]"
    with pytest.raises(UnknownVariableError, match=message):
        shd(a, b)
    with pytest.raises(ConfigError, match="orientation convention"):
        orientation_scores(a, a, "mark")  # type: ignore[arg-type]


def test_pair_disagreement_needs_directed_graphs(pag_pair):
    with pytest.raises(
        GraphError, match=r"first graph of a pair disagreement must be directed.*'A o-> B'"
    ):
        pair_disagreement(*pag_pair)


def test_fdr_generic_and_relations(dag_pair):
    assert fdr({1, 2, 3}, {1, 4}) == pytest.approx(2 / 3)
    assert fdr([], {1}) == 0.0
    truth, pred = dag_pair
    r = relation_fdr(truth, pred)
    # Predicted adjacent AB, BC, AD (AD wrong); non-adjacent AC, BD, CD (BD wrong).
    assert (r.n_causal, r.n_noncausal) == (3, 3)
    assert (r.fdr_causal, r.fdr_noncausal) == pytest.approx((1 / 3, 1 / 3))
    sub = relation_fdr(truth, pred, pairs=[("A", "B"), ("D", "B"), ("A", "D"), ("B", "A")])
    assert (sub.n_causal, sub.n_noncausal) == (2, 1)
    assert (sub.fdr_causal, sub.fdr_noncausal) == (0.5, 1.0)
    assert sub.as_dict("_d") == {"fdr_causal_d": 0.5, "fdr_noncausal_d": 1.0}


def test_ancestral_pairs(dag_pair):
    truth, pred = dag_pair
    assert ancestral_pairs(truth) == {("A", "B"), ("A", "D"), ("C", "B"), ("C", "D"), ("B", "D")}
    # pred: A->B, B->C, A->D gives AB, AC, AD, BC; AC and BC are not in the truth.
    assert fdr(ancestral_pairs(pred), ancestral_pairs(truth)) == 0.5


def test_graph_metrics_is_flat(pag_pair):
    got = graph_metrics(*pag_pair)
    assert set(got) == {
        "shd", "n_edges_true", "n_edges_pred",
        "precision_edge", "recall_edge", "f1_edge",
        "precision_orientation", "recall_orientation", "f1_orientation",
        "precision_arrowhead", "recall_arrowhead", "f1_arrowhead",
        "precision_tail", "recall_tail", "f1_tail",
    }  # fmt: skip
    assert got["shd"] == 4.0 and got["n_edges_pred"] == 4.0
    assert got["f1_edge"] == pytest.approx(6 / 7)
    assert got["precision_arrowhead"] == pytest.approx(2 / 3)
    assert all(isinstance(v, float) for v in got.values())


def _random_mark_graph(rng: np.random.Generator, names: list[str]) -> Graph:
    n = len(names)
    kinds = [(1, 2), (2, 1), (2, 2), (3, 2), (2, 3), (3, 3), (1, 1)]
    m = np.zeros((n, n), dtype=np.int8)
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < 0.4:
                at_i, at_j = kinds[rng.integers(len(kinds))]
                m[i, j], m[j, i] = at_j, at_i
    return Graph(names, m)


def test_against_causallearn_on_random_graphs():
    from causallearn.graph.AdjacencyConfusion import AdjacencyConfusion
    from causallearn.graph.ArrowConfusion import ArrowConfusion
    from causallearn.graph.SHD import SHD

    from fedstruct.graphs.convert import to_causallearn

    rng = np.random.default_rng(0)
    names = [f"V{i}" for i in range(8)]
    for _ in range(20):
        truth = _random_mark_graph(rng, names)
        pred = _random_mark_graph(rng, names)
        ct, cp = to_causallearn(truth), to_causallearn(pred)
        # Evaluate with the prediction stored in another order: alignment is by name.
        shuffled = pred.restrict(list(rng.permutation(names)))
        assert shd(truth, shuffled) == SHD(ct, cp).get_shd()
        adj = AdjacencyConfusion(ct, cp)
        e = edge_scores(truth, shuffled)
        assert e.n_correct == adj.get_adj_tp()
        assert e.n_pred - e.n_correct == adj.get_adj_fp()
        assert e.n_true - e.n_correct == adj.get_adj_fn()
        arrows = ArrowConfusion(ct, cp)
        a = orientation_scores(truth, shuffled, "arrowhead")
        assert a.n_correct == arrows.get_arrows_tp()
        assert a.n_pred - a.n_correct == arrows.get_arrows_fp()
        assert a.n_true - a.n_correct == arrows.get_arrows_fn()


def test_each_edge_s_site_vote_and_their_mean_agreement():
    graph = Graph.from_edges(list("abcd"), ["a --> b", "b o-> c", "c <-> d"])
    one = Graph.from_edges(list("abc"), ["a --> b", "b --> c"])
    two = Graph.from_edges(list("abc"), ["a o-o b"])  # marks are not compared
    three = Graph.from_edges(list("cd"), [])
    votes = edge_site_votes(graph, [one, two, three])
    assert votes == {("a", "b"): (2, 2), ("b", "c"): (1, 2), ("c", "d"): (0, 1)}
    assert site_agreement(graph, [one, two, three]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert edge_site_votes(graph, []) == {e: (0, 0) for e in votes}
    assert site_agreement(graph, []) == 1.0
