"""CAFE's classifier, drift operators, configuration, networks and local objectives."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedstruct.errors import ConfigError
from fedstruct.methods.cafe import CafeConfig, DriftNet, cosine_logits, drift_basis, remove_drift
from fedstruct.methods.cafe.classifier import split_heads, unit
from fedstruct.methods.cafe.local import (
    BATCH_LOSSES,
    LocalContext,
    class_prototypes,
    predict_logits,
)


def _loop_logits(x, w, heads, tau, gamma):
    """z_i = (τ/K) Σ_k <x^k/|x^k|, w_i^k/(|w_i^k|+γ)>, written as loops."""
    n, d = x.shape
    size = d // heads
    z = np.zeros((n, w.shape[0]))
    for a in range(n):
        for i in range(w.shape[0]):
            for k in range(heads):
                xs = x[a, k * size : (k + 1) * size]
                ws = w[i, k * size : (k + 1) * size]
                norm = np.linalg.norm(ws) + gamma if gamma is not None else 1.0
                z[a, i] += xs @ ws / (np.linalg.norm(xs) * norm)
    return tau / heads * z


@pytest.mark.parametrize("gamma", [1 / 32, None])
def test_cosine_logits_match_the_formula(gamma):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(5, 8)), rng.normal(size=(3, 8))
    got = cosine_logits(torch.tensor(x), torch.tensor(w), heads=2, tau=16.0, gamma=gamma)
    np.testing.assert_allclose(got.numpy(), _loop_logits(x, w, 2, 16.0, gamma), rtol=1e-10)


def test_drift_basis_is_orthonormal_per_head_and_skips_degenerate_directions():
    d_g = torch.tensor([1.0, 1.0, 0.0, 0.0, 2.0, 0.0])  # head 1 all zero below
    d_l = torch.tensor([1.0, 0.0, 0.0, 0.0, 4.0, 0.0])  # head 2: parallel to d_g
    basis = drift_basis([d_g, d_l], heads=2)
    assert basis.shape == (2, 2, 3)
    s = 1 / math.sqrt(2)
    np.testing.assert_allclose(basis[0, 0], [s, s, 0.0], atol=1e-7)
    np.testing.assert_allclose(basis[0, 1], [s, -s, 0.0], atol=1e-7)  # Gram-Schmidt of d_l
    np.testing.assert_allclose(basis[1, 0], [0.0, 1.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(basis[1, 1], [0.0, 0.0, 0.0], atol=1e-7)  # in the span: removed
    zero = drift_basis([torch.zeros(6)], heads=2)
    assert float(zero.abs().sum()) == 0.0


def test_tde_removal_is_x_minus_alpha_cos_times_direction():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.normal(size=(4, 6)))
    d = torch.tensor(rng.normal(size=6))
    xu = unit(split_heads(x, 3))
    du = unit(split_heads(d, 3))
    removed = remove_drift(xu, drift_basis([d], 3).double(), [0.7])
    cos = (xu * du).sum(-1, keepdim=True)
    np.testing.assert_allclose(removed.numpy(), (xu - 0.7 * cos * du).numpy(), atol=1e-6)
    full = remove_drift(xu, drift_basis([d], 3).double(), [1.0])
    np.testing.assert_allclose((full * du).sum(-1).numpy(), 0.0, atol=1e-6)


def test_zero_alpha_gives_the_training_logits():
    config = CafeConfig(backbone="mlp", feature_dim=8, heads=2, tde_alpha=0.0)
    net = DriftNet((1, 4, 4), 3, config, seed=0)
    images = torch.rand(6, 1, 4, 4)
    drift = torch.rand(8)
    got = predict_logits(net, images, config, drift_global=drift)
    with torch.no_grad():
        plain = cosine_logits(net(images), net.weight, heads=2, tau=16.0, gamma=1 / 32)
    np.testing.assert_allclose(got.numpy(), plain.numpy(), rtol=1e-6)
    with_alpha = predict_logits(
        net, images, CafeConfig(backbone="mlp", feature_dim=8), drift_global=drift
    )
    assert not np.allclose(with_alpha.numpy(), plain.numpy())


def test_config_rejects_heads_that_do_not_divide_the_features():
    with pytest.raises(ConfigError, match="feature_dim = 10 is not divisible by heads = 3"):
        CafeConfig(feature_dim=10, heads=3)
    with pytest.raises(ConfigError, match="algorithm"):
        CafeConfig(algorithm="scaffold")


@pytest.mark.parametrize(
    ("shape", "flat"), [((1, 8, 8), 256), ((1, 28, 28), 3136), ((3, 32, 32), 4096)]
)
def test_cnn_backbone_takes_the_three_image_sizes(shape, flat):
    net = DriftNet(shape, 10, CafeConfig(feature_dim=16), seed=0)
    assert net.backbone[-2].in_features == flat
    out = net(torch.rand(2, *shape))
    assert out.shape == (2, 16) and bool((out >= 0).all())


def test_cnn_backbone_rejects_sides_not_divisible_by_4():
    with pytest.raises(ConfigError, match=r"30x30.*backbone=mlp"):
        DriftNet((1, 30, 30), 10, CafeConfig(), seed=0)


def test_same_seed_same_initial_weights_on_server_and_clients():
    a = DriftNet((1, 8, 8), 10, CafeConfig(), seed=3)
    b = DriftNet((1, 8, 8), 10, CafeConfig(), seed=3)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


def _batch(algorithm, **params):
    config = CafeConfig(algorithm=algorithm, backbone="mlp", feature_dim=8, **params)
    net = DriftNet((1, 4, 4), 3, config, seed=0)
    x = torch.rand(5, 1, 4, 4)
    y = torch.tensor([0, 1, 2, 0, 1])
    return config, net, x, y


def test_fedprox_penalty_is_half_mu_squared_distance():
    config, net, x, y = _batch("fedprox", prox_mu=0.3)
    anchor = DriftNet((1, 4, 4), 3, config, seed=0)
    with torch.no_grad():
        for p in anchor.parameters():
            p.add_(0.1)
    n = sum(p.numel() for p in net.parameters())
    ctx = LocalContext(global_net=anchor)
    plain = BATCH_LOSSES["fedavg"](net, x, y, ctx, config)
    prox = BATCH_LOSSES["fedprox"](net, x, y, ctx, config)
    assert float((prox - plain).detach()) == pytest.approx(0.5 * 0.3 * n * 0.01, rel=1e-4)


def test_moon_contrastive_term_is_log2_when_all_three_models_agree():
    config, net, x, y = _batch("moon", moon_mu=2.0)
    same = DriftNet((1, 4, 4), 3, config, seed=0)
    ctx = LocalContext(global_net=same, previous_net=same)
    loss = BATCH_LOSSES["moon"](net, x, y, ctx, config)
    plain = torch.nn.functional.cross_entropy(net.linear(net(x)), y)
    assert float((loss - plain).detach()) == pytest.approx(2.0 * math.log(2.0), rel=1e-5)


def test_fedproto_pulls_features_to_the_global_prototype_of_present_classes():
    config, net, x, y = _batch("fedproto", proto_lambda=0.5)
    protos = torch.zeros(3, 8)
    mask = torch.tensor([True, False, False])  # only class 0 has a prototype
    loss = BATCH_LOSSES["fedproto"](
        net, x, y, LocalContext(prototypes=protos, prototype_mask=mask), config
    )
    f = net(x)
    expected = torch.nn.functional.cross_entropy(net.linear(f), y) + 0.5 * (f[y == 0] ** 2).mean()
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)


def test_cafe_updates_the_local_drift_with_the_batch_mean_feature():
    config, net, x, y = _batch("cafe", local_drift_momentum=0.75)
    ctx = LocalContext(drift_global=torch.zeros(8), drift_local=torch.ones(8))
    BATCH_LOSSES["cafe"](net, x, y, ctx, config)
    with torch.no_grad():
        expected = 0.75 * torch.ones(8) + 0.25 * net(x).mean(0)
    np.testing.assert_allclose(ctx.drift_local.numpy(), expected.numpy(), rtol=1e-6)


def test_class_prototypes_are_class_means():
    _, net, x, y = _batch("fedproto")
    protos, counts = class_prototypes(net, x, y, 4)
    with torch.no_grad():
        f = net(x)
    np.testing.assert_allclose(protos[1].numpy(), f[y == 1].mean(0).numpy(), rtol=1e-6)
    assert counts.tolist() == [2.0, 2.0, 1.0, 0.0]
    assert float(protos[3].abs().sum()) == 0.0
