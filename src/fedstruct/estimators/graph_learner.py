"""The capability of an estimator that learns a graph rather than a model that
predicts: scored against a true graph, and optionally bootstrapped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.data.graph_files import given_graph
from fedstruct.errors import ConfigError
from fedstruct.estimators.base import FederatedEstimator
from fedstruct.estimators.bootstrap import BootstrapOptions, replicate_frequencies
from fedstruct.fl.backend import get_backend
from fedstruct.fl.bootstrap import check_clients_here, deployment_refusal
from fedstruct.fl.participation import Participation
from fedstruct.graphs.frequencies import CONSENSUS, PAG_PATTERNS, EdgeFrequencies
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import graph_metrics

__all__ = ["GraphLearner"]


class GraphLearner(FederatedEstimator):
    """Base of the estimators that learn a graph (``graph_``), not a model that predicts.

    :meth:`evaluate` compares the learned graph with a true one
    (:func:`~fedstruct.graphs.metrics.graph_metrics`: SHD, edge and orientation
    precision/recall/F1) and :meth:`score` is the F1 of its edges, its adjacencies
    (``f1_edge``): which pairs are adjacent, whatever the marks, so the same score
    suits a DAG, a CPDAG and a PAG.

    With ``bootstrap=B``, :meth:`fit` then runs the federation ``B`` more times, each
    site resampling its own rows (:mod:`fedstruct.estimators.bootstrap`, in ``jobs``
    processes), and keeps how often each pair came back adjacent and with which marks
    (``edge_frequencies_``, :class:`~fedstruct.graphs.frequencies.EdgeFrequencies`)
    and their consensus graph (``consensus_graph_``); ``graph_`` stays the graph of
    the sites' own rows. Both are saved with the run (``consensus.*``, and frequency
    columns in ``edges.csv`` and ``graph.json``; docs/confidence.md).

    Parameters
    ----------
    bootstrap
        ``B``: after the fit, run the federation ``B`` more times on site-resampled
        rows and keep each edge's frequencies and their consensus (``None``: no
        bootstrap).
    subsample
        Each resampled run's share of a site's rows, drawn without replacement
        (``None``: a bootstrap sample, as many rows drawn with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests, so that its
        repeated rows are not taken for new evidence (docs/confidence.md, "Which
        resampling"); ``False``: the plain bootstrap. Ignored with ``subsample``.
    jobs
        Processes for the bootstrap's replicates (``None``: the cores available).
    """

    score_metric: ClassVar[str] = "f1_edge"
    #: The mark patterns the method's graphs hold (edge-frequency columns).
    mark_patterns: ClassVar[tuple[str, ...]] = PAG_PATTERNS
    #: Whether the consensus must be acyclic (a method that learns DAGs).
    acyclic_consensus: ClassVar[bool] = False
    #: The method's own parameter of processes inside one fit, set to 1 in a replicate
    #: when replicates run in parallel (``None``: it has none).
    inner_workers: ClassVar[str | None] = None
    #: What a bootstrap learned (``None``: no bootstrap ran).
    edge_frequencies_: EdgeFrequencies | None = None
    consensus_graph_: Graph | None = None

    def __init__(
        self,
        *,
        seed: int = 0,
        participation: Participation | None = None,
        bootstrap: int | None = None,
        subsample: float | None = None,
        correct_duplicates: bool = True,
        jobs: int | None = None,
        secure_aggregation: Any = False,
    ) -> None:
        super().__init__(
            seed=seed, participation=participation, secure_aggregation=secure_aggregation
        )
        self.bootstrap = bootstrap
        self.subsample = subsample
        self.correct_duplicates = correct_duplicates
        self.jobs = jobs

    @property
    def bootstrap_options(self) -> BootstrapOptions:
        """The four bootstrap parameters as one checked
        :class:`~fedstruct.fl.bootstrap.BootstrapOptions`.

        Raises
        ------
        ConfigError
            Naming the parameter (after the method), what it must be and what it got.
        """
        return BootstrapOptions.of(self, owner=self.method)

    def check_params(self) -> None:
        """Check the bootstrap's parameters (:attr:`bootstrap_options`).

        Raises
        ------
        ConfigError
            Naming the parameter, what it must be and what it got.
        """
        _ = self.bootstrap_options

    def fit(self, clients: Sequence[ClientData] | Sequence[str], **run_options: Any) -> Self:
        """Run the federation (:meth:`FederatedEstimator.fit`); with ``bootstrap`` then
        its ``B`` site-resampled replicates (not after a run stopped early).

        Raises
        ------
        ConfigError
            With ``bootstrap`` on a backend whose nodes hold the rows (a deployment).
        """
        bootstrap = self.bootstrap_options
        if (
            bootstrap.replicates
            and not get_backend(run_options.get("backend", "local")).needs_client_data
        ):
            raise deployment_refusal(self.method)
        started = time.monotonic()
        super().fit(clients, **run_options)
        seconds = time.monotonic() - started
        self.edge_frequencies_ = self.consensus_graph_ = None
        finished = run_options.get("stop_after") is None
        if bootstrap.replicates and finished and getattr(self, "graph_", None) is not None:
            here = check_clients_here(clients, self.method)
            self._keep_frequencies(replicate_frequencies(self, here, run_options, seconds))
        return self

    def _keep_frequencies(self, frequencies: EdgeFrequencies) -> None:
        self.edge_frequencies_ = frequencies
        self.consensus_graph_ = frequencies.consensus(CONSENSUS, acyclic=self.acyclic_consensus)

    def with_consensus(self, graphs: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
        """``graphs`` (a method's :meth:`learned_graphs`) and, after a bootstrap, the
        consensus graph (``consensus``, each edge with its adjacency frequency)."""
        if self.consensus_graph_ is None or self.edge_frequencies_ is None:
            return graphs
        frequency = self.edge_frequencies_.adjacency_matrix()
        return {**graphs, "consensus": (self.consensus_graph_, frequency)}

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """After a bootstrap, ``edge-frequencies``: every pair adjacent in some
        replicate, whether the learned graph has it (``in_graph``: a frequent pair the
        run on the sites' own rows lacks is read apart, docs/confidence.md), and its
        adjacency and mark-pattern frequencies
        (:meth:`~fedstruct.graphs.frequencies.EdgeFrequencies.table`); else none."""
        if self.edge_frequencies_ is None:
            return {}
        table = self.edge_frequencies_.table()
        graph = self.graph_
        in_graph = [
            a in graph and b in graph and graph.is_adjacent(a, b)
            for a, b in zip(table["from"], table["to"], strict=True)
        ]
        table.insert(2, "in_graph", in_graph)
        return {"edge-frequencies": table.set_index(["from", "to"])}

    def graph_frequencies(self) -> dict[str, EdgeFrequencies]:
        """Saved graph stem -> the edge frequencies its edges' rows carry (the learned
        graph's and the consensus's after a bootstrap; none otherwise)."""
        if self.edge_frequencies_ is None:
            return {}
        return {"graph": self.edge_frequencies_, "consensus": self.edge_frequencies_}

    def site_graphs(self) -> dict[str, Graph]:
        """Each site's own graph as the server saw it (site name -> graph): what the
        learned graph's edges are compared with, edge by edge (their site agreement,
        :func:`~fedstruct.graphs.metrics.edge_site_votes`). None here; a method that
        keeps them says so, and none under secure aggregation, where no site's graph
        is seen."""
        return {}

    def bootstrap_state(self) -> dict[str, Any]:
        """For :meth:`learned_state`'s JSON: the bootstrap's counts (empty without one)."""
        if self.edge_frequencies_ is None:
            return {}
        return {"bootstrap": self.edge_frequencies_.to_json()}

    def restore_bootstrap(self, meta: Mapping[str, Any]) -> None:
        """Set ``edge_frequencies_`` and ``consensus_graph_`` from :meth:`bootstrap_state`."""
        self.edge_frequencies_ = self.consensus_graph_ = None
        if "bootstrap" in meta:
            self._keep_frequencies(EdgeFrequencies.from_json(meta["bootstrap"], "model.json"))

    def evaluate(self, X: Graph | str | Path, y: None = None) -> dict[str, float]:
        """The learned graph's metrics against the true graph ``X``.

        Parameters
        ----------
        X
            The true graph: a :class:`~fedstruct.graphs.Graph`, or a graph file or run
            folder (:func:`~fedstruct.data.graph_files.given_graph`). Both graphs are
            placed over the union of their variables (one a graph lacks is isolated in
            it), the truth's order first.
        y
            Not used: present for scikit-learn's ``score(X, y=None)``; must be ``None``.

        Raises
        ------
        ConfigError
            If ``y`` is given, ``X`` is not a graph, or no graph was learned (a run
            stopped before its graph was built).
        """
        return graph_metrics(*self._compared_graphs(X, y))

    def _compared_graphs(self, X: Any, y: Any) -> tuple[Graph, Graph]:
        """The true graph ``X`` and the learned graph, both over the union of their
        variables (the truth's order first): what :meth:`evaluate` compares."""
        truth = self._truth(X, y)
        learned = self._learned_graph()
        names = [*truth.names, *(v for v in learned.names if v not in truth)]
        return truth.expand(names), learned.expand(names)

    def _truth(self, X: Any, y: Any) -> Graph:
        if y is not None:
            raise ConfigError(
                f"{self.method} learns a graph: score/evaluate take the true graph only, "
                "not y; call score(truth)"
            )
        truth = given_graph(X) if isinstance(X, (Graph, str, Path)) else None
        if truth is None:
            raise ConfigError(
                f"{self.method} learns a graph: score/evaluate take the true graph (a Graph, "
                f"or a graph file), not {type(X).__name__}"
            )
        return truth

    def _learned_graph(self) -> Graph:
        graph = getattr(self, "graph_", None)
        if graph is None:
            raise ConfigError(
                f"{self.method} has learned no graph to evaluate (fit it first, without "
                "stop_after before the graph is built)"
            )
        return graph
