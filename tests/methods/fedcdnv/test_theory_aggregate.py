import numpy as np
import pytest

from fedstruct.errors import ConfigError
from fedstruct.graphs import Graph
from fedstruct.methods.fedcdnv.aggregate import ClientReport, aggregate
from fedstruct.methods.fedcdnv.pvalues import check_interval, read_scaled, scale_pvalues
from fedstruct.methods.fedcdnv.server import definite_graph, feddg_status
from fedstruct.methods.fedcdnv.theory import definite_pairs, observed_together, status_matrix

ABCD = ["A", "B", "C", "D"]
SETS = [["A", "B", "C"], ["B", "C", "D"]]  # (A, D) is the only non-overlapping pair


def stat_of(edges):
    return status_matrix(Graph.from_edges(ABCD, edges), observed_together(ABCD, SETS))


def test_observed_together():
    together = observed_together(ABCD, SETS)
    assert together.sum() == 2 * 5  # 6 pairs, all but (A, D)
    assert not together[0, 3] and not together[3, 0] and not together.diagonal().any()


def test_theorem_31_makes_a_non_overlapping_pair_definite():
    # A - B, C - D: A_A = {B}, A_D = {C} disjoint; <A, C> and <B, D> overlap.
    stat = stat_of(["A o-o B", "C o-o D"])
    expected = np.array([[0, 2, -2, -2], [2, 0, -2, -2], [-2, -2, 0, 2], [-2, -2, 2, 0]])
    np.testing.assert_array_equal(stat, expected)


def test_lemma_33_taints_an_edge_whose_neighbourhood_holds_a_non_overlapping_pair():
    # adding B - C: A_B ∪ A_C = {A, B, C, D} contains <A, D>
    stat = stat_of(["A o-o B", "B o-o C", "C o-o D"])
    assert stat[0, 3] == -2  # Theorem 3.1 still holds
    assert stat[1, 2] == 1  # Lemma 3.3
    assert stat[0, 1] == 2 and stat[2, 3] == 2


def test_lemma_32_taints_the_edges_of_a_non_definite_pair():
    # A - B, B - D, C - D: A_A ∩ A_D = {B}, so <A, D> stays non-definite (-1)
    stat = stat_of(["A o-o B", "B o-o D", "C o-o D"])
    assert stat[0, 3] == -1
    assert stat[0, 1] == 1 and stat[1, 3] == 1 and stat[2, 3] == 1  # touch A or D
    assert stat[1, 2] == -2  # overlapping, non-adjacent: stays definite


def test_feddg_reads_g0s_status_by_default_and_fedgs_as_an_option():
    # G0: A - B - C - D (Lemma 3.3 makes B - C non-definite); TPSS removed C - D.
    g0 = Graph.from_edges(ABCD, ["A o-o B", "B o-o C", "C o-o D"])
    fed = Graph.from_edges(ABCD, ["A o-o B", "B o-o C"])
    together = observed_together(ABCD, SETS)
    stat0 = status_matrix(g0, together)
    # G0's reading (Algorithm 1, line 17): C - D had status 2 but FedG dropped it, so it
    # is neither definite causal nor definite non-causal; <A, D> stays -2 (Theorem 3.1).
    g0_read = feddg_status("g0", stat0, fed, together)
    np.testing.assert_array_equal(g0_read, stat0)
    assert definite_pairs(g0_read, ABCD, fed) == (
        [("A", "B")],
        [("A", "C"), ("A", "D"), ("B", "D")],
    )
    assert [str(e) for e in definite_graph(fed, g0_read).edges()] == ["A o-o B"]
    # FedG's own status: D has no neighbour, so <A, D> is -1 and Lemma 3.2 demotes A - B;
    # C - D, overlapping and absent, becomes definite non-causal.
    fedg_read = feddg_status("fedg", stat0, fed, together)
    expected = np.array([[0, 1, -2, -1], [1, 0, 2, -2], [-2, 2, 0, -2], [-1, -2, -2, 0]])
    np.testing.assert_array_equal(fedg_read, expected)
    assert definite_pairs(fedg_read, ABCD, fed) == definite_pairs(fedg_read, ABCD)
    assert definite_pairs(fedg_read, ABCD) == (
        [("B", "C")],
        [("A", "C"), ("B", "D"), ("C", "D")],
    )
    assert [str(e) for e in definite_graph(fed, fedg_read).edges()] == ["B o-o C"]


def test_pvalue_scaling_eq2():
    alpha, t1, t2 = 0.05, 0.049, 0.45
    check_interval(alpha, t1, t2)
    p = np.array([0.0, 0.0005, 0.001, 0.03, 0.05, 0.3, 0.5, 0.7])
    s = scale_pvalues(p, alpha, t1, t2)
    np.testing.assert_allclose(
        s, [0.0, 0.0005, -1.0, -(0.02 / 0.049), -0.0, -(0.25 / 0.45), -1.0, 0.7]
    )
    inside, p_hat = read_scaled(s)
    assert inside.tolist() == [False, False, True, True, True, True, True, False]
    np.testing.assert_allclose(p_hat, np.abs(s))
    with pytest.raises(ConfigError, match="theta1"):
        check_interval(0.05, 0.06, 0.45)


