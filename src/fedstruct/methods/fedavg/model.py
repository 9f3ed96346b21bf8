"""The FedAvg model: encoded features (categorical one-hot, continuous standardised,
missing indicators: :mod:`fedstruct.fl.features`) -> MLP -> class logits, or one value
for a continuous target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from fedstruct.fl.tabular import TabularSchema
from fedstruct.privacy.dp import make_private

if TYPE_CHECKING:
    from fedstruct.privacy.dp import PrivateSGD

__all__ = [
    "TabularSchema",
    "build_model",
    "evaluate",
    "evaluate_regression",
    "regression_scores",
    "train_local",
    "train_private",
]


def build_model(schema: TabularSchema, n_inputs: int, hidden: int, seed: int) -> nn.Module:
    """The classifier (one logit per class) or regressor (one output), for
    ``n_inputs`` encoded inputs, initialised deterministically from ``seed``.

    ``hidden = 0`` gives multinomial logistic (or linear) regression, otherwise one
    ReLU layer.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if hidden == 0:
            return nn.Sequential(nn.Linear(n_inputs, schema.n_classes))
        return nn.Sequential(
            nn.Linear(n_inputs, hidden), nn.ReLU(), nn.Linear(hidden, schema.n_classes)
        )


def train_local(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    rng: np.random.Generator,
) -> float:
    """ClientUpdate of FedAvg (McMahan et al. 2017, Algorithm 1): E epochs of mini-batch SGD
    on the cross-entropy (class indices ``y``) or the squared error (a float ``y``:
    a regression on the standardised target).

    Returns
    -------
    float
        Mean training loss over the last epoch.
    """
    params = list(model.parameters())
    loss_fn = _loss(y)
    n = len(y)
    last = 0.0
    model.train()
    for _ in range(epochs):
        total = 0.0
        order = torch.from_numpy(rng.permutation(n)).to(x.device)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            for p in params:
                p.grad = None
            loss = loss_fn(model(x[idx]), y[idx])
            (loss / len(idx)).backward()
            _sgd_step(params, learning_rate)
            total += loss.item()
        last = total / n
    return last


def train_private(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    private: PrivateSGD,
) -> float:
    """ClientUpdate with DP-SGD (Abadi et al. 2016, Algorithm 1), as F-CMs trains
    (:func:`fedstruct.methods.fcm.train.train_local`): Opacus' Poisson-sampled batches
    (each row drawn with probability ``q = 1 / ceil(n / B)``, ``ceil(n / B)`` batches
    an epoch: :func:`~fedstruct.privacy.dp.private_schedule`), every row's gradient
    clipped to ``private.max_grad_norm``, Gaussian noise of standard deviation
    ``σ C`` on their sum, divided by the expected batch size, then a plain SGD step
    of size ``learning_rate``. The privacy cost is the caller's to account.

    The batches and the noise are drawn from the operating system's entropy, not the
    run's seed (:func:`~fedstruct.privacy.dp.make_private`): a run with DP is not
    bit-reproducible.

    Opacus (and the ``torch.optim`` optimizer it wraps, which imports
    ``torch._dynamo``) is imported here only, so a run without DP never loads it.

    Returns
    -------
    float
        Mean training loss (per row) over the last epoch's batches.
    """
    import warnings

    from torch.utils.data import TensorDataset

    optimiser = torch.optim.SGD(model.parameters(), lr=learning_rate)
    loss_fn = _loss(y)
    last = float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Opacus: "secure RNG turned off"
        private_model, optimiser, loader = make_private(
            model, optimiser, TensorDataset(x, y), batch_size, private
        )
        private_model.train()
        for _ in range(epochs):
            total, rows = 0.0, 0
            for xb, yb in loader:
                if len(xb) == 0:  # a Poisson draw can be empty
                    continue
                optimiser.zero_grad(set_to_none=True)
                loss = loss_fn(private_model(xb), yb)
                (loss / len(xb)).backward()
                optimiser.step()
                total += loss.item()
                rows += len(xb)
            last = total / max(rows, 1)
    private_model._close()  # detach Opacus' hooks from ``model``
    for p in model.parameters():
        p.grad = None
    return last


@torch.no_grad()
def _sgd_step(params: list[nn.Parameter], learning_rate: float) -> None:
    """One plain SGD step, ``w <- w - eta * grad`` (McMahan et al. 2017, Algorithm 1,
    ClientUpdate), for every parameter that has a gradient.

    The arithmetic of ``torch.optim.SGD(params, lr=learning_rate)`` without momentum or
    weight decay on CPU tensors (its single-tensor path, ``param.add_(grad,
    alpha=-lr)``): the same numbers, bit for bit. Written out because building a
    ``torch.optim`` optimizer imports ``torch._dynamo`` (~1.3 s of CPU), which a
    deployed run pays in every training message: Flower starts a fresh ClientApp
    process per message (docs/benchmarks.md, "Deployed round").
    """
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-learning_rate)


def _loss(y: torch.Tensor) -> nn.Module:
    """Summed cross-entropy for class indices, summed squared error for values."""
    if y.dtype.is_floating_point:
        return _SquaredError()
    return nn.CrossEntropyLoss(reduction="sum")


class _SquaredError(nn.Module):
    """Summed squared error of a one-output model."""

    def forward(self, output: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((output[:, 0] - y) ** 2).sum()


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    """Summed cross-entropy and number of correct predictions on ``(x, y)``."""
    model.eval()
    logits = model(x)
    loss = float(nn.functional.cross_entropy(logits, y, reduction="sum"))
    correct = int((logits.argmax(dim=1) == y).sum())
    return loss, correct


@torch.no_grad()
def evaluate_regression(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, target_scale: tuple[float, float]
) -> dict[str, float]:
    """Sums that score a regression on ``(x, y)`` (``y`` standardised), added over
    sites by the server: ``n``, ``loss_sum`` (squared error, standardised units),
    ``sse`` (squared error in the target's units) and ``dev_sum``, ``dev_squares``
    (the targets' deviations from the training mean and their squares, for the
    total sum of squares of R²: :func:`regression_scores`)."""
    model.eval()
    standard_error = model(x)[:, 0].double() - y.double()
    scale = target_scale[1]
    deviation = y.double() * scale
    return {
        "n": float(len(y)),
        "loss_sum": float((standard_error**2).sum()),
        "sse": float((standard_error**2).sum()) * scale**2,
        "dev_sum": float(deviation.sum()),
        "dev_squares": float((deviation**2).sum()),
    }


def regression_scores(sums: list[dict[str, float]]) -> dict[str, float]:
    """RMSE and R² of a regression from :func:`evaluate_regression`'s sums over
    sites: ``rmse = sqrt(SSE / n)``, ``r2 = 1 - SSE / SST`` with ``SST = sum (y -
    ybar)^2`` over the scored rows (from the deviations about the training mean
    ``m``: ``sum (y - m)^2 - (sum (y - m))^2 / n``), and ``loss`` the mean squared
    error of the standardised target."""
    n = sum(s["n"] for s in sums)
    if not n:
        return {}
    sse = sum(s["sse"] for s in sums)
    dev = sum(s["dev_sum"] for s in sums)
    sst = sum(s["dev_squares"] for s in sums) - dev * dev / n
    return {
        "rmse": float(np.sqrt(sse / n)),
        "r2": float(1 - sse / sst) if sst > 0 else float("nan"),
        "loss": sum(s["loss_sum"] for s in sums) / n,
    }
