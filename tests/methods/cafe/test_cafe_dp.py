"""DP-SGD and central DP on the CAFE harness: the weight-sharing baselines take
them, CAFE and FedProto refuse them with the reason (docs/privacy.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fedstruct.data import ClientData
from fedstruct.data.datasets.images import load_digits
from fedstruct.data.images import to_rows
from fedstruct.errors import ConfigError
from fedstruct.fl import Participation
from fedstruct.fl.secagg import protocol
from fedstruct.methods.cafe import CAFE, CafeConfig
from fedstruct.methods.cafe.sources import image_clients
from fedstruct.methods.fedavg import FedAvg


@pytest.fixture(scope="module")
def digits_fed():
    digits = load_digits(seed=0)
    return digits, image_clients(digits, 6, alpha=1.0, min_per_client=5, seed=0)


@pytest.mark.parametrize("algorithm", ["fedprox", "moon"])
def test_dp_sgd_changes_the_weights_and_reports_each_sites_epsilon(digits_fed, algorithm):
    digits, fed = digits_fed
    clients = fed.clients[:2]
    options = {"algorithm": algorithm, "rounds": 1, "local_epochs": 1, "backbone": "mlp",
               "feature_dim": 16, "moon_projection": 8, "seed": 0}  # fmt: skip
    plain = CAFE(digits.shape, 10, **options).fit(clients)
    private = CAFE(digits.shape, 10, dp_epsilon=50.0, dp_noise_multiplier=0.5, **options)
    private.fit(clients)
    weights, noised = plain.model_.state_dict(), private.model_.state_dict()
    assert any(not np.array_equal(weights[k], noised[k]) for k in weights)
    record = private.history_[-1]
    spent = [record[f"dp_epsilon_{c.name}"] for c in clients]
    assert all(0 < eps <= 50.0 for eps in spent)
    assert not any(k.startswith("dp_") for k in plain.history_[-1])


@pytest.mark.parametrize(("algorithm", "reason"),
                         [("cafe", "local drift"), ("fedproto", "class prototypes")])  # fmt: skip
def test_cafe_and_fedproto_refuse_dp_sgd_with_the_reason(algorithm, reason):
    with pytest.raises(ConfigError, match=f"cannot train with DP-SGD.*{reason}"):
        CafeConfig(algorithm=algorithm, dp_epsilon=1.0)


def test_fedprox_adds_its_proximal_gradient_after_the_noise():
    from fedstruct.methods.cafe.local import _proximal_gradient
    from fedstruct.methods.cafe.networks import DriftNet

    config = CafeConfig(algorithm="fedprox", backbone="mlp", feature_dim=4)
    net, anchor = DriftNet((1, 2, 2), 3, config, 0), DriftNet((1, 2, 2), 3, config, 1)
    for p in net.parameters():
        p.grad = torch.ones_like(p)
    _proximal_gradient(net, anchor, 0.5)(None)  # what the DP optimiser's step hook calls
    for p, g in zip(net.parameters(), anchor.parameters(), strict=True):
        torch.testing.assert_close(p.grad, 1 + 0.5 * (p.detach() - g.detach()))


#: A small harness run: the MLP backbone on 8x8 digits, two rounds of one epoch.
SMALL = {"rounds": 2, "local_epochs": 1, "backbone": "mlp", "feature_dim": 16,
         "moon_projection": 8, "seed": 0}  # fmt: skip


@pytest.fixture(scope="module")
def equal_sites(digits_fed):
    """Four sites of 40 images each: with equal ``n_k`` the uniform mean of central
    DP is the plain harness's ``n_k``-weighted one."""
    digits, _ = digits_fed
    rows = to_rows(digits.train_images[:160], digits.train_labels[:160])
    return [ClientData(f"site-{k}", rows.iloc[40 * k : 40 * (k + 1)]) for k in range(4)]


def _weights(model):
    return {k: v.numpy() for k, v in model.model_.state_dict().items()}


