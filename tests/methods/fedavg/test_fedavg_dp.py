"""FedAvg with per-site DP-SGD and with central DP (docs/privacy.md)."""

import json

import numpy as np
import pandas as pd
import pytest
from opacus.accountants import RDPAccountant

from fedstruct.data import ClientData
from fedstruct.errors import ConfigError
from fedstruct.methods.fedavg import FedAvg
from fedstruct.privacy.central_dp import central_epsilon
from fedstruct.privacy.dp import private_schedule
from fedstruct.runs import execute

CARDS = {"a": 3, "b": 2, "y": 2}


@pytest.fixture(scope="module")
def clients():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 3, 480), rng.integers(0, 2, 480)
    rows = pd.DataFrame({"a": a, "b": b, "y": (a + b) % 2})
    return [ClientData(f"site-{i}", rows.iloc[i * 160 : (i + 1) * 160]) for i in range(3)]


def test_dp_sgd_changes_the_weights_and_each_site_spends_what_opacus_counts(clients):
    plain = FedAvg("y", CARDS, rounds=2, hidden=0, seed=0).fit(clients)
    private = FedAvg("y", CARDS, rounds=2, hidden=0, seed=0, dp_epsilon=10.0,
                     dp_noise_multiplier=1.0).fit(clients)  # fmt: skip
    assert any(not np.array_equal(plain.params_[k], private.params_[k]) for k in plain.params_)
    # The ledger's ε is Opacus' accountant's for the same steps (δ = 1 / n_k).
    q, steps = private_schedule(160, 32, 1)
    oracle = RDPAccountant()
    for _ in range(steps):
        oracle.step(noise_multiplier=1.0, sample_rate=q)
    after_one = oracle.get_epsilon(1 / 160)
    for _ in range(steps):
        oracle.step(noise_multiplier=1.0, sample_rate=q)
    for site in ("site-0", "site-1", "site-2"):
        spent = [h[f"dp_epsilon_{site}"] for h in private.history_]
        assert spent == pytest.approx([after_one, oracle.get_epsilon(1 / 160)], rel=1e-9)
    assert not any(k.startswith("dp_") for k in plain.history_[-1])


def test_a_noise_multiplier_over_the_budget_is_refused_before_training(clients, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("a site trained")

    monkeypatch.setattr("fedstruct.methods.fedavg.client.train_private", no_training)
    model = FedAvg("y", CARDS, rounds=5, seed=0, dp_epsilon=1.0, dp_noise_multiplier=0.3)
    with pytest.raises(ConfigError, match=r"site 'site-0': 5 rounds of DP-SGD .* > dp_epsilon"):
        model.fit(clients)


@pytest.mark.filterwarnings("ignore:Optimal order")  # ε of a noise of 1e-12: huge
def test_central_dp_without_noise_or_clipping_is_fedavg_of_equal_sites(clients):
    plain = FedAvg("y", CARDS, rounds=2, seed=0).fit(clients)
    central = FedAvg("y", CARDS, rounds=2, seed=0, central_dp_noise=1e-12,
                     central_dp_clip=1e3).fit(clients)  # fmt: skip
    for k in plain.params_:  # equal n_k: the uniform mean is the n_k-weighted one
        np.testing.assert_allclose(central.params_[k], plain.params_[k], atol=1e-5)


def test_central_dp_noises_the_mean_moves_the_clip_and_counts_epsilon(clients):
    plain = FedAvg("y", CARDS, rounds=3, seed=0).fit(clients)
    model = FedAvg(
        "y", CARDS, rounds=3, seed=0, central_dp_noise=0.8, central_dp_clip=0.05,
        central_dp_quantile=0.5, central_dp_count_noise=1.0,
    ).fit(clients)  # fmt: skip
    assert any(not np.allclose(model.params_[k], plain.params_[k]) for k in plain.params_)
    clips = [h["central_dp_clip"] for h in model.history_]
    assert clips[0] == 0.05 and clips[1] == model.history_[0]["central_dp_next_clip"] != 0.05
    assert model.history_[-1]["central_dp_epsilon"] == pytest.approx(
        central_epsilon(0.8, [1.0, 1.0, 1.0], 1e-5)
    )


def test_central_dp_refuses_late_updates():
    with pytest.raises(ConfigError, match="staleness_exponent"):
        FedAvg("y", CARDS, central_dp_noise=1.0, staleness_exponent=0.5).prepare()


def test_a_run_reports_each_sites_epsilon_in_metrics_json(tmp_path):
    settings = {"network": "asia", "samples": 400, "test_samples": 100, "rounds": 2,
                "clients": 2, "hidden": 0, "dp_epsilon": 5.0,
                "dp_noise_multiplier": 1.0}  # fmt: skip
    execute("fedavg", [settings], tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0 < metrics["dp_epsilon_client-1"] <= 5.0
    assert metrics["dp_epsilon_max"] == max(metrics["dp_epsilon_client-1"],
                                            metrics["dp_epsilon_client-2"])  # fmt: skip


def test_a_resumed_run_keeps_each_sites_ledger(tmp_path, clients):
    options = {"rounds": 2, "hidden": 0, "seed": 0, "dp_epsilon": 10.0, "dp_noise_multiplier": 1.0}
    full = FedAvg("y", CARDS, **options).fit(clients)
    ckpt = tmp_path / "ckpt"
    FedAvg("y", CARDS, **options).fit(clients, checkpoint=ckpt, stop_after=1)
    resumed = FedAvg("y", CARDS, **options).fit(clients, checkpoint=ckpt, resume=True)
    # the noise is fresh entropy, so the weights differ; the ε spent does not
    assert resumed.history_[-1]["dp_epsilon_site-0"] == full.history_[-1]["dp_epsilon_site-0"]


@pytest.mark.filterwarnings("ignore:Optimal order")
def test_dp_sgd_and_central_dp_under_secure_aggregation(clients):
    """Both DP options go through the secure sum: DP-SGD's ε per site is still
    reported (asked after the summed round), and central DP without noise or clipping
    under SecAgg+ equals the plain central run within the quantisation bound."""
    private = FedAvg("y", CARDS, rounds=2, hidden=0, seed=0, dp_epsilon=10.0,
                     dp_noise_multiplier=1.0, secure_aggregation=True).fit(clients)  # fmt: skip
    q, steps = private_schedule(160, 32, 1)
    oracle = RDPAccountant()
    for _ in range(2 * steps):
        oracle.step(noise_multiplier=1.0, sample_rate=q)
    assert private.history_[-1]["dp_epsilon_site-1"] == pytest.approx(
        oracle.get_epsilon(1 / 160), rel=1e-9
    )
    settings = {"central_dp_noise": 1e-12, "central_dp_clip": 1e6}
    plain = FedAvg("y", CARDS, rounds=2, seed=0, **settings).fit(clients)
    secure = FedAvg("y", CARDS, rounds=2, seed=0, secure_aggregation=True, **settings).fit(clients)
    for k in plain.params_:
        np.testing.assert_allclose(secure.params_[k], plain.params_[k], atol=1e-5)
