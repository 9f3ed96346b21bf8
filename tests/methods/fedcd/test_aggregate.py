"""FED-CD aggregation (§5.1-§5.2): exact reliabilities, weights and averages."""

import numpy as np
import pytest

from fedstruct.errors import ConfigError
from fedstruct.methods.fedcd.aggregate import (
    aggregate_beliefs,
    distances_from,
    edge_entropy,
    proximity_scores,
    proximity_weights,
    vote_weights,
)
from fedstruct.methods.fedcd.learner import Beliefs

CHAIN = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=bool)  # 0 -> 1 -> 2


def logit(p):
    return np.log(p) - np.log1p(-p)


def test_directed_distances_follow_the_arrows():
    np.testing.assert_array_equal(distances_from(CHAIN, [0]), [0, 1, 2])
    np.testing.assert_array_equal(distances_from(CHAIN, [2]), [np.inf, np.inf, 0])
    np.testing.assert_array_equal(distances_from(CHAIN, [1, 0]), [0, 0, 1])


def test_proximity_scores_are_discounted_mass_with_a_floor():
    scores = proximity_scores(CHAIN, [[0], [2]], mass=16.0, discount=0.2, min_mass=0.1)
    # client 0 intervenes on the chain's source: the edge leaving it gets m, the next m·α
    assert scores[0, 0, 1] == pytest.approx(16.0)
    assert scores[0, 1, 2] == pytest.approx(3.2)
    # client 1 intervenes on the sink: nothing is downstream, so the floor
    assert scores[1, 0, 1] == pytest.approx(0.1)
    assert scores[1, 1, 2] == pytest.approx(0.1)
    # a pair that is no edge of the reference graph: the floor for everybody
    assert scores[:, 0, 2].tolist() == pytest.approx([0.1, 0.1])
    np.testing.assert_array_equal(scores, scores.transpose(0, 2, 1))


def test_softmax_weights_match_eq1():
    scores = proximity_scores(CHAIN, [[0], [2]], mass=16.0, discount=0.2, min_mass=0.1)
    w = proximity_weights(scores, temperature=0.3, weighting="softmax")
    expected = np.exp(0.3 * 16) / (np.exp(0.3 * 16) + np.exp(0.3 * 0.1))
    assert w[0, 0, 1] == pytest.approx(expected)
    assert w[:, 0, 2].tolist() == pytest.approx([0.5, 0.5])
    n = proximity_weights(scores, temperature=0.3, weighting="normalize")
    assert n[0, 1, 2] == pytest.approx(3.2 / 3.3)
    np.testing.assert_allclose(w.sum(axis=0), 1.0)


def test_voting_is_proximity_with_unit_discount_and_equal_mass():
    full = np.triu(np.ones((3, 3), dtype=bool), 1)
    scores = proximity_scores(full, [[0], [0]], mass=1.0, discount=1.0, min_mass=0.0)
    w = proximity_weights(scores, temperature=1.0, weighting="normalize")
    np.testing.assert_allclose(w[:, 0, 1], [0.5, 0.5])


def test_vote_weights_are_data_shares():
    assert vote_weights([100, 300]).tolist() == pytest.approx([0.25, 0.75])
    with pytest.raises(ConfigError):
        vote_weights([0, 3])


def test_probability_average_matches_eq2_and_keeps_theta_antisymmetric():
    g1, g2 = np.zeros((3, 3)), np.zeros((3, 3))
    g1[0, 1], g2[0, 1] = logit(0.9), logit(0.5)
    t1, t2 = np.zeros((3, 3)), np.zeros((3, 3))
    t1[0, 1], t1[1, 0] = logit(0.8), -logit(0.8)
    t2[0, 1], t2[1, 0] = logit(0.4), -logit(0.4)
    merged = aggregate_beliefs([Beliefs(g1, t1), Beliefs(g2, t2)], np.array([0.75, 0.25]))
    assert merged.gamma[0, 1] == pytest.approx(logit(0.8))
    assert merged.theta[0, 1] == pytest.approx(logit(0.7))
    np.testing.assert_allclose(merged.theta, -merged.theta.T)
    logits = aggregate_beliefs([Beliefs(g1, t1), Beliefs(g2, t2)], np.array([0.75, 0.25]), "logit")
    assert logits.gamma[0, 1] == pytest.approx(0.75 * logit(0.9))


