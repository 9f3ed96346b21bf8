"""The FedAvg model: encoded features (categorical one-hot, continuous standardised,
missing indicators: :mod:`fedstruct.fl.features`) -> MLP -> class logits, or one value
for a continuous target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray
from torch import nn

from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl.features import FeatureColumns, FeatureEncoder, FeatureStatistics

__all__ = [
    "TabularSchema",
    "build_model",
    "evaluate",
    "evaluate_regression",
    "regression_scores",
    "train_local",
]


@dataclass(frozen=True)
class TabularSchema:
    """The shared encoding of a prediction task on a table.

    Every client encodes its rows with the same schema, which comes from the
    variables' known kinds and level counts, never from another client's data; the
    continuous features' scale and the imputation of missing values come from the
    federated statistics (:mod:`fedstruct.fl.features`), sent by the server.

    Parameters
    ----------
    target
        The variable to predict: categorical or ordinal (in ``cardinalities``: a
        classification) or continuous (in ``continuous``: a regression).
    cardinalities
        Number of levels of every categorical or ordinal variable used.
    continuous
        The continuous variables used.
    missing_values
        Whether the rows may miss values (imputed; rows missing the target are left
        out of training and scoring, and counted).
    """

    target: str
    cardinalities: Mapping[str, int]
    continuous: tuple[str, ...] = ()
    missing_values: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "cardinalities", dict(self.cardinalities))
        object.__setattr__(self, "continuous", tuple(self.continuous))
        if self.target not in self.cardinalities and self.target not in self.continuous:
            raise UnknownVariableError(
                f"target {self.target!r} is not among the variables "
                f"{sorted([*self.cardinalities, *self.continuous])}"
            )
        if not self.regression and self.n_classes < 2:
            raise DataError(
                f"target {self.target!r} has {self.n_classes} level at every site; a "
                "classifier needs two or more: pick another target"
            )
        FeatureColumns(self.cardinalities, self.continuous)  # no column of both kinds

    @property
    def regression(self) -> bool:
        """Whether the target is continuous (a regression: MSE loss)."""
        return self.target in self.continuous

    @property
    def columns(self) -> FeatureColumns:
        """Every variable used (features and target): what the statistics cover."""
        return FeatureColumns(self.cardinalities, self.continuous)

    @property
    def feature_columns(self) -> FeatureColumns:
        """The features (every variable but the target)."""
        return self.columns.select(self.features)

    @property
    def features(self) -> tuple[str, ...]:
        """The input variables (every variable but the target): the categorical and
        ordinal ones, then the continuous ones."""
        return tuple(v for v in self.columns.names if v != self.target)

    @property
    def needs_statistics(self) -> bool:
        """Whether the run starts with the federated statistics step (continuous
        variables or missing values; complete categorical data need none)."""
        return bool(self.continuous) or self.missing_values

    @property
    def n_classes(self) -> int:
        """Number of target classes (1 output for a regression)."""
        return 1 if self.regression else self.cardinalities[self.target]

    def one_hot(self) -> FeatureEncoder:
        """The encoder of complete categorical data (no statistics needed)."""
        return FeatureEncoder.one_hot(self.feature_columns)

    def encoder(self, statistics: FeatureStatistics, categorical_imputation: str) -> FeatureEncoder:
        """The features' encoder from the federated statistics."""
        return FeatureEncoder.from_statistics(statistics, self.features, categorical_imputation)

    def target_scale(self, statistics: FeatureStatistics | None) -> tuple[float, float]:
        """A regression target's federated mean and standard deviation (the model
        predicts the standardised target); ``(0, 1)`` for a classification."""
        if not self.regression or statistics is None:
            return 0.0, 1.0
        return statistics.moments(self.target)

    def encode(
        self,
        rows: pd.DataFrame,
        encoder: FeatureEncoder,
        target_scale: tuple[float, float] = (0.0, 1.0),
        where: str = "data",
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs (float32) and targets of the ``rows`` that give the target: class
        indices (int64) or the standardised value (float32) for a regression.

        Raises
        ------
        UnknownVariableError
            If a schema variable is not a column of ``rows``.
        DataError
            If a level code is out of range, or a value is missing where the schema
            allows none.
        """
        if self.target not in rows.columns:
            raise UnknownVariableError(f"{where} lacks the target {self.target!r} of the task")
        labelled = self.labelled(rows, where)
        if not labelled.all():
            rows = rows[labelled]
        x = encoder.encode(rows, where)
        y = rows[self.target].to_numpy()
        if self.regression:
            mean, scale = target_scale
            return torch.from_numpy(x), torch.from_numpy(((y - mean) / scale).astype(np.float32))
        return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def labelled(self, rows: pd.DataFrame, where: str = "data") -> NDArray[np.bool_]:
        """Which ``rows`` give the target (all, unless the schema allows missing values).

        Raises
        ------
        DataError
            For a target value out of range, or missing where the schema allows none.
        """
        y = rows[self.target].to_numpy()
        if self.regression:
            if y.dtype.kind != "f":
                y = y.astype(np.float64)
            given = ~np.isnan(y)
        else:
            _check_codes(y, self.target, self.n_classes, where, missing=self.missing_values)
            given = y >= 0
        if not self.missing_values and not given.all():
            raise DataError(
                f"{where}: {int((~given).sum())} rows miss the target {self.target!r}; "
                "fill or drop them"
            )
        return given


def _check_codes(values: NDArray, var: str, k: int, where: str, *, missing: bool = False) -> None:
    if values.dtype.kind not in "iu":
        raise DataError(
            f"{where}: variable {var!r} has dtype {values.dtype}; expected integer state codes"
        )
    bad = (values < (-1 if missing else 0)) | (values >= k)
    if bad.any():
        raise DataError(
            f"{where}: variable {var!r} has value {values[bad][0]}; expected state codes 0..{k - 1}"
        )


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
        order = torch.from_numpy(rng.permutation(n))
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
