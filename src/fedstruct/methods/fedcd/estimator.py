"""FED-CD's estimator, :class:`FedCD` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ProtocolError
from fedstruct.estimators.graph_learner import GraphLearner
from fedstruct.fl.binning import QuantileBinning, QuantileBins
from fedstruct.fl.device import AUTO
from fedstruct.graphs.frequencies import DAG_PATTERNS
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.methods.fedcd.client import FedCDClient
from fedstruct.methods.fedcd.config import FedCDConfig
from fedstruct.methods.fedcd.learner import Beliefs
from fedstruct.methods.fedcd.server import FedCDServer, FedCDState

if TYPE_CHECKING:
    from fedstruct.discovery.knowledge import Knowledge
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FedCD"]


class FedCD(
    GraphLearner,
    method="fedcd",
    config=FedCDConfig,
    client=FedCDClient,
    server=FedCDServer,
):
    """FED-CD, scikit-learn style.

    Parameters
    ----------
    seed
        The run's seed (every client's ENCO draws and the participation draws).
    participation
        Who takes part in each round (default: everyone).
    continuous
        The continuous columns of the clients' rows: ENCO models categorical
        variables, so each is cut into ``bins`` federated quantile bins, computed
        in a first exchange from the clients' aggregates (never rows:
        :mod:`fedstruct.fl.binning`) and used by each client to code its own rows.
        Every other column holds category codes ``0..k-1``.
    bins
        Bins per continuous column.
    bin_grid
        Cells of the shared grid over which each client counts a continuous column's
        values (a cut is within one cell, ``8 sd / bin_grid``, of the pooled quantile).
    bootstrap, subsample, correct_duplicates, jobs
        The site-resampled replicates of :class:`~fedstruct.estimators.GraphLearner`
        (``bootstrap=B``: each edge's frequencies, ``-->`` each way, over ``B``
        resampled federations, and their consensus DAG). FED-CD's replicates run no
        CI test (ENCO fits likelihoods): ``correct_duplicates`` changes nothing there.
    secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s.
    rounds, aggregation, discount, model_steps, ...
        Every other parameter is a field of :class:`FedCDConfig` (ENCO's among them),
        documented there with its default (``fit`` builds ``config_`` from them and
        checks them together).

    Attributes
    ----------
    graph_ : Graph
        The final aggregated DAG.
    beliefs_ : Beliefs
        The final aggregated ``(γ, θ)``.
    round_graphs_ : list of Graph or None
        The aggregated DAG after each round (``None`` before any client answered).
    client_graphs_ : list of dict
        Per round, each answering client's own (pruned) graph.
    history_ : list of dict
        Per-round counts, edges, average edge entropy and training loss.
    bins_ : QuantileBins or None
        The continuous columns' cut points (``None`` without continuous columns).
    edge_frequencies_ : EdgeFrequencies or None
        After a bootstrap: each pair's adjacency and direction frequencies.
    consensus_graph_ : Graph or None
        After a bootstrap: the consensus DAG of the replicates' DAGs.

    ``score(truth)`` is the F1 of the DAG's adjacencies against the true graph;
    ``evaluate(truth)`` adds SHD and orientation scores
    (:class:`~fedstruct.estimators.GraphLearner`).
    """

    learns = "a DAG whose conditionals are neural networks (ENCO), not tables"

    #: The file stem of the edge-probability matrix (:meth:`learned_tables`).
    PROBABILITIES = "edge-probabilities"
    mark_patterns = DAG_PATTERNS
    #: Voting and proximity are ratios of sums (FedCDServer._round_securely).
    secure_aggregation_refusal = ""
    acyclic_consensus = True

    def __init__(
        self,
        *,
        seed: int = 0,
        participation: Participation | None = None,
        continuous: Sequence[str] = (),
        bins: int = 4,
        bin_grid: int = 256,
        bootstrap: int | None = None,
        subsample: float | None = None,
        correct_duplicates: bool = True,
        jobs: int | None = None,
        hidden: int = 64,
        model_steps: int = 1000,
        graph_steps: int = 100,
        batch_size: int = 128,
        graphs_per_step: int = 100,
        lambda_sparse: float = 0.004,
        lr_model: float = 5e-3,
        lr_gamma: float = 2e-2,
        lr_theta: float = 1e-1,
        beta2_gamma: float = 0.9,
        weight_decay: float = 1e-4,
        graph_chunk: int = 25,
        threads: int | None = None,
        device: str = AUTO,
        cuda_graphs: bool = True,
        knowledge: str | Knowledge | None = None,
        rounds: int = 5,
        epochs_per_round: int = 2,
        aggregation: str = "proximity",
        mass: float = 16.0,
        discount: float = 0.2,
        temperature: float = 0.3,
        min_mass: float = 0.1,
        distance: str = "outgoing",
        weighting: str = "softmax",
        belief_space: str = "probability",
        acyclic: bool = True,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed,
            participation=participation,
            bootstrap=bootstrap,
            subsample=subsample,
            correct_duplicates=correct_duplicates,
            jobs=jobs,
            secure_aggregation=secure_aggregation,
        )
        self.continuous = continuous
        self.bins = bins
        self.bin_grid = bin_grid
        self.hidden = hidden
        self.model_steps = model_steps
        self.graph_steps = graph_steps
        self.batch_size = batch_size
        self.graphs_per_step = graphs_per_step
        self.lambda_sparse = lambda_sparse
        self.lr_model = lr_model
        self.lr_gamma = lr_gamma
        self.lr_theta = lr_theta
        self.beta2_gamma = beta2_gamma
        self.weight_decay = weight_decay
        self.graph_chunk = graph_chunk
        self.threads = threads
        self.device = device
        self.cuda_graphs = cuda_graphs
        self.knowledge = knowledge
        self.rounds = rounds
        self.epochs_per_round = epochs_per_round
        self.aggregation = aggregation
        self.mass = mass
        self.discount = discount
        self.temperature = temperature
        self.min_mass = min_mass
        self.distance = distance
        self.weighting = weighting
        self.belief_space = belief_space
        self.acyclic = acyclic

    def check_params(self) -> None:
        """Check the bootstrap's parameters and the bins, and keep ``binning_``: the
        steps of the bins' exchange for the continuous columns (``None`` without).

        Raises
        ------
        ConfigError
            For a bootstrap parameter that is not valid.
        DataError
            If ``bins`` < 2 or ``bin_grid`` < 1.
        """
        super().check_params()
        binning = QuantileBinning(tuple(self.continuous), self.bins, self.bin_grid)
        self.binning_ = binning if binning.columns else None

    def fit(self, clients: Sequence[ClientData] | Sequence[str], **run_options: Any) -> FedCD:
        """Run the federation (:meth:`~fedstruct.estimators.FederatedEstimator.fit`);
        with ``progress=True`` each in-process client also shows its ENCO steps and the
        time left of its round (:class:`~fedstruct.methods.fedcd.progress.EncoPace`):
        a round's first epoch can run for many minutes."""
        shown = bool(run_options.get("progress", False))
        self._progress = len(clients) * self.rounds if shown else 0
        return super().fit(clients, **run_options)

    def make_client(self, data: ClientData) -> FedCDClient:
        """The client holding ``data`` (with the bins' steps for continuous columns;
        showing its ENCO steps when the run shows progress)."""
        progress = getattr(self, "_progress", 0)
        return FedCDClient(
            data, config=self.config_, seed=self.seed, binning=self.binning_, progress=progress
        )

    def make_server(self) -> FedCDServer:
        """A fresh server (with the bins' exchange for continuous columns)."""
        return FedCDServer(self.config_, self.binning_)

    def identity(self) -> dict[str, Any]:
        """The binning of continuous columns, besides the config (none without)."""
        if self.binning_ is None:
            return {}
        b = self.binning_
        return {"continuous": list(b.columns), "bins": b.bins, "bin_grid": b.cells}

    def learn(self, state: FedCDState) -> None:
        """The global graph, beliefs, and per-round and per-client graphs.

        Raises
        ------
        ProtocolError
            If no client answered in any round. (During the run: ``DataError`` for a
            client with only observational or only interventional rows, a variable
            with fewer than 2 categories or non-categorical data;
            ``UnknownVariableError`` for an intervention outside the federation's
            variables; ``ProtocolError`` if clients hold different variables.)
        """
        if state.graph is None or state.beliefs is None:
            raise ProtocolError("no client answered in any round: FED-CD learned nothing")
        self.graph_ = state.graph
        self.beliefs_ = state.beliefs
        self.round_graphs_ = state.round_graphs
        self.client_graphs_ = state.client_graphs
        self.bins_ = state.bins

    def site_graphs(self) -> dict[str, Graph]:
        """Each site's graph of the last round (``client_graphs_``); none under secure
        aggregation."""
        rounds = getattr(self, "client_graphs_", None)
        if not rounds or self.secure_aggregation_ is not None:
            return {}
        return dict(rounds[-1])

    def learned_graphs(self) -> dict[str, tuple[Any, Any]]:
        """The DAG, each edge with its belief ``sigma(gamma) * sigma(theta)`` (ENCO §3.1),
        and after a bootstrap the consensus DAG (``consensus``)."""
        return self.with_consensus({"graph": (self.graph_, self.beliefs_.edge_probability)})

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """The belief ``sigma(gamma) * sigma(theta)`` of every ordered pair
        (``edge-probabilities``: row from, column to), and after a bootstrap the
        edges' frequencies (``edge-frequencies``)."""
        names = list(self.graph_.names)
        table = pd.DataFrame(self.beliefs_.edge_probability, index=names, columns=names)
        return {**super().learned_tables(), self.PROBABILITIES: table.rename_axis("from\\to")}

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The beliefs ``γ``, ``θ`` as arrays; the DAG, the per-round graphs and the
        continuous columns' cut points (``bins``, when there are any) as JSON."""
        meta: dict[str, Any] = {
            "graph": to_graph_json(self.graph_),
            "round_graphs": [None if g is None else to_graph_json(g) for g in self.round_graphs_],
            "client_graphs": [
                {name: to_graph_json(g) for name, g in graphs.items()}
                for graphs in self.client_graphs_
            ],
            **self.bootstrap_state(),
        }
        if self.bins_ is not None:
            meta["bins"] = self.bins_.to_json()
        return {"gamma": self.beliefs_.gamma, "theta": self.beliefs_.theta}, meta

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        self.graph_ = from_graph_json(meta["graph"]).graph
        self.beliefs_ = Beliefs(
            np.asarray(arrays["gamma"], dtype=np.float64),
            np.asarray(arrays["theta"], dtype=np.float64),
        )
        self.round_graphs_ = [
            None if g is None else from_graph_json(g).graph for g in meta["round_graphs"]
        ]
        self.client_graphs_ = [
            {name: from_graph_json(g).graph for name, g in graphs.items()}
            for graphs in meta["client_graphs"]
        ]
        self.bins_ = QuantileBins.from_json(meta["bins"]) if meta.get("bins") else None
        self.restore_bootstrap(meta)
