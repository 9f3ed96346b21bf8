"""FedAvg's estimator, :class:`FedAvg` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.fl import FederatedEstimator, Participation
from fedstruct.fl.estimator import InputColumns, Prediction, check_targets
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics
from fedstruct.fl.params import set_params
from fedstruct.methods.fedavg.client import FedAvgClient
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import TabularSchema, build_model
from fedstruct.methods.fedavg.server import FedAvgServer, FedAvgState

__all__ = ["FedAvg"]


class FedAvg(
    FederatedEstimator,
    method="fedavg",
    config=FedAvgConfig,
    client=FedAvgClient,
    server=FedAvgServer,
):
    """Federated averaging of a classifier or regressor on a table, scikit-learn style.

    A categorical or ordinal target is a classification (cross-entropy; scored by
    accuracy), a continuous one a regression (squared error on the target
    standardised with its federated mean and deviation; scored by RMSE and R²).
    Categorical and ordinal features are one-hot; continuous ones standardised, and
    missing values imputed with a missing indicator, from federated statistics that a
    first step gathers (:mod:`fedstruct.fl.features`; complete categorical data skip
    it). The statistics are saved with the model and encode new rows.

    Parameters
    ----------
    target
        The variable to predict.
    cardinalities
        Number of levels of every categorical or ordinal variable used.
    continuous
        The continuous variables used. Every variable of ``cardinalities`` and
        ``continuous`` but the target is a feature.
    missing_values
        Whether the clients' rows may miss values (NaN, or code ``-1`` for a
        categorical variable): they are imputed (``categorical_imputation``), and rows
        missing the target are left out of training and scoring (counted in the first
        round's ``missing_target_rows``).
    seed
        The run's seed (initial weights, client batches, participation draws).
    participation
        Who takes part in each round (default: everyone).
    **params
        Fields of :class:`FedAvgConfig` (``rounds``, ``local_epochs``, ...).

    Attributes
    ----------
    model_ : torch.nn.Module
        The final global model.
    statistics_ : FeatureStatistics or None
        The federated feature statistics (``None`` for complete categorical data).
    encoder_ : FeatureEncoder
        How rows become the model's inputs.
    history_ : list of dict
        Per-round records (clients asked/answered, train loss, test metrics).
    traffic_ : fedstruct.fl.Traffic
        Bytes sent each way per round and client.

    :meth:`score` is the accuracy, or R² for a regression (:meth:`evaluate`).
    """

    score_metric = "accuracy"
    secure_aggregation_refusal = ""  # its server needs only sums (FedAvgServer)

    def __init__(
        self,
        target: str,
        cardinalities: Mapping[str, int],
        *,
        continuous: Sequence[str] = (),
        missing_values: bool = False,
        seed: int = 0,
        participation: Participation | None = None,
        **params: Any,
    ) -> None:
        self.schema = TabularSchema(target, cardinalities, tuple(continuous), missing_values)
        super().__init__(seed=seed, participation=participation, **params)
        self._given(
            target=target,
            cardinalities=cardinalities,
            continuous=continuous,
            missing_values=missing_values,
        )
        self._test: pd.DataFrame | None = None

    def check_secure_aggregation(self) -> None:
        """Refuse ``staleness_exponent`` with secure aggregation.

        Raises
        ------
        ConfigError
            If late answers are to be merged: a secure sum adds the answers of one
            round, so an answer that arrives rounds later cannot join it.
        """
        if self.config.staleness_exponent is not None:
            raise ConfigError(
                "fedavg refuses secure aggregation with staleness_exponent: a secure sum adds "
                "the answers of one round, so late answers cannot be merged; drop one of them"
            )

    # Federated protocol -----------------------------------------------------
    def make_client(self, data: ClientData) -> FedAvgClient:
        """The client holding ``data``."""
        return FedAvgClient(data, schema=self.schema, config=self.config, seed=self.seed)

    def make_server(self) -> FedAvgServer:
        """A fresh server algorithm."""
        return FedAvgServer(self.schema, self.config, self.seed, self._test)

    def identity(self) -> dict[str, Any]:
        """The task encoding, besides the config."""
        identity: dict[str, Any] = {
            "target": self.schema.target,
            "cardinalities": self.schema.cardinalities,
        }
        if self.schema.needs_statistics:  # as before for complete categorical data
            identity["continuous"] = list(self.schema.continuous)
            identity["missing_values"] = self.schema.missing_values
        return identity

    # Estimator --------------------------------------------------------------
    def fit(
        self, clients: Sequence[ClientData] | Sequence[str], *,
        test: pd.DataFrame | None = None, **run_options: Any,
    ) -> FedAvg:  # fmt: skip
        """Run the federation over ``clients``.

        Parameters
        ----------
        clients
            The clients' data (their names suffice on a deployment backend).
        test
            Optional server-held test rows (coded), evaluated after every round.
        **run_options
            ``backend``, ``checkpoint``, ``resume``, ``progress``, ``stop_after``
            (:meth:`FederatedEstimator.fit`).
        """
        self._test = test
        return super().fit(clients, **run_options)

    def learn(self, state: FedAvgState) -> None:
        """The final global weights, statistics, encoder and model."""
        self._set_learned(state.params, state.statistics)

    def _set_learned(
        self, params: Mapping[str, NDArray[Any]], statistics: FeatureStatistics | None
    ) -> None:
        self.params_ = dict(params)
        self.statistics_ = statistics
        if statistics is None:
            self.encoder_ = self.schema.one_hot()
        else:
            self.encoder_ = self.schema.encoder(statistics, self.config.categorical_imputation)
        self.model_ = build_model(self.schema, self.encoder_.width, self.config.hidden, self.seed)
        set_params(self.model_, self.params_)

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The global weights and, when the run gathered them, the federated feature
        statistics (arrays ``statistics.*``) as arrays."""
        arrays = dict(self.params_)
        if self.statistics_ is not None:
            arrays.update(self.statistics_.to_arrays())
        return arrays, {}

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the global weights, statistics and model from :meth:`learned_state`'s
        output."""
        statistics, params = FeatureEncoder.split(arrays, "statistics.")
        saved = FeatureStatistics.from_arrays(self.schema.columns, statistics)
        self._set_learned({k: np.asarray(v) for k, v in params.items()}, saved)

    def predict_proba(self, rows: pd.DataFrame) -> np.ndarray:
        """Class probabilities for ``rows`` (:meth:`~FederatedEstimator.model_rows`:
        level names in, for a run on a user's files), one column per class in code
        order.

        Raises
        ------
        ConfigError
            For a regression (use :meth:`predict`).
        """
        if self.schema.regression:
            raise ConfigError(
                f"{self.schema.target!r} is continuous: FedAvg predicts its value "
                "(predict), not class probabilities"
            )
        return self._outputs(self.model_rows(rows))

    @torch.no_grad()
    def _outputs(self, coded: pd.DataFrame) -> np.ndarray:
        """Class probabilities (rows x classes), or the predicted values of a
        regression in the target's units (one per row), for coded rows."""
        x = torch.from_numpy(self.encoder_.encode(coded, where="input"))
        self.model_.eval()
        out = self.model_(x)
        if self.schema.regression:
            mean, scale = self.schema.target_scale(self.statistics_)
            return out[:, 0].double().numpy() * scale + mean
        return torch.softmax(out, dim=1).numpy()

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """The predicted class of ``rows`` (its level name for a run on a user's files,
        else its code), or the predicted value of a continuous target."""
        return self.prediction(rows).states[self.schema.target].to_numpy()

    def evaluate(self, X: pd.DataFrame | Sequence[ClientData], y: Any = None) -> dict[str, float]:
        """``accuracy`` (a regression: ``rmse`` and ``r2``) on the rows of ``X`` that
        give the target (:meth:`score`: accuracy, or R²).

        Parameters
        ----------
        X
            Rows with the features and, unless ``y`` gives them, the target's column
            (by level name for a run on a user's files; a missing label is not
            counted), or a list of held-out clients' data (``GridSearchCV`` over the
            clients: :meth:`~fedstruct.fl.FederatedEstimator.scored_rows`).
        y
            The target's labels, one per row (then ``X`` needs no target column).

        Raises
        ------
        UnknownVariableError
            If neither ``X`` nor ``y`` gives the target.
        """
        coded = self.scored_rows(X, y, self.schema.target)
        if self.schema.target not in coded.columns:
            raise UnknownVariableError(
                f"score needs the target column {self.schema.target!r} in the rows, or "
                "its labels as y"
            )
        labels = coded[self.schema.target].to_numpy()
        if self.schema.regression:
            given = ~np.isnan(labels.astype(np.float64))
            error = self._outputs(coded[given]) - labels[given]
            deviation = labels[given] - labels[given].mean()
            sst = float(deviation @ deviation)
            return {
                "rmse": float(np.sqrt(np.mean(error**2))),
                "r2": 1 - float(error @ error) / sst if sst > 0 else float("nan"),
            }
        given = labels >= 0
        correct = self._outputs(coded[given]).argmax(axis=1) == labels[given]
        return {"accuracy": float(np.mean(correct))}

    def score(self, X: pd.DataFrame, y: Any = None) -> float:
        """The accuracy, or R² for a regression (:meth:`evaluate`)."""
        return float(self.evaluate(X, y)["r2" if self.schema.regression else "accuracy"])

    def input_columns(self) -> InputColumns:
        """The features are required; the target may be present. A model trained on
        rows with missing values imputes those of new rows."""
        target = self.schema.target
        return InputColumns(
            self.schema.features,
            (*self.schema.features, target),
            labels=(target,),
            missing_values=self.schema.needs_statistics,
        )

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """The target's class and class probabilities for coded ``rows``."""
        check_targets(targets, (self.schema.target,))
        target = self.schema.target
        if self.schema.regression:
            values = self._outputs(rows)
            return Prediction(pd.DataFrame({target: values}, index=rows.index), {})
        proba = self._outputs(rows).astype(np.float64)
        return Prediction.from_probabilities({target: proba}, rows.index)
