"""FED-CD's estimator, :class:`FedCD` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ProtocolError
from fedstruct.fl import Participation
from fedstruct.fl.binning import QuantileBinning, QuantileBins
from fedstruct.fl.estimator import GraphLearner
from fedstruct.graphs.frequencies import DAG_PATTERNS
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.methods.fedcd.client import FedCDClient
from fedstruct.methods.fedcd.config import FedCDConfig
from fedstruct.methods.fedcd.learner import Beliefs
from fedstruct.methods.fedcd.server import FedCDServer, FedCDState

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
    bootstrap
        ``B``: after the fit, run the federation ``B`` more times on site-resampled
        rows and keep each edge's frequencies (``-->`` each way) and their consensus
        DAG (:class:`~fedstruct.fl.estimator.GraphLearner`; ``None``: no bootstrap).
    subsample
        Each resampled run's share of a site's rows, drawn without replacement
        (``None``: a bootstrap sample, as many rows drawn with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests, so that its
        repeated rows are not taken for new evidence (docs/confidence.md, "Which
        resampling"); ``False``: the plain bootstrap. Ignored with ``subsample``.
        FED-CD's replicates run no CI test (ENCO fits likelihoods): it changes nothing
        there.
    jobs
        Processes for the bootstrap's replicates (``None``: the cores available).
    **params
        Fields of :class:`FedCDConfig` (``rounds``, ``aggregation``, ``discount``, ENCO's
        ``model_steps``, ...).

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
    (:class:`~fedstruct.fl.estimator.GraphLearner`).
    """

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
        **params: Any,
    ) -> None:
        super().__init__(
            seed=seed,
            participation=participation,
            bootstrap=bootstrap,
            subsample=subsample,
            correct_duplicates=correct_duplicates,
            jobs=jobs,
            **params,
        )
        binning = QuantileBinning(tuple(continuous), bins, bin_grid)  # checks bins, bin_grid
        self.binning = binning if binning.columns else None
        self._given(continuous=tuple(continuous), bins=bins, bin_grid=bin_grid)

    def fit(self, clients: Sequence[ClientData] | Sequence[str], **run_options: Any) -> FedCD:
        """Run the federation (:meth:`~fedstruct.fl.estimator.FederatedEstimator.fit`);
        with ``progress=True`` each in-process client also shows its ENCO steps and the
        time left of its round (:class:`~fedstruct.methods.fedcd.progress.EncoPace`):
        a round's first epoch can run for many minutes."""
        shown = bool(run_options.get("progress", False))
        self._progress = len(clients) * self.config.rounds if shown else 0
        return super().fit(clients, **run_options)

    def make_client(self, data: ClientData) -> FedCDClient:
        """The client holding ``data`` (with the bins' steps for continuous columns;
        showing its ENCO steps when the run shows progress)."""
        progress = getattr(self, "_progress", 0)
        return FedCDClient(
            data, config=self.config, seed=self.seed, binning=self.binning, progress=progress
        )

    def make_server(self) -> FedCDServer:
        """A fresh server (with the bins' exchange for continuous columns)."""
        return FedCDServer(self.config, self.binning)

    def identity(self) -> dict[str, Any]:
        """The binning of continuous columns, besides the config (none without)."""
        if self.binning is None:
            return {}
        b = self.binning
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
        if self.secure_aggregation is not None or not rounds:
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
