import copy

import numpy as np
import pandas as pd
import pytest
import sklearn.base

from fedstruct.data import ClientData, Schedule, load_network
from fedstruct.errors import CheckpointError, DataError
from fedstruct.fl import Participation
from fedstruct.fl.aggregate import weighted_average
from fedstruct.methods.fedavg import FedAvg

CARDS = {"a": 3, "b": 2, "c": 4, "y": 2}


def xor_task(n, seed):
    rng = np.random.default_rng(seed)
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 4, n)
    y = ((a + b) % 2) ^ (rng.random(n) < 0.1)
    return pd.DataFrame({"a": a, "b": b, "c": c, "y": y.astype(int)})


@pytest.fixture(scope="module")
def clients():
    rows = xor_task(3200, 0)
    return [ClientData(f"site-{i}", rows.iloc[i * 800 : (i + 1) * 800]) for i in range(4)]


def test_weighted_average_is_fedavg_and_module_wise():
    u1 = {"w": np.array([1.0, 2.0]), "only1": np.array([5.0])}
    u2 = {"w": np.array([3.0, 6.0])}
    avg = weighted_average([(u1, 1.0), (u2, 3.0)])
    np.testing.assert_allclose(avg["w"], [2.5, 5.0])
    np.testing.assert_allclose(avg["only1"], [5.0])  # averaged over the clients that sent it


def test_fedavg_learns_the_task(clients):
    test = xor_task(2000, 1)
    model = FedAvg("y", CARDS, rounds=8, seed=1).fit(clients, test=test)
    # Bayes accuracy is 0.9 (10% label noise); a linear model cannot exceed ~0.67 here.
    assert model.score(test) > 0.85
    assert model.history_[-1]["test_accuracy"] == pytest.approx(model.score(test))
    assert model.history_[-1]["clients_answered"] == 4
    assert 0.85 < model.history_[-1]["client_accuracy"] <= 0.95


def test_same_seed_same_model_other_seed_other_model(clients):
    a = FedAvg("y", CARDS, rounds=3, seed=5).fit(clients)
    b = FedAvg("y", CARDS, rounds=3, seed=5).fit(clients)
    c = FedAvg("y", CARDS, rounds=3, seed=6).fit(clients)
    for k in a.params_:
        np.testing.assert_array_equal(a.params_[k], b.params_[k])
    assert any(not np.array_equal(a.params_[k], c.params_[k]) for k in a.params_)


def test_bytes_match_the_model_size(clients):
    model = FedAvg("y", CARDS, rounds=2, hidden=8, seed=0).fit(clients)
    n_params = (9 * 8 + 8) + (8 * 2 + 2)  # one-hot width 3+2+4 = 9
    summary = model.traffic_.summary()
    # Each fit message carries the weights (float32) + the round; each reply weights + 2 metrics.
    # The last round adds one evaluation message per client (weights + round down, 3 metrics up).
    assert summary["bytes_down"] == (2 * 4 + 4) * (4 * n_params + 8)
    assert summary["bytes_up"] == (2 * 4) * (4 * n_params + 16) + 4 * 24


@pytest.mark.parametrize("report_rate", [1.0, 0.5])
def test_resume_continues_to_the_identical_result(tmp_path, clients, report_rate):
    part = Participation(
        sample_rate=0.75,
        dropout=0.2,
        report_rate=report_rate,
        schedule=Schedule(join={"site-3": 3}),
    )
    kw = dict(rounds=6, seed=2, participation=part, staleness_exponent=0.5)
    full = FedAvg("y", CARDS, **kw).fit(clients)
    ckpt = tmp_path / "checkpoint.safetensors"
    FedAvg("y", CARDS, **kw).fit(clients, checkpoint=ckpt, stop_after=3)
    resumed = FedAvg("y", CARDS, **kw).fit(clients, checkpoint=ckpt, resume=True)
    assert resumed.history_ == full.history_
    for k in full.params_:
        np.testing.assert_array_equal(resumed.params_[k], full.params_[k])
    assert resumed.traffic_.summary() == full.traffic_.summary()
    if report_rate < 1.0:
        assert sum(h["late_merged"] for h in full.history_) > 0


def test_resume_refuses_another_configuration(tmp_path, clients):
    ckpt = tmp_path / "checkpoint.safetensors"
    FedAvg("y", CARDS, rounds=3, seed=0).fit(clients, checkpoint=ckpt, stop_after=1)
    with pytest.raises(CheckpointError, match="another configuration"):
        FedAvg("y", CARDS, rounds=3, seed=1).fit(clients, checkpoint=ckpt, resume=True)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        FedAvg("y", CARDS, rounds=3).fit(clients, checkpoint=tmp_path / "none", resume=True)


def test_bad_codes_name_the_client_and_variable(clients):
    bad = clients[0].rows.copy()
    bad.loc[bad.index[0], "b"] = 7
    with pytest.raises(
        DataError, match=r"client 'bad': variable 'b' has value 7; expected state codes 0\.\.1"
    ):
        FedAvg("y", CARDS, rounds=1).fit([ClientData("bad", bad)])


def test_the_readme_estimator_can_be_cloned():
    """scikit-learn's clone deep-copies the parameters: a network's cardinalities are a
    plain dict (issue 29: a read-only mappingproxy could not be copied)."""
    net = load_network("asia")
    model = FedAvg("dysp", net.cardinalities, rounds=10,
                   participation=Participation(sample_rate=0.5, dropout=0.1))  # fmt: skip
    copy = sklearn.base.clone(model)
    assert copy.get_params()["cardinalities"] == dict(net.cardinalities)
    assert copy.get_params()["participation"] == model.get_params()["participation"]
    net.cardinalities["dysp"] = 99  # a copy: the network does not change
    assert net.cardinalities["dysp"] == 2


def test_local_training_is_torch_sgd_bit_for_bit():
    """train_local's plain step gives torch.optim.SGD's parameters and losses exactly."""
    import torch

    from fedstruct.methods.fedavg.model import _loss, train_local

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(70, 5, generator=gen), torch.randint(0, 3, (70,), generator=gen)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    reference = copy.deepcopy(model)
    loss = train_local(model, x, y, epochs=2, batch_size=16, learning_rate=0.3,
                       rng=np.random.default_rng(4))  # fmt: skip
    opt = torch.optim.SGD(reference.parameters(), lr=0.3)
    loss_fn, rng = _loss(y), np.random.default_rng(4)
    for _ in range(2):
        total = 0.0
        for idx in torch.from_numpy(rng.permutation(70)).split(16):
            opt.zero_grad()
            batch = loss_fn(reference(x[idx]), y[idx])
            (batch / len(idx)).backward()
            opt.step()
            total += batch.item()
    assert loss == total / 70
    for got, expected in zip(model.parameters(), reference.parameters(), strict=True):
        assert torch.equal(got, expected)
