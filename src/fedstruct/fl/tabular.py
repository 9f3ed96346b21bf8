"""A prediction task on a table, shared by the methods that train a network on a
user's columns (FedAvg; CAFE on a table): which column is the target, which are the
features and their kinds, and how a site's rows become inputs and labels with the
encoding of :mod:`fedstruct.fl.features` (built from federated statistics).

The server side of the statistics step is :func:`fedstruct.fl.features.gather_statistics`;
a client answers it with :func:`fedstruct.fl.features.site_summary` of its training
rows over :attr:`TabularSchema.columns`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl.features import FeatureColumns, FeatureEncoder, FeatureStatistics

__all__ = ["TabularSchema"]


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
