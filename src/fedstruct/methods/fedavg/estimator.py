"""FedAvg's estimator, :class:`FedAvg` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import UnknownVariableError
from fedstruct.fl import FederatedEstimator, Participation
from fedstruct.fl.estimator import InputColumns, Prediction, check_targets
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
    """Federated averaging of a categorical classifier, scikit-learn style.

    Parameters
    ----------
    target
        The variable to predict.
    cardinalities
        Number of states of every variable used; every other variable is a feature.
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
    history_ : list of dict
        Per-round records (clients asked/answered, train loss, test metrics).
    traffic_ : fedstruct.fl.Traffic
        Bytes sent each way per round and client.

    :meth:`score` is the accuracy (:meth:`evaluate`).
    """

    score_metric = "accuracy"

    def __init__(
        self,
        target: str,
        cardinalities: Mapping[str, int],
        *,
        seed: int = 0,
        participation: Participation | None = None,
        **params: Any,
    ) -> None:
        self.schema = TabularSchema(target, cardinalities)
        super().__init__(seed=seed, participation=participation, **params)
        self._given(target=target, cardinalities=cardinalities)
        self._test: tuple[torch.Tensor, torch.Tensor] | None = None

    # Federated protocol -----------------------------------------------------
    def make_client(self, data: ClientData) -> FedAvgClient:
        """The client holding ``data``."""
        return FedAvgClient(data, schema=self.schema, config=self.config, seed=self.seed)

    def make_server(self) -> FedAvgServer:
        """A fresh server algorithm."""
        return FedAvgServer(self.schema, self.config, self.seed, self._test)

    def identity(self) -> dict[str, Any]:
        """The task encoding, besides the config."""
        return {"target": self.schema.target, "cardinalities": self.schema.cardinalities}

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
            Optional server-held test rows, evaluated after every round.
        **run_options
            ``backend``, ``checkpoint``, ``resume``, ``progress``, ``stop_after``
            (:meth:`FederatedEstimator.fit`).
        """
        self._test = None if test is None else self.schema.encode(test, where="test data")
        return super().fit(clients, **run_options)

    def learn(self, state: FedAvgState) -> None:
        """The final global weights and model."""
        self.params_ = state.params
        self.model_ = build_model(self.schema, self.config.hidden, self.seed)
        set_params(self.model_, self.params_)

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The global weights as arrays (nothing else is learned)."""
        return dict(self.params_), {}

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the global weights and model from :meth:`learned_state`'s output."""
        self.params_ = {k: np.asarray(v) for k, v in arrays.items()}
        self.model_ = build_model(self.schema, self.config.hidden, self.seed)
        set_params(self.model_, self.params_)

    def predict_proba(self, rows: pd.DataFrame) -> np.ndarray:
        """Class probabilities for ``rows`` (:meth:`~FederatedEstimator.model_rows`:
        level names in, for a run on a user's files), one column per class in code
        order."""
        return self._proba(self.model_rows(rows))

    @torch.no_grad()
    def _proba(self, coded: pd.DataFrame) -> np.ndarray:
        # the target's column, if any, is not an input (a missing label is -1)
        x, _ = self.schema.encode(coded.assign(**{self.schema.target: 0}), where="input")
        self.model_.eval()
        return torch.softmax(self.model_(x), dim=1).numpy()

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """The predicted class of ``rows``: its level name for a run on a user's files,
        else its code."""
        return self.prediction(rows).states[self.schema.target].to_numpy()

    def evaluate(self, X: pd.DataFrame, y: Any = None) -> dict[str, float]:
        """``accuracy`` on the rows of ``X`` that give the target (:meth:`score`).

        Parameters
        ----------
        X
            Rows with the features and, unless ``y`` gives them, the target's column
            (by level name for a run on a user's files; a missing label is not
            counted).
        y
            The target's labels, one per row (then ``X`` needs no target column).

        Raises
        ------
        UnknownVariableError
            If neither ``X`` nor ``y`` gives the target.
        """
        coded = self.model_rows(self._with_labels(X, y, self.schema.target))
        if self.schema.target not in coded.columns:
            raise UnknownVariableError(
                f"score needs the target column {self.schema.target!r} in the rows, or "
                "its labels as y"
            )
        labels = coded[self.schema.target].to_numpy()
        given = labels >= 0
        correct = self._proba(coded[given]).argmax(axis=1) == labels[given]
        return {"accuracy": float(np.mean(correct))}

    def input_columns(self) -> InputColumns:
        """The features are required; the target may be present."""
        target = self.schema.target
        return InputColumns(self.schema.features, (*self.schema.features, target), labels=(target,))

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """The target's class and class probabilities for coded ``rows``."""
        check_targets(targets, (self.schema.target,))
        proba = self._proba(rows).astype(np.float64)
        return Prediction.from_probabilities({self.schema.target: proba}, rows.index)
