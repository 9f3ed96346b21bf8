"""Local training and inference of every algorithm on the harness.

One loop (local SGD with momentum for ``E`` epochs over shuffled mini-batches); the
algorithms differ only in the batch loss (:data:`BATCH_LOSSES`) and in inference
(:func:`predict_logits`):

* FedAvg (McMahan et al. 2017): cross-entropy of a linear classifier.
* FedProx (Li et al. 2020, eq. 2): ``+ (μ/2) ‖w - θ^t‖²`` to the round's global weights.
* MOON (Li, He & Song 2021, eqs. 1-3): ``+ μ ℓ_con`` with
  ``ℓ_con = -log(e^{cos(z, z_glob)/T} / (e^{cos(z, z_glob)/T} + e^{cos(z, z_prev)/T}))``
  on the projection head's outputs of the local, global and previous local model.
* FedProto (Tan et al. 2022, eq. 7): ``+ λ · MSE(f(x), C̄^{(y)})`` to the global
  prototype of the sample's class (classes without a global prototype add nothing);
  inference picks the nearest global prototype (eq. 9).
* CAFE (METHODS.md § CAFE): the cosine classifier with Feature Calibration: before
  each batch the local drift ``d_l ← μ d_l + (1-μ) mean(f(x))`` (detached) is
  updated, and the projections of the unit features on the orthonormalised
  ``{d_g, d_l}`` are removed with ``(λ_g, λ_l)``; inference removes ``d_g`` with α
  (drift-free TDE inference, eq. 37).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from fedstruct.errors import ProtocolError
from fedstruct.methods.cafe.classifier import cosine_logits, drift_basis
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.networks import DriftNet
from fedstruct.privacy.dp import make_private

if TYPE_CHECKING:
    from fedstruct.privacy.dp import PrivateSGD

__all__ = ["BATCH_LOSSES", "LocalContext", "class_prototypes", "predict_logits", "train_local"]

_EVAL_BATCH = 1024


@dataclass
class LocalContext:
    """What a client's local round needs besides its data.

    Attributes
    ----------
    global_net
        The round's global model, frozen (FedProx's anchor, MOON's positive pair).
    previous_net
        The client's model from its previous round, frozen (MOON's negative pair).
    prototypes, prototype_mask
        The global class prototypes ``(C, D)`` and which classes have one (FedProto).
    drift_global
        ``d_g`` ``(D,)`` (CAFE), constant during the round.
    drift_local
        ``d_l`` ``(D,)`` (CAFE), updated every batch; the updated value is the
        client's upload.
    """

    global_net: DriftNet | None = None
    previous_net: DriftNet | None = None
    prototypes: Tensor | None = None
    prototype_mask: Tensor | None = None
    drift_global: Tensor | None = None
    drift_local: Tensor | None = None


def classifier_logits(
    net: DriftNet,
    features: Tensor,
    config: CafeConfig,
    basis: Tensor | None = None,
    strengths: tuple[float, ...] = (),
) -> Tensor:
    """The cosine classifier's logits (CAFE) or the linear layer's (baselines)."""
    if config.causal:
        return cosine_logits(
            features,
            net.weight,
            heads=config.heads,
            tau=config.tau,
            gamma=config.gamma if config.parameter_calibration else None,
            basis=basis,
            strengths=strengths,
        )
    return net.linear(features)


def _fedavg(net: DriftNet, x: Tensor, y: Tensor, ctx: LocalContext, c: CafeConfig) -> Tensor:
    return F.cross_entropy(net.linear(net(x)), y)


def _fedprox(net: DriftNet, x: Tensor, y: Tensor, ctx: LocalContext, c: CafeConfig) -> Tensor:
    assert ctx.global_net is not None
    prox = sum(
        ((p - g) ** 2).sum()
        for p, g in zip(net.parameters(), ctx.global_net.parameters(), strict=True)
    )
    return _fedavg(net, x, y, ctx, c) + 0.5 * c.prox_mu * prox


def _moon(net: DriftNet, x: Tensor, y: Tensor, ctx: LocalContext, c: CafeConfig) -> Tensor:
    assert ctx.global_net is not None and ctx.previous_net is not None
    f = net(x)
    z = net.projection(f)
    with torch.no_grad():
        z_glob = ctx.global_net.projection(ctx.global_net(x))
        z_prev = ctx.previous_net.projection(ctx.previous_net(x))
    pair = torch.stack(
        [F.cosine_similarity(z, z_glob, dim=1), F.cosine_similarity(z, z_prev, dim=1)], dim=1
    )
    contrastive = F.cross_entropy(pair / c.moon_temperature, torch.zeros_like(y))
    return F.cross_entropy(net.linear(f), y) + c.moon_mu * contrastive


def _fedproto(net: DriftNet, x: Tensor, y: Tensor, ctx: LocalContext, c: CafeConfig) -> Tensor:
    f = net(x)
    loss = F.cross_entropy(net.linear(f), y)
    if ctx.prototypes is not None and ctx.prototype_mask is not None:
        has = ctx.prototype_mask[y]
        if bool(has.any()):
            loss = loss + c.proto_lambda * F.mse_loss(f[has], ctx.prototypes[y[has]])
    return loss


def _cafe(net: DriftNet, x: Tensor, y: Tensor, ctx: LocalContext, c: CafeConfig) -> Tensor:
    assert ctx.drift_local is not None and ctx.drift_global is not None
    f = net(x)
    mu = c.local_drift_momentum
    ctx.drift_local = mu * ctx.drift_local + (1.0 - mu) * f.detach().mean(dim=0)
    if not c.feature_calibration:  # the ablation w/o FC: d_l is still tracked for d_g
        return F.cross_entropy(classifier_logits(net, f, c), y)
    basis = drift_basis([ctx.drift_global, ctx.drift_local], c.heads)
    logits = classifier_logits(net, f, c, basis, (c.lambda_global, c.lambda_local))
    return F.cross_entropy(logits, y)


#: Batch loss of each algorithm (module docstring).
BATCH_LOSSES: dict[str, Callable[[DriftNet, Tensor, Tensor, LocalContext, CafeConfig], Tensor]]
BATCH_LOSSES = {
    "fedavg": _fedavg,
    "fedprox": _fedprox,
    "moon": _moon,
    "fedproto": _fedproto,
    "cafe": _cafe,
}


def train_local(
    net: DriftNet,
    images: Tensor,
    labels: Tensor,
    config: CafeConfig,
    ctx: LocalContext,
    rng: np.random.Generator,
    private: PrivateSGD | None = None,
) -> float:
    """``config.local_epochs`` epochs of SGD with momentum on the client's data
    (with ``private``: DP-SGD, :func:`train_private`).

    Returns the mean batch loss; ``ctx.drift_local`` holds the updated local drift.
    """
    if private is not None:
        return train_private(net, images, labels, config, ctx, private)
    loss_fn = BATCH_LOSSES[config.algorithm]
    optimiser = torch.optim.SGD(
        net.parameters(),
        lr=config.learning_rate,
        momentum=config.momentum,
        weight_decay=config.weight_decay,
    )
    net.train()
    total, batches = 0.0, 0
    n = len(labels)
    for _ in range(config.local_epochs):
        order = torch.from_numpy(rng.permutation(n)).to(images.device)
        for start in range(0, n, config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = loss_fn(net, images[idx], labels[idx], ctx, config)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach())
            batches += 1
    return total / max(batches, 1)


def train_private(
    net: DriftNet,
    images: Tensor,
    labels: Tensor,
    config: CafeConfig,
    ctx: LocalContext,
    private: PrivateSGD,
) -> float:
    """``config.local_epochs`` epochs of DP-SGD (Abadi et al. 2016) with Opacus, as
    F-CMs and FedAvg train: Poisson-sampled batches
    (:func:`~fedstruct.privacy.dp.private_schedule`), each sample's gradient of the
    batch loss clipped to ``private.max_grad_norm``, Gaussian noise ``σ C`` on their
    sum, then the harness's SGD step (momentum and weight decay act on the noised
    gradient: post-processing). FedProx's proximal term ``(μ/2)‖w - θ^t‖²`` holds no
    row, so its gradient ``μ (w - θ^t)`` is added after the noise, not clipped. The
    privacy cost is the caller's to account. The batches and the noise come from
    the operating system's entropy, not the run's seed (which the server knows:
    :func:`~fedstruct.privacy.dp.make_private`).

    Returns the mean batch loss over the epochs.
    """
    import warnings

    from torch.utils.data import TensorDataset

    loss_fn = BATCH_LOSSES["fedavg" if config.algorithm == "fedprox" else config.algorithm]
    optimiser = torch.optim.SGD(
        net.parameters(),
        lr=config.learning_rate,
        momentum=config.momentum,
        weight_decay=config.weight_decay,
    )
    total, batches = 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Opacus: "secure RNG turned off"
        private_net, optimiser, loader = make_private(
            net, optimiser, TensorDataset(images, labels), config.batch_size, private
        )
        if config.algorithm == "fedprox":
            assert ctx.global_net is not None
            optimiser.attach_step_hook(_proximal_gradient(net, ctx.global_net, config.prox_mu))
        net.train()
        for _ in range(config.local_epochs):
            for xb, yb in loader:
                if len(xb) == 0:  # a Poisson draw can be empty
                    continue
                loss = loss_fn(net, xb, yb, ctx, config)
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                total += float(loss.detach())
                batches += 1
    private_net._close()  # detach Opacus' hooks from ``net``
    return total / max(batches, 1)


def _proximal_gradient(net: DriftNet, anchor: DriftNet, mu: float) -> Callable[[object], None]:
    """An Opacus step hook that adds FedProx's ``μ (w - θ^t)`` to the noised gradient."""

    def add(_: object) -> None:
        with torch.no_grad():
            for p, g in zip(net.parameters(), anchor.parameters(), strict=True):
                if p.grad is not None:
                    p.grad.add_(p - g, alpha=mu)

    return add


