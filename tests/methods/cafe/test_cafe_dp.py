"""DP-SGD on the CAFE harness: the weight-sharing baselines train with it, CAFE and
FedProto refuse it with the reason (docs/privacy.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedstruct.data.datasets.images import load_digits
from fedstruct.errors import ConfigError
from fedstruct.experiments.cafe.federation import image_clients
from fedstruct.methods.cafe import CAFE, CafeConfig


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