def report(name, names, edges, n, scaled=None, sepsets=None):
    return ClientReport(name, Graph.from_edges(names, edges), n, scaled, sepsets or {})


def test_consistent_pairs_follow_the_clients_and_marks_keep_only_arrowheads():
    r1 = report("c1", ["X", "Y", "Z"], ["X --> Y"], 100)
    r2 = report("c2", ["Y", "Z"], [], 100)
    agg = aggregate([r1, r2], ["X", "Y", "Z"], "vote")
    assert [str(e) for e in agg.graph.edges()] == ["X o-> Y"]
    assert agg.decisions == {}


def test_vote_and_largest():
    adjacent = report("big", ["X", "Y"], ["X o-o Y"], 300)
    apart1 = report("s1", ["X", "Y"], [], 100)
    apart2 = report("s2", ["X", "Y"], [], 150)
    vote = aggregate([adjacent, apart1, apart2], ["X", "Y"], "vote")
    assert vote.graph.is_adjacent("X", "Y")  # 300 for, 250 against
    assert vote.decisions[("X", "Y")] == pytest.approx((300 - 250) / 550)
    largest = aggregate([apart1, adjacent], ["X", "Y"], "largest")
    assert largest.graph.is_adjacent("X", "Y")
    smaller = report("s3", ["X", "Y"], [], 400)
    assert not aggregate([adjacent, smaller], ["X", "Y"], "largest").graph.is_adjacent("X", "Y")


def test_tpss_second_level_eq1_and_eq3():
    names = ["X", "Y"]
    stat = np.array([[0, 2], [2, 0]], dtype=np.int8)
    # c1: adjacent, p = 1e-4 outside the interval, definite -> stable, weight 1
    c1 = report(
        "c1",
        names,
        ["X --> Y"],
        300,
        scale_pvalues(np.array([[0, 1e-4], [1e-4, 0]]), 0.05, 0.049, 0.45),
    )
    # c2: not adjacent, p = 0.3 inside -> p_hat = 0.25 / 0.45; non-stable
    c2 = report(
        "c2",
        names,
        [],
        100,
        scale_pvalues(np.array([[0, 0.3], [0.3, 0]]), 0.05, 0.049, 0.45),
        {("X", "Y"): ()},
    )
    agg = aggregate([c1, c2], names, "tpss", stat=stat)
    p_hat = 0.25 / 0.45
    w2 = p_hat * 1 / (p_hat + 1)  # eq. (3) as written: count = non-stable clients (1)
    assert agg.decisions[("X", "Y")] == pytest.approx(0.75 * 1 - 0.25 * w2)
    assert agg.graph.is_adjacent("X", "Y")
    w2_obs = p_hat * 2 / (p_hat + 1)  # count = observers (2)
    agg_obs = aggregate([c1, c2], names, "tpss", stat=stat, weight_count="observers")
    assert agg_obs.decisions[("X", "Y")] == pytest.approx(0.75 - 0.25 * w2_obs)


def test_tpss_first_level_condition_37():
    # c1 sees X o-o Y but not Z, which separates X and Y at c2: the edge is explained.
    zeros = np.zeros((3, 3))
    c1 = report("c1", ["X", "Y", "W"], ["X o-o Y"], 500, zeros)
    c2 = report("c2", ["X", "Y", "Z"], ["X o-o Z", "Z o-o Y"], 100, zeros, {("X", "Y"): ("Z",)})
    stat = np.zeros((4, 4), dtype=np.int8)
    agg = aggregate([c1, c2], ["X", "Y", "W", "Z"], "tpss", stat=stat)
    assert agg.decisions[("X", "Y")] == "level 1"
    assert not agg.graph.is_adjacent("X", "Y")
    # If c1 observed Z too, it could have tested with it: no longer explained.
    c1z = report("c1", ["X", "Y", "Z"], ["X o-o Y"], 500, zeros)
    agg = aggregate([c1z, c2], ["X", "Y", "Z"], "tpss", stat=np.zeros((3, 3), np.int8))
    assert agg.decisions[("X", "Y")] != "level 1"


def test_tpss_first_level_condition_36():
    # c1: X <-> Y without L; c2 sees X <-o L o-> Y and X, Y apart: L confounds them.
    zeros = np.zeros((3, 3))
    c1 = report("c1", ["X", "Y", "V"], ["X <-> Y"], 500, zeros)
    c2 = report("c2", ["X", "Y", "L"], ["L o-> X", "L o-> Y"], 100, zeros, {("X", "Y"): ("L",)})
    agg = aggregate([c1, c2], ["X", "Y", "V", "L"], "tpss", stat=np.zeros((4, 4), np.int8))
    assert agg.decisions[("X", "Y")] == "level 1"
    # A directed edge is never explained by the variable sets.
    c1d = report("c1", ["X", "Y", "V"], ["X --> Y"], 500, zeros)
    agg = aggregate([c1d, c2], ["X", "Y", "V", "L"], "tpss", stat=np.zeros((4, 4), np.int8))
    assert isinstance(agg.decisions[("X", "Y")], float)
