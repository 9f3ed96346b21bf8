"""F-CMs: federated concept-based models with evolving concept spaces.

Implements "Federated Concept-Based Models: Interpretable models with distributed
supervision" (papers/fcm-federated-concept-based-models.txt): clients with different
concept supervision (and optional concept graphs) train one shared concept model
(CBM, CEM, CGM, C2BM or the opaque baseline). Each round the server grows the concept
set, aggregates the clients' graphs into a DAG, adapts the architecture module by
module, and averages each module over the clients that trained it (Algorithm 1).

Examples
--------
>>> from fedstruct.experiments.fcm import concept_clients, make_concept_dataset
>>> data = make_concept_dataset("asia", n_samples=2000, autoencoder_epochs=5)
>>> part = concept_clients(data, n_clients=4, n_initial=2)
>>> model = FCM(task="dysp", cardinalities=data.cardinalities, rounds=3,
...             model="cbm").fit(part.clients)
>>> model.spec_.task
'dysp'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, ProtocolError, UnknownVariableError
from fedstruct.fl import FederatedEstimator, Participation
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm.client import FCMClient, LocalConceptData
from fedstruct.methods.fcm.config import ARCHITECTURES, FEDERATED_REGIMES, REGIMES, FCMConfig
from fedstruct.methods.fcm.evaluate import accuracy_metrics, intervention_curve
from fedstruct.methods.fcm.model import ConceptModel, ModelSpec, adapt, parameter_change
from fedstruct.methods.fcm.server import FCMServer, FCMState, aggregate_graphs
from fedstruct.methods.fcm.standalone import StandaloneFit, fit_standalone

__all__ = [
    "ARCHITECTURES",
    "FCM",
    "REGIMES",
    "ConceptModel",
    "FCMClient",
    "FCMConfig",
    "FCMServer",
    "LocalConceptData",
    "ModelSpec",
    "StandaloneFit",
    "accuracy_metrics",
    "adapt",
    "aggregate_graphs",
    "fit_standalone",
    "intervention_curve",
    "parameter_change",
]


class FCM(
    FederatedEstimator,
    method="fcm",
    config=FCMConfig,
    client=FCMClient,
    server=FCMServer,
):
    """F-CMs, scikit-learn style.

    Parameters
    ----------
    task
        The task variable ``Y``.
    cardinalities
        Number of states of every concept and of the task (the shared schema).
    seed
        The run's seed.
    participation
        Joins, leaves and dropouts (default: everyone every round); the server then
        samples ``clients_per_round`` of the available clients.
    **params
        Fields of :class:`FCMConfig` (``model``, ``regime``, ``rounds``, ...).

    Attributes
    ----------
    model_ : ConceptModel
        The model with the best global validation loss.
    spec_ : ModelSpec
        Its architecture (concept set, module inputs).
    graph_ : Graph
        The aggregated concept DAG at the end.
    concepts_ : tuple of str
        The federation's concept set ``M_T``.
    history_ : list of dict
        Per round: pool, sampled clients, losses, concepts, edges, parameter count.
    parameter_change_ : dict
        ``params_growth`` and ``params_changed_fraction`` between the model before the
        concept set first grew and the final model (both 0 if it never grew).
    best_round_ : int
        The round whose model was kept.
    """

    def __init__(
        self,
        *,
        task: str,
        cardinalities: Mapping[str, int],
        seed: int = 0,
        participation: Participation | None = None,
        **params: Any,
    ) -> None:
        if task not in cardinalities:
            raise UnknownVariableError(
                f"task {task!r} has no entry in cardinalities; give its number of states"
            )
        self.task = task
        self.cardinalities = {str(k): int(v) for k, v in cardinalities.items()}
        super().__init__(seed=seed, participation=participation, **params)
        if self.config.regime not in FEDERATED_REGIMES:
            raise ConfigError(
                f"regime {self.config.regime!r} trains no federation; use fit_standalone "
                f"for it, or one of {list(FEDERATED_REGIMES)} here"
            )

    def identity(self) -> dict[str, Any]:
        """The task and the schema change the result."""
        return {"task": self.task, "cardinalities": self.cardinalities}

    def make_client(self, data: ClientData) -> FCMClient:
        """The client holding ``data``."""
        return FCMClient(
            data, task=self.task, cardinalities=self.cardinalities, config=self.config,
            seed=self.seed,
        )  # fmt: skip

    def make_server(self) -> FCMServer:
        """A fresh server algorithm."""
        return FCMServer(self.config, self.task, self.cardinalities, self.seed)

    def learn(self, state: FCMState) -> None:
        """The best model (by the early-stopping criterion), graph and concept space.

        Raises
        ------
        ProtocolError
            If no client answered in any round. (During the run:
            ``UnknownVariableError`` if a client supervises a variable outside
            ``cardinalities`` or its graph names one it does not supervise;
            ``DataError`` for a client without concept or task labels, without a
            feature column, or with invalid label codes; ``ProtocolError`` if clients
            have different feature columns.)
        """
        if state.spec is None or state.params is None:
            raise ProtocolError("no client answered in any round: F-CMs learned nothing")
        spec, params, best_round = state.best or (state.spec, state.params, len(state.history))
        self.spec_ = spec
        self.model_ = ConceptModel(spec)
        self.model_.load_arrays(params)
        self.graph_ = state.graph if state.graph is not None else Graph.empty(spec.nodes)
        self.concepts_ = state.concepts
        self.features_ = state.features
        self.best_round_ = best_round
        self.parameter_change_ = (
            parameter_change(state.before_growth, params)
            if state.before_growth is not None
            else {"params_growth": 0.0, "params_changed_fraction": 0.0}
        )

    def score(self, test: pd.DataFrame, truth: Graph) -> dict[str, float]:
        """Task accuracy, concept accuracy and coverage on fully labelled ``test`` rows
        (see :func:`~fedstruct.methods.fcm.evaluate.accuracy_metrics`)."""
        x = test[list(self.features_)].to_numpy(dtype=np.float32)
        return accuracy_metrics(self.model_, x, test, truth, self.cardinalities)
