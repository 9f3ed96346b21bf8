"""CAFE's server aggregation, client uploads, and end-to-end learning on digits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedstruct.data.datasets.images import load_digits
from fedstruct.errors import ConfigError, PartitionError
from fedstruct.fl import LateReply, Message, Participation
from fedstruct.fl.params import get_params
from fedstruct.methods.cafe import CAFE, CafeClient, CafeConfig, CafeServer
from fedstruct.methods.cafe.client import FIT, prefixed
from fedstruct.methods.cafe.sources import image_clients


class ScriptedGrid:
    """A grid whose answers are given: fresh replies and late replies."""

    secure_aggregation = None  # replies one by one

    def __init__(self, replies: dict[int, Message], late: list[LateReply]) -> None:
        self.replies, self.late, self.sent = replies, late, {}

    def node_ids(self) -> list[int]:
        return sorted(self.replies)

    def available_ids(self) -> list[int]:
        return sorted(self.replies)

    def send_and_receive(self, messages):
        self.sent.update(messages)
        return {n: self.replies[n] for n in messages if n in self.replies}

    def late_replies(self) -> list[LateReply]:
        return self.late


def _server(**params) -> CafeServer:
    return CafeServer((1, 4, 4), 3, CafeConfig(backbone="mlp", feature_dim=4, **params), seed=0)


def _update(state_params, value: float, n: int, drift=None) -> Message:
    arrays = prefixed("delta:", {k: np.full_like(v, value) for k, v in state_params.items()})
    if drift is not None:
        arrays["drift_local"] = np.asarray(drift, dtype=np.float32)
    return Message(FIT, arrays=arrays, metrics={"n": n, "loss": 1.0})


def test_history_aware_average_and_stale_weights_follow_the_formulas():
    server = _server(history_momentum=0.5, global_drift_momentum=0.8, staleness_exponent=1.0)
    state = server.init_state()
    p0 = state.params
    fresh = {0: _update(p0, 1.0, 1, [1, 0, 0, 0]), 1: _update(p0, 3.0, 3, [0, 1, 0, 0])}
    # a late update (staleness 1) weighs n (1 + 1)^-1 = 4 / 2 = 2
    late = [LateReply(2, _update(p0, -2.0, 4, [0, 0, 1, 0]), sent_round=0, staleness=1)]
    state = server.run_round(ScriptedGrid(fresh, late), state, 1)
    delta = (1 * 1.0 + 3 * 3.0 + 2 * -2.0) / 6  # = 1.0
    for k, v in state.params.items():
        np.testing.assert_allclose(v, p0[k] + 0.5 * delta, rtol=1e-6)  # v = 0.5 * 0 + 0.5 * Δ
    np.testing.assert_allclose(state.drift_global, 0.2 * np.array([1, 3, 2, 0]) / 6, rtol=1e-6)
    assert state.history[-1]["late_merged"] == 1
    # second round: Δ = 3, v = 0.5 * 0.5 + 0.5 * 3 = 1.75
    again = {0: _update(p0, 3.0, 1, [1, 0, 0, 0])}
    state2 = server.run_round(ScriptedGrid(again, []), state, 2)
    for k, v in state2.params.items():
        np.testing.assert_allclose(v, state.params[k] + 1.75, rtol=1e-6)


def test_without_history_average_the_server_step_is_fedavg():
    server = _server(history_average=False, staleness_exponent=None)
    state = server.init_state()
    p0 = state.params
    fresh = {0: _update(p0, 1.0, 1, [1, 0, 0, 0]), 1: _update(p0, 4.0, 2, [1, 0, 0, 0])}
    late = [LateReply(2, _update(p0, 100.0, 9, [1, 0, 0, 0]), sent_round=0, staleness=2)]
    state = server.run_round(ScriptedGrid(fresh, late), state, 1)
    for k, v in state.params.items():
        np.testing.assert_allclose(v, p0[k] + 3.0, rtol=1e-6)  # late update ignored
    assert state.history[-1]["late_ignored"] == 1


def test_fedproto_server_merges_prototypes_by_class_counts():
    server = _server(algorithm="fedproto")
    state = server.init_state()

    def reply(protos, counts):
        arrays = {"prototypes": np.asarray(protos, np.float32),
                  "prototype_counts": np.asarray(counts, np.float32)}  # fmt: skip
        return Message(FIT, arrays=arrays, metrics={"n": sum(counts), "loss": 0.0})

    a = reply([[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], [1, 0, 0])
    b = reply([[4, 4, 4, 4], [2, 2, 2, 2], [0, 0, 0, 0]], [2, 5, 0])
    grid = ScriptedGrid({0: a, 1: b}, [])
    state = server.run_round(grid, state, 1)
    np.testing.assert_allclose(state.prototypes[0], 3.0)  # (1*1 + 2*4) / 3
    np.testing.assert_allclose(state.prototypes[1], 2.0)
    assert state.prototype_counts.tolist() == [3.0, 5.0, 0.0]
    assert "param:backbone.1.weight" not in grid.sent[0].arrays  # FedProto shares no weights


@pytest.fixture(scope="module")
def digits_fed():
    digits = load_digits(seed=0)
    return digits, image_clients(digits, 6, alpha=1.0, min_per_client=5, seed=0)


@pytest.mark.parametrize("algorithm", ["cafe", "fedavg", "fedprox", "moon", "fedproto"])
def test_client_uploads_a_delta_and_aggregates_only(digits_fed, algorithm):
    digits, fed = digits_fed
    config = CafeConfig(algorithm=algorithm, local_epochs=1)
    client = CafeClient(fed.clients[0], shape=digits.shape, n_classes=10, config=config, seed=0)
    server = CafeServer(digits.shape, 10, config, seed=0)
    state = server.init_state()
    msg = Message(FIT, arrays=server._broadcast(state), config={"round": 1})
    reply = client.handle(msg)  # passes the privacy audit
    if algorithm == "fedproto":
        assert set(reply.arrays) == {"prototypes", "prototype_counts"}
        held = np.bincount(fed.clients[0].rows["label"], minlength=10)
        assert reply.arrays["prototype_counts"].tolist() == held.tolist()
        return
    after = get_params(client.net)
    for k, v in state.params.items():
        np.testing.assert_allclose(reply.arrays["delta:" + k], after[k] - v, atol=1e-6)
    assert ("drift_local" in reply.arrays) == (algorithm == "cafe")
    assert reply.metrics["n"] == len(fed.clients[0].rows)


def test_cafe_learns_digits_and_removes_the_drift_at_inference(digits_fed):
    digits, fed = digits_fed
    est = CAFE(digits.shape, 10, rounds=8, local_epochs=2, eval_every=4, seed=0)
    est.fit(fed.clients, test=fed.test)
    accuracy = est.score(fed.test)
    assert accuracy > 0.6  # chance is 0.1
    assert est.history_[-1]["test_accuracy"] == pytest.approx(accuracy)
    assert est.drift_ is not None and float(np.linalg.norm(est.drift_)) > 0
    plain = CAFE(digits.shape, 10, rounds=8, local_epochs=2, seed=0, tde_alpha=0.0).prepare()
    plain.model_, plain.drift_ = est.model_, est.drift_
    assert not np.allclose(plain.decision_function(fed.test), est.decision_function(fed.test))


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "moon", "fedproto"])
def test_every_baseline_learns_above_chance(digits_fed, algorithm):
    digits, fed = digits_fed
    est = CAFE(digits.shape, 10, algorithm=algorithm, rounds=6, local_epochs=2, eval_every=3,
               learning_rate=0.05, seed=0)  # fmt: skip
    est.fit(fed.clients, test=fed.test)
    assert est.history_[-1]["test_accuracy"] > 0.25


def test_fedproto_has_no_global_model_to_predict_with(digits_fed):
    digits, fed = digits_fed
    est = CAFE(digits.shape, 10, algorithm="fedproto", rounds=1, local_epochs=1, seed=0)
    est.fit(fed.clients[:2])
    with pytest.raises(ConfigError, match="no global model"):
        est.predict(fed.test)


def test_communication_frequency_delivers_stale_updates(digits_fed):
    digits, fed = digits_fed
    part = Participation(report_rate=0.3, always_report=0.0)
    est = CAFE(digits.shape, 10, rounds=4, local_epochs=1, seed=0, participation=part)
    est.fit(fed.clients)
    assert sum(h["late_merged"] for h in est.history_) > 0
    assert sum(h["clients_answered"] for h in est.history_) < 4 * 6


def test_a_split_that_leaves_a_client_empty_is_an_error():
    digits = load_digits(seed=0)
    with pytest.raises(PartitionError, match="gave each of 50 clients at least 5 samples"):
        image_clients(digits, 50, alpha=0.05, min_per_client=5, seed=0, scheme="class")


def test_unlabelled_rows_can_be_predicted(digits_fed):
    digits, fed = digits_fed
    est = CAFE(digits.shape, 10, rounds=1, local_epochs=1, seed=0).fit(fed.clients[:2])
    rows = fed.test.drop(columns=["label"])
    assert est.predict(rows).shape == (len(rows),)
    assert torch.get_num_threads() >= 1


@pytest.mark.parametrize("algorithm", ["cafe", "fedproto"])
def test_every_site_scores_the_final_model_on_its_held_out_images(digits_fed, algorithm):
    from fedstruct.fl import holdout_split

    digits, fed = digits_fed
    clients = fed.clients[:3]
    part = Participation(report_rate=0.3, always_report=0.0)  # scoring ignores it
    est = CAFE(digits.shape, 10, algorithm=algorithm, rounds=2, local_epochs=1, seed=0,
               test_fraction=0.3, participation=part).fit(clients)  # fmt: skip
    assert sorted(est.site_scores_) == sorted(c.name for c in clients)
    for client in clients:
        _, held = holdout_split(client.n_rows, 0.3, 0, client.name)
        score = est.site_scores_[client.name]
        assert score["n"] == len(held) > 0
        if algorithm == "cafe":  # the global model, drift-free, as the estimator predicts
            rows = client.rows.iloc[held]
            right = int((est.predict(rows) == rows["label"].to_numpy()).sum())
            assert score["correct"] == right
