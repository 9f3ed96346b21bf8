"""FedAvg's estimator, :class:`FedAvg` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.estimators.base import FederatedEstimator
from fedstruct.estimators.prediction import InputColumns, Prediction, Predictor, check_targets
from fedstruct.fl.device import AUTO
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics
from fedstruct.fl.params import set_params
from fedstruct.methods.fedavg.client import FedAvgClient
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import TabularSchema, build_model
from fedstruct.methods.fedavg.server import FedAvgServer, FedAvgState
from fedstruct.privacy.central_dp import CentralDP

if TYPE_CHECKING:
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FedAvg"]


class FedAvg(
    Predictor,
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
    secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s (not with
        ``staleness_exponent``).
    rounds, local_epochs, learning_rate, ...
        Every other parameter is a field of :class:`FedAvgConfig`, documented there
        with its default (``fit`` builds ``config_`` from them and checks them
        together).

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
    schema_ : TabularSchema
        The task as ``fit`` reads it (target, features, classification or regression).

    :meth:`score` is the accuracy, or R² for a regression (:meth:`evaluate`).
    """

    score_metric = "accuracy"
    secure_aggregation_refusal = ""  # its server needs only sums (FedAvgServer)
    #: ``fit``'s server-held test rows (coded), evaluated after every round.
    _test: pd.DataFrame | None = None

    def __init__(
        self,
        target: str,
        cardinalities: Mapping[str, int],
        *,
        continuous: Sequence[str] = (),
        missing_values: bool = False,
        seed: int = 0,
        participation: Participation | None = None,
        dp_epsilon: float | None = None,
        dp_delta: float | None = None,
        dp_clip: float = 1.0,
        dp_noise_multiplier: float | None = None,
        central_dp_noise: float | None = None,
        central_dp_clip: float = CentralDP.clip,
        central_dp_quantile: float | None = CentralDP.target_quantile,
        central_dp_clip_rate: float = CentralDP.clip_learning_rate,
        central_dp_count_noise: float | None = CentralDP.count_noise,
        central_dp_delta: float = CentralDP.delta,
        rounds: int = 20,
        local_epochs: int = 1,
        batch_size: int = 32,
        learning_rate: float = 0.1,
        hidden: int = 32,
        staleness_exponent: float | None = None,
        test_fraction: float = 0.0,
        categorical_imputation: str = "missing-level",
        device: str = AUTO,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed, participation=participation, secure_aggregation=secure_aggregation
        )
        self.target = target
        self.cardinalities = cardinalities
        self.continuous = continuous
        self.missing_values = missing_values
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_clip = dp_clip
        self.dp_noise_multiplier = dp_noise_multiplier
        self.central_dp_noise = central_dp_noise
        self.central_dp_clip = central_dp_clip
        self.central_dp_quantile = central_dp_quantile
        self.central_dp_clip_rate = central_dp_clip_rate
        self.central_dp_count_noise = central_dp_count_noise
        self.central_dp_delta = central_dp_delta
        self.rounds = rounds
        self.local_epochs = local_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.hidden = hidden
        self.staleness_exponent = staleness_exponent
        self.test_fraction = test_fraction
        self.categorical_imputation = categorical_imputation
        self.device = device

    def check_params(self) -> None:
        """Check the task and keep it as ``schema_``.

        Raises
        ------
        UnknownVariableError, DataError
            For a target or feature the columns do not describe (:class:`TabularSchema`).
        """
        self.schema_ = TabularSchema(
            self.target, self.cardinalities, tuple(self.continuous), self.missing_values
        )

    def check_secure_aggregation(self) -> None:
        """Refuse ``staleness_exponent`` with secure aggregation.

        Raises
        ------
        ConfigError
            If late answers are to be merged: a secure sum adds the answers of one
            round, so an answer that arrives rounds later cannot join it.
        """
        if self.config_.staleness_exponent is not None:
            raise ConfigError(
                "fedavg refuses secure aggregation with staleness_exponent: a secure sum adds "
                "the answers of one round, so late answers cannot be merged; drop one of them"
            )

    # Federated protocol -----------------------------------------------------
    def make_client(self, data: ClientData) -> FedAvgClient:
        """The client holding ``data``."""
        return FedAvgClient(data, schema=self.schema_, config=self.config_, seed=self.seed)

    def make_server(self) -> FedAvgServer:
        """A fresh server algorithm."""
        return FedAvgServer(self.schema_, self.config_, self.seed, self._test)

    def identity(self) -> dict[str, Any]:
        """The task encoding, besides the config."""
        identity: dict[str, Any] = {
            "target": self.schema_.target,
            "cardinalities": self.schema_.cardinalities,
        }
        if self.schema_.needs_statistics:  # as before for complete categorical data
            identity["continuous"] = list(self.schema_.continuous)
            identity["missing_values"] = self.schema_.missing_values
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
            self.encoder_ = self.schema_.one_hot()
        else:
            self.encoder_ = self.schema_.encoder(statistics, self.config_.categorical_imputation)
        self.model_ = build_model(self.schema_, self.encoder_.width, self.config_.hidden, self.seed)
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
        saved = FeatureStatistics.from_arrays(self.schema_.columns, statistics)
        self._set_learned({k: np.asarray(v) for k, v in params.items()}, saved)

    def predict_proba(self, rows: pd.DataFrame) -> np.ndarray:
        """Class probabilities for ``rows`` (:meth:`~fedstruct.estimators.Predictor.model_rows`:
        level names in, for a run on a user's files), one column per class in code
        order.

        Raises
        ------
        ConfigError
            For a regression (use :meth:`predict`).
        """
        if self.schema_.regression:
            raise ConfigError(
                f"{self.schema_.target!r} is continuous: FedAvg predicts its value "
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
        if self.schema_.regression:
            mean, scale = self.schema_.target_scale(self.statistics_)
            return out[:, 0].double().numpy() * scale + mean
        return torch.softmax(out, dim=1).numpy()

    def is_regression(self) -> bool:
        """Whether the target is continuous (a regression)."""
        return bool(self.schema_.regression)

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """The predicted class of ``rows`` (its level name for a run on a user's files,
        else its code), or the predicted value of a continuous target."""
        return self.prediction(rows).states[self.schema_.target].to_numpy()

    def evaluate(self, X: pd.DataFrame | Sequence[ClientData], y: Any = None) -> dict[str, float]:
        """``accuracy`` (a regression: ``rmse`` and ``r2``) on the rows of ``X`` that
        give the target (:meth:`score`: accuracy, or R²).

        Parameters
        ----------
        X
            Rows with the features and, unless ``y`` gives them, the target's column
            (by level name for a run on a user's files; a missing label is not
            counted), or a list of held-out clients' data (``GridSearchCV`` over the
            clients: :meth:`~fedstruct.estimators.Predictor.scored_rows`).
        y
            The target's labels, one per row (then ``X`` needs no target column).

        Raises
        ------
        UnknownVariableError
            If neither ``X`` nor ``y`` gives the target.
        """
        coded = self.scored_rows(X, y, self.schema_.target)
        if self.schema_.target not in coded.columns:
            raise UnknownVariableError(
                f"score needs the target column {self.schema_.target!r} in the rows, or "
                "its labels as y"
            )
        labels = coded[self.schema_.target].to_numpy()
        if self.schema_.regression:
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
        return float(self.evaluate(X, y)["r2" if self.schema_.regression else "accuracy"])

    def input_columns(self) -> InputColumns:
        """The features are required; the target may be present. A model trained on
        rows with missing values imputes those of new rows."""
        target = self.schema_.target
        return InputColumns(
            self.schema_.features,
            (*self.schema_.features, target),
            labels=(target,),
            missing_values=self.schema_.needs_statistics,
        )

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """The target's class and class probabilities for coded ``rows``."""
        check_targets(targets, (self.schema_.target,))
        target = self.schema_.target
        if self.schema_.regression:
            values = self._outputs(rows)
            return Prediction(pd.DataFrame({target: values}, index=rows.index), {})
        proba = self._outputs(rows).astype(np.float64)
        return Prediction.from_probabilities({target: proba}, rows.index)