@torch.no_grad()
def class_prototypes(
    net: DriftNet, images: Tensor, labels: Tensor, n_classes: int
) -> tuple[Tensor, Tensor]:
    """Per class, the mean feature vector and the count (FedProto, eq. 4)."""
    net.eval()
    feats = torch.cat(
        [net(images[i : i + _EVAL_BATCH]) for i in range(0, len(labels), _EVAL_BATCH)]
    )
    counts = torch.bincount(labels, minlength=n_classes).to(feats.dtype)
    sums = torch.zeros(n_classes, feats.shape[1], dtype=feats.dtype, device=feats.device)
    sums = sums.index_add_(0, labels, feats)
    return sums / counts.clamp_min(1.0)[:, None], counts


@torch.no_grad()
def predict_logits(
    net: DriftNet,
    images: Tensor,
    config: CafeConfig,
    *,
    drift_global: Tensor | None = None,
    prototypes: Tensor | None = None,
    prototype_mask: Tensor | None = None,
) -> Tensor:
    """Class scores for ``images`` with each algorithm's inference (module docstring):
    CAFE removes ``α`` times the global drift (TDE; α = 0 or no ``d_g`` gives the
    plain cosine logits); FedProto scores ``-‖f(x) - C̄^{(c)}‖²`` (classes without a
    prototype score ``-inf``); the others use the linear classifier."""
    net.eval()
    out = []
    basis = None
    if config.causal and drift_global is not None and config.tde_alpha > 0:
        basis = drift_basis([drift_global], config.heads)
    for i in range(0, len(images), _EVAL_BATCH):
        f = net(images[i : i + _EVAL_BATCH])
        if config.algorithm == "fedproto":
            if prototypes is None or prototype_mask is None:
                raise ProtocolError(
                    "FedProto predicts by the nearest global prototype: pass prototypes and "
                    "prototype_mask (the server's last broadcast)"
                )
            d = torch.cdist(f, prototypes) ** 2
            out.append(torch.where(prototype_mask[None, :], -d, torch.full_like(d, -torch.inf)))
        else:
            out.append(classifier_logits(net, f, config, basis, (config.tde_alpha,)))
    return torch.cat(out)