def test_edge_entropy_is_zero_on_agreement_and_one_bit_on_a_split():
    a = CHAIN.copy()
    b = CHAIN.copy()
    b[0, 1] = False
    assert edge_entropy([a, a]) == 0.0
    assert edge_entropy([a, b]) == pytest.approx(1 / 6)


def test_undirected_distance_reaches_edges_into_an_intervention():
    # 0 -> 1 -> 2 -> 3 and 4 -> 2; client 0 intervenes on 2, client 1 on 0
    dag = np.zeros((5, 5), dtype=bool)
    dag[0, 1] = dag[1, 2] = dag[2, 3] = dag[4, 2] = True
    targets = [[2], [0]]
    out = proximity_scores(dag, targets, mass=16.0, discount=0.5, min_mass=0.1)
    und = proximity_scores(dag, targets, 16.0, 0.5, 0.1, distance="undirected")
    # outgoing (the reference code): only 2 -> 3 leaves client 0's target
    assert [out[0, i, j] for i, j in ((0, 1), (1, 2), (2, 3), (4, 2))] == pytest.approx(
        [0.1, 0.1, 16.0, 0.1]
    )
    # undirected (§5.2): every edge touching 2 gets m, 0 -> 1 is one step further
    assert [und[0, i, j] for i, j in ((0, 1), (1, 2), (2, 3), (4, 2))] == pytest.approx(
        [8.0, 16.0, 16.0, 16.0]
    )
    # client 1 at the source: 4 -> 2 is two steps away on the skeleton, unreachable outgoing
    assert [und[1, i, j] for i, j in ((0, 1), (1, 2), (2, 3), (4, 2))] == pytest.approx(
        [16.0, 8.0, 4.0, 4.0]
    )
    assert [out[1, i, j] for i, j in ((0, 1), (1, 2), (2, 3), (4, 2))] == pytest.approx(
        [16.0, 8.0, 4.0, 0.1]
    )
    np.testing.assert_array_equal(und, und.transpose(0, 2, 1))
    with pytest.raises(ConfigError, match="unknown distance"):
        proximity_scores(dag, targets, 16.0, 0.5, 0.1, distance="sideways")


def test_undirected_distance_gives_the_head_s_client_its_edge_in_the_average():
    # 0 -> 1; client 0 intervenes on the head 1, client 1 on nothing (floor only)
    dag = np.array([[0, 1], [0, 0]], dtype=bool)
    g0, g1 = np.full((2, 2), logit(0.9)), np.full((2, 2), logit(0.3))
    t0 = np.array([[0.0, logit(0.8)], [-logit(0.8), 0.0]])
    beliefs = [Beliefs(g0, t0), Beliefs(g1, np.zeros((2, 2)))]
    expected_w = np.exp(0.3 * 16) / (np.exp(0.3 * 16) + np.exp(0.3 * 0.1))
    for distance, w in (("outgoing", 0.5), ("undirected", expected_w)):
        scores = proximity_scores(dag, [[1], []], 16.0, 0.2, 0.1, distance=distance)
        weights = proximity_weights(scores, temperature=0.3, weighting="softmax")
        assert weights[0, 0, 1] == pytest.approx(w)
        merged = aggregate_beliefs(beliefs, weights)
        assert merged.gamma[0, 1] == pytest.approx(logit(0.9 * w + 0.3 * (1 - w)))
        assert merged.theta[0, 1] == pytest.approx(logit(0.8 * w + 0.5 * (1 - w)))
        assert merged.theta[1, 0] == pytest.approx(-merged.theta[0, 1])
