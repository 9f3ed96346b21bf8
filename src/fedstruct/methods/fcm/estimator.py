"""F-CMs's estimator, :class:`FCM` (the package's docstring describes the method)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.data.graph_files import given_graph, graph_name
from fedstruct.discovery.knowledge import check_graph, load_knowledge
from fedstruct.errors import ConfigError, ProtocolError, UnknownVariableError
from fedstruct.estimators.base import FederatedEstimator
from fedstruct.estimators.prediction import InputColumns, Prediction, Predictor, check_targets
from fedstruct.fl.device import AUTO
from fedstruct.fl.features import FeatureEncoder
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.graphs.pag import dag_member
from fedstruct.methods.fcm.client import ENCODING, FCMClient, input_columns, input_frame
from fedstruct.methods.fcm.config import FEDERATED_REGIMES, FCMConfig
from fedstruct.methods.fcm.evaluate import (
    accuracy_metrics,
    node_probabilities,
)
from fedstruct.methods.fcm.model import ConceptModel, ModelSpec, parameter_change
from fedstruct.methods.fcm.server import FCMServer, FCMState

if TYPE_CHECKING:
    from fedstruct.discovery.knowledge import Knowledge
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FCM"]


class FCM(
    Predictor,
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
    graph
        A concept graph to use instead of aggregating the clients' own graphs, e.g.
        one a causal discovery run learned on the clients' concept and task columns
        (DAG, CPDAG or PAG: turned into one DAG of its class by
        :func:`~fedstruct.graphs.pag.dag_member` with ``bidirected``). Every round the
        server builds the architecture from its restriction to the federation's
        concept set (variables it lacks are isolated). A :class:`Graph`, or a graph
        file or run folder (:func:`~fedstruct.data.graph_files.given_graph`; read by
        the server only).
    secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s.
    model, regime, rounds, ...
        Every other parameter is a field of :class:`FCMConfig`, documented there with
        its default (``fit`` builds ``config_`` from them and checks them together).

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
    proposed_graphs_ : dict
        Client name -> the latest graph it proposed to the vote (``None``: none), for
        the clients the server kept (``graph_memory``); set by a fit, not saved.
    history_ : list of dict
        Per round: pool, sampled clients, losses, concepts, edges, parameter count.
    parameter_change_ : dict
        ``params_growth`` and ``params_changed_fraction`` between the model before the
        concept set first grew and the final model (both 0 if it never grew).
    best_round_ : int
        The round whose model was kept.

    :meth:`score` is the task accuracy; :meth:`evaluate` adds the concepts'.
    """

    learns = "a concept graph whose conditionals are neural networks, not tables"

    score_metric = "task_accuracy"
    #: Module-wise averages, strength votes and losses are ratios of sums (FCMServer).
    secure_aggregation_refusal = ""

    def __init__(
        self,
        *,
        task: str,
        cardinalities: Mapping[str, int],
        seed: int = 0,
        participation: Participation | None = None,
        graph: Graph | str | Path | None = None,
        model: str = "c2bm",
        regime: str = "fcm",
        rounds: int = 200,
        clients_per_round: int = 10,
        local_epochs: int = 2,
        batch_size: int = 512,
        learning_rate: float = 0.01,
        concept_weight: float = 0.8,
        train_intervention_rate: float = 0.25,
        patience: int = 10,
        validation_fraction: float = 0.125,
        graph_memory: str = "all",
        bidirected: str = "drop",
        freeze_unsupervised: bool = True,
        encoder_hidden: int = 64,
        concept_hidden: int | None = None,
        embedding_size: int = 8,
        task_hidden: int = 16,
        dp_epsilon: float | None = None,
        dp_delta: float = 1e-5,
        dp_clip: float = 1.0,
        dp_rounds: int | None = None,
        input_scaling: str = "auto",
        knowledge: str | Knowledge | None = None,
        intervention_policy: str = "graph_level",
        device: str = AUTO,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed, participation=participation, secure_aggregation=secure_aggregation
        )
        self.task = task
        self.cardinalities = cardinalities
        self.graph = graph
        self.model = model
        self.regime = regime
        self.rounds = rounds
        self.clients_per_round = clients_per_round
        self.local_epochs = local_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.concept_weight = concept_weight
        self.train_intervention_rate = train_intervention_rate
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.graph_memory = graph_memory
        self.bidirected = bidirected
        self.freeze_unsupervised = freeze_unsupervised
        self.encoder_hidden = encoder_hidden
        self.concept_hidden = concept_hidden
        self.embedding_size = embedding_size
        self.task_hidden = task_hidden
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_clip = dp_clip
        self.dp_rounds = dp_rounds
        self.input_scaling = input_scaling
        self.knowledge = knowledge
        self.intervention_policy = intervention_policy
        self.device = device

    def check_params(self) -> None:
        """Check that the task has a number of states and that the regime trains a
        federation, and keep ``cardinalities_`` (names -> whole numbers).

        Raises
        ------
        UnknownVariableError
            If the task has no entry in ``cardinalities``.
        ConfigError
            For a regime that trains no federation.
        """
        if self.task not in self.cardinalities:
            raise UnknownVariableError(
                f"task {self.task!r} has no entry in cardinalities; give its number of states"
            )
        self.cardinalities_ = {str(k): int(v) for k, v in self.cardinalities.items()}
        if self.config_.regime not in FEDERATED_REGIMES:
            raise ConfigError(
                f"regime {self.config_.regime!r} trains no federation; use fit_standalone "
                f"for it, or one of {list(FEDERATED_REGIMES)} here"
            )

    def identity(self) -> dict[str, Any]:
        """The task, the schema and a given graph change the result."""
        given = given_graph(self.graph)
        return {
            "task": self.task,
            "cardinalities": self.cardinalities_,
            "graph": None if given is None else given.to_dict(),
        }

    def make_client(self, data: ClientData) -> FCMClient:
        """The client holding ``data``."""
        return FCMClient(
            data, task=self.task, cardinalities=self.cardinalities_, config=self.config_,
            seed=self.seed,
        )  # fmt: skip

    def make_server(self) -> FCMServer:
        """A fresh server algorithm (with the given graph as a DAG, if any)."""
        given = given_graph(self.graph)
        if given is not None:
            knowledge = load_knowledge(self.config_.knowledge)
            check_graph(given, knowledge, f"the concept graph {graph_name(self.graph)}")
            given = dag_member(given, self.config_.bidirected)
        monitor = getattr(self, "round_monitor", None)
        return FCMServer(self.config_, self.task, self.cardinalities_, self.seed, given, monitor)

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
        self.proposed_graphs_ = {name: graph for name, (graph, _) in state.reports.items()}
        self.features_ = state.features
        self.encoder_ = state.encoder()
        self.best_round_ = best_round
        self.parameter_change_ = (
            parameter_change(state.before_growth, params)
            if state.before_growth is not None
            else {"params_growth": 0.0, "params_changed_fraction": 0.0}
        )

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The model's parameters (and the inputs' federated encoding, ``features.*``,
        when the run had the statistics step) as arrays; its architecture, the concept
        graph, the concept set and the input columns as JSON."""
        encoding = {} if self.encoder_ is None else self.encoder_.to_arrays(ENCODING)
        return {**self.model_.state_arrays(), **encoding}, {
            "spec": json.loads(self.spec_.to_json()),
            "graph": to_graph_json(self.graph_),
            "concepts": list(self.concepts_),
            "features": list(self.features_),
            "best_round": self.best_round_,
            "parameter_change": self.parameter_change_,
        }

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        encoding, weights = FeatureEncoder.split(arrays, ENCODING)
        self.spec_ = ModelSpec.from_json(json.dumps(meta["spec"]))
        self.model_ = ConceptModel(self.spec_)
        self.model_.load_arrays(weights)
        self.graph_ = from_graph_json(meta["graph"]).graph
        self.concepts_ = tuple(meta["concepts"])
        self.features_ = tuple(meta["features"])
        self.encoder_ = (
            FeatureEncoder.from_arrays(input_columns(self.features_), encoding, ENCODING)
            if encoding
            else None
        )
        self.best_round_ = int(meta["best_round"])
        self.parameter_change_ = dict(meta["parameter_change"])

    def _inputs(self, rows: pd.DataFrame) -> NDArray[np.float32]:
        missing = [f for f in self.features_ if f not in rows.columns]
        if missing:
            raise UnknownVariableError(
                f"the rows lack input columns {missing[:5]} ({len(missing)} of "
                f"{len(self.features_)}); the model reads {list(self.features_)[:5]}..."
            )
        if self.encoder_ is not None:
            return self.encoder_.encode(input_frame(rows, self.features_), "the rows")
        return rows[list(self.features_)].to_numpy(dtype=np.float32)

    def input_columns(self) -> InputColumns:
        """The input columns are required; the labels of the concepts and the task
        (every variable of ``cardinalities``) may be present. A model whose inputs
        are standardised with the federated statistics imputes a missing input as
        training did (the mean, and its missing indicator)."""
        labels = tuple(self.cardinalities_)
        imputes = self.encoder_ is not None and self.encoder_.imputes
        return InputColumns(
            self.features_, (*self.features_, *labels), labels=labels, missing_values=imputes
        )

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """Every concept's and the task's state and probabilities for coded ``rows``
        (only the input columns ``features_`` are read), or those of ``targets``."""
        chosen = check_targets(targets, self.spec_.nodes)
        probabilities = node_probabilities(self.model_, self._inputs(rows))
        return Prediction.from_probabilities({n: probabilities[n] for n in chosen}, rows.index)

    def predict(self, rows: pd.DataFrame) -> NDArray[Any]:
        """The predicted task state of ``rows``: its level name for a run on a user's
        files, else its code."""
        return self.prediction(rows, [self.task]).states[self.task].to_numpy()

    def evaluate(
        self, X: pd.DataFrame, y: Any = None, *, truth: Graph | None = None
    ) -> dict[str, float]:
        """Task accuracy and concept accuracy on labelled rows (see
        :func:`~fedstruct.methods.fcm.evaluate.accuracy_metrics`); :meth:`score` is the
        task accuracy.

        Parameters
        ----------
        X
            Rows with the input columns and the labels of the task and the concepts
            (by level name for a run on a user's files).
        y
            The task's labels, one per row (then ``X`` needs no task column).
        truth
            The true graph: adds concept coverage.
        """
        coded = self.scored_rows(X, y, self.task)
        return accuracy_metrics(self.model_, self._inputs(coded), coded, truth, self.cardinalities_)
