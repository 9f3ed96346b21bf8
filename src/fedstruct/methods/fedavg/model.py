"""The FedAvg classifier: one-hot encoded categorical features -> MLP -> class logits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray
from torch import nn

from fedstruct.errors import DataError, UnknownVariableError

__all__ = ["TabularSchema", "build_model", "evaluate", "train_local"]


@dataclass(frozen=True)
class TabularSchema:
    """The shared encoding of a categorical prediction task.

    Every client encodes its rows with the same schema, which comes from the
    variables' known state counts, never from another client's data.

    Parameters
    ----------
    target
        The variable to predict.
    cardinalities
        Number of states of every variable used (features and target).
    """

    target: str
    cardinalities: Mapping[str, int]

    def __post_init__(self) -> None:
        if self.target not in self.cardinalities:
            raise UnknownVariableError(
                f"target {self.target!r} is not among the variables {sorted(self.cardinalities)}"
            )
        object.__setattr__(self, "cardinalities", dict(self.cardinalities))

    @property
    def features(self) -> tuple[str, ...]:
        """The input variables (every variable but the target), in schema order."""
        return tuple(v for v in self.cardinalities if v != self.target)

    @property
    def n_inputs(self) -> int:
        """Width of the one-hot input."""
        return sum(self.cardinalities[v] for v in self.features)

    @property
    def n_classes(self) -> int:
        """Number of target classes."""
        return self.cardinalities[self.target]

    def encode(self, rows: pd.DataFrame, where: str = "data") -> tuple[torch.Tensor, torch.Tensor]:
        """One-hot inputs (float32) and class indices (int64) for ``rows``.

        Raises
        ------
        UnknownVariableError
            If a schema variable is not a column of ``rows``.
        DataError
            If a value is not a state code ``0..k-1`` of its variable.
        """
        missing = [v for v in self.cardinalities if v not in rows.columns]
        if missing:
            raise UnknownVariableError(f"{where} lacks the variables {missing} of the task")
        offsets = np.cumsum([0] + [self.cardinalities[v] for v in self.features])[:-1]
        codes = rows.loc[:, list(self.features)].to_numpy()
        for k, var in enumerate(self.features):
            _check_codes(codes[:, k], var, self.cardinalities[var], where)
        y = rows[self.target].to_numpy()
        _check_codes(y, self.target, self.n_classes, where)
        x = np.zeros((len(rows), self.n_inputs), dtype=np.float32)
        np.put_along_axis(x, codes.astype(np.int64) + offsets, 1.0, axis=1)
        return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def _check_codes(values: NDArray, var: str, k: int, where: str) -> None:
    if values.dtype.kind not in "iu":
        raise DataError(
            f"{where}: variable {var!r} has dtype {values.dtype}; expected integer state codes"
        )
    bad = (values < 0) | (values >= k)
    if bad.any():
        raise DataError(
            f"{where}: variable {var!r} has value {values[bad][0]}; expected state codes 0..{k - 1}"
        )


def build_model(schema: TabularSchema, hidden: int, seed: int) -> nn.Module:
    """The classifier, initialised deterministically from ``seed``.

    ``hidden = 0`` gives multinomial logistic regression, otherwise one ReLU layer.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if hidden == 0:
            return nn.Sequential(nn.Linear(schema.n_inputs, schema.n_classes))
        return nn.Sequential(
            nn.Linear(schema.n_inputs, hidden), nn.ReLU(), nn.Linear(hidden, schema.n_classes)
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
    """ClientUpdate of FedAvg (McMahan et al. 2017, Algorithm 1): E epochs of mini-batch SGD.

    Returns
    -------
    float
        Mean training cross-entropy over the last epoch.
    """
    opt = torch.optim.SGD(model.parameters(), lr=learning_rate)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    n = len(y)
    last = 0.0
    model.train()
    for _ in range(epochs):
        total = 0.0
        order = torch.from_numpy(rng.permutation(n))
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            (loss / len(idx)).backward()
            opt.step()
            total += loss.item()
        last = total / n
    return last


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    """Summed cross-entropy and number of correct predictions on ``(x, y)``."""
    model.eval()
    logits = model(x)
    loss = float(nn.functional.cross_entropy(logits, y, reduction="sum"))
    correct = int((logits.argmax(dim=1) == y).sum())
    return loss, correct