@pytest.mark.filterwarnings("ignore:Optimal order")  # ε of a noise of 1e-12: huge
@pytest.mark.parametrize("algorithm", ["fedprox", "moon"])
def test_central_dp_without_noise_or_clipping_is_the_plain_harness(equal_sites, algorithm):
    options = {**SMALL, "algorithm": algorithm, "server_learning_rate": 0.5}
    plain = CAFE((1, 8, 8), 10, **options).fit(equal_sites)
    central = CAFE((1, 8, 8), 10, central_dp_noise=1e-12, central_dp_clip=1e6, **options)
    central.fit(equal_sites)
    weights = _weights(plain)
    for k, v in _weights(central).items():
        np.testing.assert_allclose(v, weights[k], atol=1e-5)
    assert central.history_[-1]["clients_answered"] == 4
    assert central.history_[-1]["central_dp_clip"] == 1e6  # the clipped, noised path ran


def test_central_dp_noises_moves_the_clip_and_spends_fedavgs_epsilon(equal_sites):
    """Two of four sites a round (q = 1/2), adaptive clipping: the harness's ε is
    FedAvg's accountant's for the same (z, q, rounds)."""
    half = Participation(sample_rate=0.5, min_clients=2)
    settings = {"central_dp_noise": 0.8, "central_dp_clip": 0.05, "central_dp_quantile": 0.5,
                "central_dp_count_noise": 1.0}  # fmt: skip
    plain = CAFE((1, 8, 8), 10, algorithm="fedavg", participation=half, **SMALL).fit(equal_sites)
    model = CAFE((1, 8, 8), 10, algorithm="fedavg", participation=half, **SMALL, **settings)
    model.fit(equal_sites)
    weights = _weights(plain)
    assert any(not np.allclose(v, weights[k]) for k, v in _weights(model).items())
    first, last = model.history_
    assert first["central_dp_clip"] == 0.05 != first["central_dp_next_clip"]
    assert last["central_dp_clip"] == first["central_dp_next_clip"]
    assert last["central_dp_sample_rate"] == 0.5
    cards = {"a": 2, "y": 2}
    table = pd.DataFrame({"a": np.arange(40) % 2, "y": np.arange(40) // 20})
    fedavg = FedAvg("y", cards, rounds=2, hidden=0, participation=half, **settings)
    fedavg.fit([ClientData(f"s{k}", table) for k in range(4)])
    assert last["central_dp_epsilon"] == fedavg.history_[-1]["central_dp_epsilon"] > 0


@pytest.mark.parametrize(("algorithm", "reason"),
                         [("cafe", "local drift"), ("fedproto", "class prototypes")])  # fmt: skip
def test_cafe_and_fedproto_refuse_central_dp_with_the_reason(algorithm, reason):
    with pytest.raises(ConfigError, match=f"cannot take central DP.*{reason}"):
        CafeConfig(algorithm=algorithm, central_dp_noise=1.0)


def test_central_dp_refuses_merging_late_updates():
    late = Participation(report_rate=0.5)
    with pytest.raises(ConfigError, match=r"central DP.*staleness_exponent.*report late"):
        CAFE((1, 8, 8), 10, algorithm="moon", central_dp_noise=1.0, participation=late).prepare()
    ignored = CAFE((1, 8, 8), 10, algorithm="moon", central_dp_noise=1.0, participation=late,
                   staleness_exponent=None)  # fmt: skip
    assert ignored.prepare().config_.central_dp() is not None


@pytest.mark.filterwarnings("ignore:Optimal order")
def test_central_dp_under_secure_aggregation_is_the_plain_central_run(
    equal_sites, recording_backend
):
    """The clipped updates go through SecAgg+: the server receives protocol messages
    only, and the model is the plain central run's to the quantisation bound."""
    # noise of sd 1e-10, and no update is as long as the clip
    options = {**SMALL, "algorithm": "fedavg", "central_dp_noise": 1e-12, "central_dp_clip": 1e2,
               "rounds": 1}  # fmt: skip
    plain = CAFE((1, 8, 8), 10, **options).fit(equal_sites)
    backend = recording_backend()
    secure = CAFE((1, 8, 8), 10, secure_aggregation=True, **options)
    secure.fit(equal_sites, backend=backend)
    stages = {protocol.KEYS, protocol.SHARE, protocol.MASK, protocol.UNMASK}
    assert {m.kind for _, m in backend.received} == stages  # no clipped update in the clear
    weights = _weights(plain)
    for k, v in _weights(secure).items():  # the sum of 4 within 4 * 2^-25, over m = 4
        np.testing.assert_allclose(v, weights[k], rtol=0, atol=2**-25 + 1e-8)
    assert secure.history_[-1]["central_dp_epsilon"] == plain.history_[-1]["central_dp_epsilon"]
