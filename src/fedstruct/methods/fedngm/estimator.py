"""FedNGM's estimator, :class:`FedNGM` (the package's docstring describes the method)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.data.graph_files import given_graph, graph_name
from fedstruct.discovery.knowledge import Knowledge, check_graph, load_knowledge
from fedstruct.errors import (
    ConfigError,
    FedstructWarning,
    KnowledgeError,
    PrivacyViolationError,
    UnknownVariableError,
    unknown_choice_message,
)
from fedstruct.estimators.base import FederatedEstimator
from fedstruct.estimators.prediction import InputColumns, Prediction, Predictor, check_targets
from fedstruct.estimators.sampling import JointModel
from fedstruct.fl.device import AUTO
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.graphs.undirected import dependency_graph
from fedstruct.methods.fedngm.client import FedNGMClient
from fedstruct.methods.fedngm.config import INFERENCE_METHODS, FedNGMConfig
from fedstruct.methods.fedngm.metrics import prediction_metrics
from fedstruct.methods.fedngm.model import NGM, isolated_message
from fedstruct.methods.fedngm.moments import PooledCorrelation
from fedstruct.methods.fedngm.schema import KINDS, Schema
from fedstruct.methods.fedngm.server import FedNGMServer, FedNGMState

if TYPE_CHECKING:
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FedNGM", "refuse_unsound_knowledge"]


class FedNGM(
    JointModel,
    Predictor,
    FederatedEstimator,
    method="fedngm",
    config=FedNGMConfig,
    client=FedNGMClient,
    server=FedNGMServer,
):
    """FedNGM, scikit-learn style.

    Parameters
    ----------
    kinds
        Kind of every variable of the federation: ``"real"``, ``"ordinal"``,
        ``"binary"`` or ``"categorical"`` (the shared data dictionary).
    seed
        The run's seed.
    participation
        Joins, leaves and dropouts (default: everyone every round).
    public
        Public data the master holds (eq. 3, used when ``public_weight > 0``).
    graph
        A graph over (at least) the common variables, e.g. one a causal discovery
        run learned (DAG, CPDAG or PAG), to use instead of merging the clients' local
        graphs: the master skips the graph round and constrains every NGM by its
        undirected form (``graph_rule``) restricted to the common variables. A
        :class:`Graph`, or a graph file or run folder
        (:func:`~fedstruct.data.graph_files.given_graph`; read by the master only).
        Not for the NGR variant, which learns no graph.
    secure_aggregation
        Refused: FedNGM's master needs each client's model.
    variant, epochs, sampler, ...
        Every other parameter is a field of :class:`FedNGMConfig`, documented there
        with its default (``fit`` builds ``config_`` from them and checks them
        together).

    Attributes
    ----------
    model_ : NGM
        The released global model.
    graph_ : Graph
        The merged graph (NGM) or the global NGR's revealed graph.
    schema_ : Schema
        The common variables and their shared encoding.
    client_models_ : dict
        Client name -> the NGM it trained and sent.
    correlation_ : PooledCorrelation or None
        The sites' pooled correlations of the common numeric variables (their
        co-moments, sent in round 1: :mod:`~fedstruct.methods.fedngm.moments`), the
        check ``fedstruct query`` holds an answer against; ``None`` with fewer than two.
    site_scores_ : dict
        Client name -> what it answered with the release when ``test_fraction > 0``:
        ``held_out`` (rows kept out) and ``global_own_ratio`` (the global model's
        error relative to the client's own model on them, below 1: the federation
        helped; :func:`~fedstruct.methods.fedngm.metrics.global_own_ratio`).
    history_ : list of dict
        One record per phase.

    :meth:`score` and :meth:`evaluate` predict one variable (``target``) from the
    others.
    """

    learns = "an undirected graph and a neural network, not a DAG with tables"

    secure_aggregation_refusal = (
        "its server needs each client's reply, not their sum (it distils the global model "
        "from each client's own model)"
    )

    def __init__(
        self,
        *,
        kinds: Mapping[str, str],
        seed: int = 0,
        participation: Participation | None = None,
        public: pd.DataFrame | None = None,
        graph: Graph | str | Path | None = None,
        variant: str = "ngm",
        constraint: str = "mask",
        units_per_variable: int = 8,
        hidden: int = 64,
        penalty: float = 0.3,
        self_weight: float = 10.0,
        sparsity: float = 0.5,
        epochs: int = 60,
        batch_size: int = 256,
        min_batches: int = 4,
        learning_rate: float = 3e-3,
        missing_loss: str = "neighbours",
        graph_method: str = "glasso",
        graph_scope: str = "all",
        graph_rule: str = "moral",
        glasso_cv: int = 3,
        graph_max_rows: int = 10_000,
        edge_level: float | None = 0.2,
        isolated_edges: str = "glasso",
        isolated_level: float = 0.01,
        ngr_threshold: float = 0.1,
        distillation_samples: int | None = None,
        min_distillation_samples: int = 1_000,
        allocation: str = "equal",
        sampler: str = "gibbs",
        burn_in: int = 30,
        soft_targets: bool = True,
        public_weight: float = 1.0,
        release_threshold: int = 1,
        inference: str = "gradient",
        inference_steps: int = 100,
        stitch_hidden: int = 8,
        stitch_init: float = 0.05,
        validation_fraction: float = 0.1,
        test_fraction: float = 0.0,
        log_skew: float | None = 2.0,
        knowledge: str | Knowledge | None = None,
        device: str = AUTO,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed, participation=participation, secure_aggregation=secure_aggregation
        )
        self.kinds = kinds
        self.public = public
        self.graph = graph
        self.variant = variant
        self.constraint = constraint
        self.units_per_variable = units_per_variable
        self.hidden = hidden
        self.penalty = penalty
        self.self_weight = self_weight
        self.sparsity = sparsity
        self.epochs = epochs
        self.batch_size = batch_size
        self.min_batches = min_batches
        self.learning_rate = learning_rate
        self.missing_loss = missing_loss
        self.graph_method = graph_method
        self.graph_scope = graph_scope
        self.graph_rule = graph_rule
        self.glasso_cv = glasso_cv
        self.graph_max_rows = graph_max_rows
        self.edge_level = edge_level
        self.isolated_edges = isolated_edges
        self.isolated_level = isolated_level
        self.ngr_threshold = ngr_threshold
        self.distillation_samples = distillation_samples
        self.min_distillation_samples = min_distillation_samples
        self.allocation = allocation
        self.sampler = sampler
        self.burn_in = burn_in
        self.soft_targets = soft_targets
        self.public_weight = public_weight
        self.release_threshold = release_threshold
        self.inference = inference
        self.inference_steps = inference_steps
        self.stitch_hidden = stitch_hidden
        self.stitch_init = stitch_init
        self.validation_fraction = validation_fraction
        self.test_fraction = test_fraction
        self.log_skew = log_skew
        self.knowledge = knowledge
        self.device = device

    def check_params(self) -> None:
        """Check the data dictionary and that a given graph goes with the variant, and
        keep ``kinds_`` (names -> kinds, as strings).

        Raises
        ------
        ConfigError
            For a kind that is not one of FedNGM's, or a graph given to the NGR variant.
        """
        bad = {k: v for k, v in self.kinds.items() if v not in KINDS}
        if bad:
            name, kind = next(iter(bad.items()))
            raise ConfigError(f"variable {name!r} has kind {kind!r}; use one of {list(KINDS)}")
        self.kinds_ = {str(k): str(v) for k, v in self.kinds.items()}
        if self.graph is not None and self.config_.variant != "ngm":
            raise ConfigError(
                "the NGR variant learns no graph, so it takes none; drop graph= or use "
                "variant='ngm'"
            )

    def identity(self) -> dict[str, Any]:
        """The data dictionary and whether public data are used change the result."""
        given = given_graph(self.graph)
        return {
            "kinds": self.kinds_,
            "public_rows": 0 if self.public is None else len(self.public),
            "graph": None if given is None else given.to_dict(),
        }

    def make_client(self, data: ClientData) -> FedNGMClient:
        """The client holding ``data``."""
        return FedNGMClient(data, kinds=self.kinds_, config=self.config_, seed=self.seed)

    def make_server(self) -> FedNGMServer:
        """A fresh master (with the given graph's undirected form, if any).

        Raises
        ------
        KnowledgeError
            If the graph round is to learn the graph and the knowledge has
            ``forbidden_adjacent`` pairs (:func:`refuse_unsound_knowledge`).
        """
        given = given_graph(self.graph)
        knowledge = load_knowledge(self.config_.knowledge)
        if given is not None:
            check_graph(given, knowledge, f"the graph {graph_name(self.graph)}")
            given = dependency_graph(given, self.config_.graph_rule)
        elif self.config_.variant == "ngm" and knowledge is not None:
            refuse_unsound_knowledge(knowledge)
        return FedNGMServer(self.config_, self.seed, self.public, given)

    def learn(self, state: FedNGMState) -> None:
        """The global NGM and graph, the client models and the shared encoding.

        Raises
        ------
        PrivacyViolationError
            If fewer clients than the release threshold contributed: nothing is
            released. (During the run: ``ProtocolError`` if a client shares no
            variable with the others, naming it, or fewer than two are common.)
        """
        self.client_models_ = state.client_models
        self.site_scores_ = state.site_scores
        self.schema_ = state.schema
        self.correlation_ = state.correlation
        if state.refused:
            raise PrivacyViolationError(state.refused)
        self.model_ = state.global_model
        if state.global_model is not None:
            self.graph_ = state.graph if state.graph is not None else state.global_model.graph

    def personalise(self, data: ClientData, graph: Graph | None = None) -> NGM:
        """Stitch ``data``'s own variables into the global model (§2.4), as the client
        holding ``data`` does after the release (a local computation)."""
        client = self.make_client(data)
        client.global_model = self.model_
        return client.personalise(graph)

    def input_columns(self) -> InputColumns:
        """No column is required (any of the global model's variables is evidence),
        and any other column may be present (a site's own variables, which the global
        model does not read: stitching, §2.4, is the site's)."""
        return InputColumns((), self.released().names, others_allowed=True)

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """Each target's prediction from the evidence in coded ``rows`` (every column
        the global model has), by the global model (§2.3): a categorical target's
        most likely category and its probabilities, a continuous one's predictive
        mean. By default the targets are the model's variables that ``rows`` lack.
        (:meth:`~FederatedEstimator.prediction` reads level names and names the
        states for a run on a user's files.) A target with no neighbour in the
        model's graph gets a line in the result's ``warnings`` and a
        :class:`~fedstruct.errors.FedstructWarning` (:func:`isolated_message`).

        Raises
        ------
        ConfigError
            If no global model was released, or ``rows`` hold every variable and no
            ``targets`` are named.
        UnknownVariableError
            For a target the model does not have.
        """
        model = self.released()
        absent = [v for v in model.names if v not in rows.columns]
        if not targets and not absent:
            raise ConfigError(
                "the rows hold every variable of the model: name the variables to predict "
                "(targets; --target COL)"
            )
        chosen = check_targets(targets or absent, model.names)
        states, probabilities = {}, {}
        how = self.inference_options()
        for target in chosen:
            spec = model.schema.spec(target)
            if spec.is_categorical:
                p = model.predict_proba(rows, target, **how)
                probabilities[target] = pd.DataFrame(p, index=rows.index, columns=spec.categories)
                states[target] = np.asarray(spec.categories)[p.argmax(axis=1)]
            else:
                states[target] = model.predict(rows, target, **how)
        notes = tuple(m for m in (isolated_message(model, t) for t in chosen) if m)
        for note in notes:
            warnings.warn(note, FedstructWarning, stacklevel=2)
        return Prediction(pd.DataFrame(states, index=rows.index), probabilities, notes)

    def inference_options(self, method: str | None = None) -> dict[str, Any]:
        """The inference options of :meth:`NGM.predict` for this run: ``method``
        (default: the ``inference`` setting) and the ``inference_steps`` setting.

        Raises
        ------
        ConfigError
            For a method that is not one of ``"message"``, ``"gradient"``.
        """
        chosen = self.config_.inference if method is None else method
        if chosen not in INFERENCE_METHODS:
            raise ConfigError(unknown_choice_message("inference", chosen, INFERENCE_METHODS))
        return {"method": chosen, "steps": self.config_.inference_steps}

    def sampling_options(self) -> dict[str, Any]:
        """The run's ``sampler`` and ``burn_in`` settings, for :meth:`NGM.sample`."""
        return {"sampler": self.config_.sampler, "burn_in": self.config_.burn_in}

    def evaluate(
        self, X: pd.DataFrame, y: Any = None, *, target: str | None = None
    ) -> dict[str, float]:
        """How well the released global model predicts ``target`` from every other
        variable of ``X`` it has (:func:`~fedstruct.methods.fedngm.metrics.prediction_metrics`:
        MAE and RMSE for a continuous or ordinal target, AUC and AUPR for a binary one,
        log-loss and micro/macro precision and recall for a multi-class one).

        Parameters
        ----------
        X
            Rows with the evidence and, unless ``y`` gives them, the target's values
            (level names for a run on a user's files).
        y
            The target's values, one per row; a named :class:`pandas.Series` names the
            target too.
        target
            The variable to predict (default: ``y``'s name).

        Raises
        ------
        ConfigError
            If no target is named, or no global model was released.
        UnknownVariableError
            If the model does not have the target, or the rows lack its values.
        """
        chosen = _scored_target(y, target)
        model = self.released()
        check_targets([chosen], model.names)
        rows = self.scored_rows(X, y, chosen)
        if chosen not in rows.columns:
            raise UnknownVariableError(
                f"the rows lack the values of {chosen!r} to score against; add its column "
                "or give them as y"
            )
        return prediction_metrics(model, rows, chosen)

    def score(self, X: pd.DataFrame, y: Any = None, *, target: str | None = None) -> float:
        """The paper's headline metric of :meth:`evaluate`, higher is better: minus the
        MAE for a continuous or ordinal target (scikit-learn's
        ``neg_mean_absolute_error``), the AUC for a binary one, the macro-averaged
        recall for a multi-class one."""
        metrics = self.evaluate(X, y, target=target)
        if "mae" in metrics:
            return -metrics["mae"]
        return metrics["auc"] if "auc" in metrics else metrics["recall_macro"]

    def released(self) -> NGM:
        """The released global NGM (``model_``).

        Raises
        ------
        ConfigError
            If none was released (too few clients took part).
        """
        if self.model_ is None:
            raise ConfigError(
                "FedNGM released no global model (too few clients took part): there is "
                "nothing to predict, sample or query with"
            )
        return self.model_

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """Every NGM's weights, graph and residuals as arrays (the global model's under
        ``global.``, client ``c``'s under ``client.c.``); their schemas, the shared
        encoding, the merged graph and the sites' held-out scores as JSON."""
        models = {f"client.{name}": m for name, m in self.client_models_.items()}
        if self.model_ is not None:
            models["global"] = self.model_
        arrays = {f"{key}.{k}": v for key, m in models.items() for k, v in m.to_arrays().items()}
        return arrays, {
            "schema": None if self.schema_ is None else self.schema_.to_json(),
            "graph": None if self.model_ is None else to_graph_json(self.graph_),
            "models": {
                key: {"schema": m.schema.to_json(), "n_rows": m.n_rows} for key, m in models.items()
            },
            "site_scores": self.site_scores_,
            "correlation": None if self.correlation_ is None else self.correlation_.to_json(),
        }

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""

        def model(key: str) -> NGM:
            prefix = f"{key}."
            own = {k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)}
            saved = meta["models"][key]
            return NGM.from_arrays(Schema.from_json(saved["schema"]), own, saved["n_rows"])

        self.schema_ = None if meta["schema"] is None else Schema.from_json(meta["schema"])
        self.site_scores_ = dict(meta.get("site_scores", {}))
        saved = meta.get("correlation")  # absent from a model saved before issue 49
        self.correlation_ = None if saved is None else PooledCorrelation.from_json(saved)
        self.client_models_ = {
            key.removeprefix("client."): model(key)
            for key in meta["models"]
            if key.startswith("client.")
        }
        self.model_ = model("global") if "global" in meta["models"] else None
        if meta["graph"] is not None:
            self.graph_ = from_graph_json(meta["graph"]).graph


def _scored_target(y: Any, target: str | None) -> str:
    """The variable :meth:`FedNGM.evaluate` scores: ``target``, else ``y``'s name.

    Raises
    ------
    ConfigError
        If neither names one.
    """
    if target is not None:
        return target
    name = getattr(y, "name", None)
    if isinstance(name, str):
        return name
    raise ConfigError(
        "FedNGM predicts any of its variables: name the one to score, score(X, "
        "target='VAR'), or give its values as a named pandas Series y"
    )


def refuse_unsound_knowledge(knowledge: Knowledge) -> None:
    """Refuse ``forbidden_adjacent`` for a graph FedNGM learns (its graph round).

    The merged graph is a concentration (undirected) graph: an edge ``x - y`` says
    ``x`` and ``y`` are dependent given *every* other variable, and the NGM's
    dependency structure needs it wherever they are (two causes of a common effect,
    say). ``forbidden_adjacent [x, y]`` says only that *some* set separates them, so
    deleting the edge could cut a real dependence: it cannot be used soundly here. The
    required pairs are used (:func:`~fedstruct.methods.fedngm.structure.merge_graphs`);
    tiers and ``forbidden`` bear on ancestry, which an undirected graph does not state.

    Raises
    ------
    KnowledgeError
        Naming the first pair and the ways out.
    """
    if knowledge.forbidden_adjacent:
        x, y = knowledge.forbidden_adjacent[0]
        raise KnowledgeError(
            f"knowledge: forbidden_adjacent [{x}, {y}] cannot shape the graph FedNGM learns "
            "(an undirected graph links two variables dependent given all the others, "
            "which a separating set does not exclude); drop forbidden_adjacent, or give "
            "the graph (--graph) for it to be checked"
        )
