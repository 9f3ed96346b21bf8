"""FedCDnv's estimator, :class:`FedCDnv` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.discovery.kinds import CG_MIN_ROWS
from fedstruct.discovery.pds import AUTO
from fedstruct.errors import ConfigError
from fedstruct.estimators.graph_learner import GraphLearner
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.graphs.metrics import graph_metrics, relation_fdr
from fedstruct.methods.fedcdnv.client import FedCDnvClient
from fedstruct.methods.fedcdnv.config import SECURE_REFUSALS, FedCDnvConfig
from fedstruct.methods.fedcdnv.server import (
    FedCDnvServer,
    FedCDnvState,
    check_overlap,
    definite_graph,
)
from fedstruct.methods.fedcdnv.theory import definite_pairs

if TYPE_CHECKING:
    from fedstruct.discovery.knowledge import Knowledge
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FedCDnv", "graph_scores"]


class FedCDnv(
    GraphLearner,
    method="fedcdnv",
    config=FedCDnvConfig,
    client=FedCDnvClient,
    server=FedCDnvServer,
):
    """FedCDnv (or a baseline), scikit-learn style.

    Parameters
    ----------
    kinds
        Variable -> kind for the clients' CI tests (``ci_test="auto"``; a user's
        files: the federation schema's kinds), else each column's dtype's kind.
    seed
        The run's seed (participation draws; FedCDnv itself is deterministic).
    participation, secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s (FedCDnv-vote alone
        takes secure aggregation).
    bootstrap, subsample, correct_duplicates, jobs
        The site-resampled replicates of
        :class:`~fedstruct.estimators.GraphLearner` (``bootstrap=B``: each edge's
        frequencies over ``B`` resampled federations, and their consensus).
    strategy, learner, ci_test, alpha, theta1, theta2, ...
        Every other parameter is a field of :class:`FedCDnvConfig`, documented there
        with its default (``fit`` builds ``config_`` from them and checks them
        together).

    Attributes
    ----------
    graph_ : Graph
        FedG, the global PAG-like graph over the integrated variables.
    definite_graph_ : Graph
        FeddG: the edges of FedG whose relationship is definite causal.
    status_ : pandas.DataFrame
        The status matrix FeddG is read from (2, 1, -1, -2; see
        :mod:`~fedstruct.methods.fedcdnv.theory`): G0's (``definite_from="g0"``,
        default) or FedG's (``"fedg"``).
    definite_pairs_ : tuple
        Lists of FedG's definite causal and definite non-causal pairs
        (:func:`~fedstruct.methods.fedcdnv.theory.definite_relations`).
    initial_graph_ : Graph
        G0, the integration of the clients' ``Pag_0``.
    local_graphs_ : dict
        Client name -> its ``Pag_0``.
    decisions_ : dict
        Pair -> how TPSS decided a disagreement (``"level 1"`` or ``val``).
    edge_frequencies_ : EdgeFrequencies or None
        After a bootstrap: each pair's adjacency and mark-pattern frequencies.
    consensus_graph_ : Graph or None
        After a bootstrap: the consensus of the replicates' graphs.
    history_ : list of dict
        Per-round counts (clients, edges, CI tests).

    ``score(truth)`` is the F1 of FedG's adjacencies against the true graph (the true
    PAG over the observed variables where some are latent); ``evaluate(truth)`` gives
    every metric of :func:`graph_scores` (Table 2).
    """

    learns = "a PAG (edge marks, no probability tables: FCI's tests give none)"

    #: FedCDnv-vote takes secure aggregation; TPSS and FCI-base refuse it
    #: (:meth:`check_secure_aggregation`).
    secure_aggregation_refusal = ""

    def check_secure_aggregation(self) -> None:
        """Refuse secure aggregation except for FedCDnv-vote.

        Raises
        ------
        ConfigError
            For ``strategy="tpss"`` (FedCDnv) and ``"largest"`` (FCI-base).
        """
        reason = SECURE_REFUSALS.get(self.config_.strategy)
        if reason:
            raise ConfigError(f"{self.method} refuses secure aggregation: {reason}")

    inner_workers = "workers"

    def __init__(
        self,
        *,
        kinds: Mapping[str, str] | None = None,
        seed: int = 0,
        participation: Participation | None = None,
        bootstrap: int | None = None,
        subsample: float | None = None,
        correct_duplicates: bool = True,
        jobs: int | None = None,
        strategy: str = "tpss",
        learner: str = "fci",
        ci_test: str = "auto",
        cg_min_rows: int = CG_MIN_ROWS,
        alpha: float = 0.05,
        theta1: float = 0.049,
        theta2: float = 0.45,
        depth: int | None = None,
        pds_depth: int | str | None = AUTO,
        workers: int | None = None,
        device: str | None = None,
        small_sample: str = "toolbox",
        dof: str = "adjusted",
        update_depth: int | None = 3,
        stability_depth: int | None = 2,
        weight_count: str = "non_stable",
        definite_from: str = "g0",
        constant_columns: str = "error",
        knowledge: str | Knowledge | None = None,
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
        self.kinds = kinds
        self.strategy = strategy
        self.learner = learner
        self.ci_test = ci_test
        self.cg_min_rows = cg_min_rows
        self.alpha = alpha
        self.theta1 = theta1
        self.theta2 = theta2
        self.depth = depth
        self.pds_depth = pds_depth
        self.workers = workers
        self.device = device
        self.small_sample = small_sample
        self.dof = dof
        self.update_depth = update_depth
        self.stability_depth = stability_depth
        self.weight_count = weight_count
        self.definite_from = definite_from
        self.constant_columns = constant_columns
        self.knowledge = knowledge

    def fit(self, clients: Sequence[ClientData] | Sequence[str], **run_options: Any) -> FedCDnv:
        """Run the federation (:meth:`FederatedEstimator.fit`); with ``progress=True``
        each in-process client shows its adjacency search's progress too (and, for a
        wide table, what it will cost before it starts)."""
        self._progress = bool(run_options.get("progress", False))
        return super().fit(clients, **run_options)

    def make_client(self, data: ClientData) -> FedCDnvClient:
        """The client holding ``data`` (showing its search's progress when the run
        shows progress)."""
        progress = getattr(self, "_progress", False)
        return FedCDnvClient(
            data, config=self.config_, seed=self.seed, progress=progress, kinds=self.kinds
        )

    def check_clients(self, clients: Sequence[ClientData] | Sequence[str]) -> None:
        """Every client must share a variable with another (Assumption 2.3).

        Raises
        ------
        DataError
            If a client shares no variable with any other client (later, a client
            with a constant column or data its CI test cannot use).
        """
        if all(isinstance(c, ClientData) for c in clients):
            check_overlap({c.name: c.variables for c in clients})  # type: ignore[union-attr]

    def learn(self, state: FedCDnvState) -> None:
        """The integrated PAG, its definite relations, the local PAGs and decisions
        (after round 1 only, as with ``stop_after=1``: ``graph_`` is ``None``, and
        ``initial_graph_`` and ``local_graphs_`` are round 1's)."""
        self.initial_graph_ = state.g0
        self.site_tests_ = {site: dict(entry) for site, entry in state.site_tests.items()}
        self.local_graphs_ = {r.name: r.pag for r in state.reports.values()}
        if state.aggregation is None or state.stat is None:
            self.graph_ = None  # type: ignore[assignment]
            return
        self.graph_ = state.aggregation.graph
        self.definite_graph_ = definite_graph(self.graph_, state.stat)
        self.status_ = pd.DataFrame(state.stat, index=state.names, columns=state.names)
        self.definite_pairs_ = definite_pairs(state.stat, state.names, self.graph_)
        self.decisions_ = dict(state.aggregation.decisions)

    def site_graphs(self) -> dict[str, Graph]:
        """Each site's own PAG (``local_graphs_``, round 1); none under secure aggregation."""
        graphs = getattr(self, "local_graphs_", None)
        if not graphs or self.secure_aggregation_ is not None:
            return {}
        return dict(graphs)

    def learned_graphs(self) -> dict[str, tuple[Any, Any]]:
        """FedG (``graph``) and FeddG, its definite causal edges (``definite``), and
        after a bootstrap the consensus graph (``consensus``)."""
        graphs = {"graph": (self.graph_, None), "definite": (self.definite_graph_, None)}
        return self.with_consensus(graphs)

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The status matrix FeddG is read from, as an array; FedG, G0, the local PAGs and TPSS's
        decisions as JSON (FeddG and the definite pairs follow from FedG and status)."""
        decisions = [[a, b, value] for (a, b), value in self.decisions_.items()]
        return {"status": self.status_.to_numpy(dtype=np.int8)}, {
            "graph": to_graph_json(self.graph_),
            "initial_graph": to_graph_json(self.initial_graph_),
            "local_graphs": {name: to_graph_json(g) for name, g in self.local_graphs_.items()},
            "decisions": decisions,
            **self.bootstrap_state(),
        }

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        self.graph_ = from_graph_json(meta["graph"]).graph
        stat = np.asarray(arrays["status"], dtype=np.int8)
        names = list(self.graph_.names)
        self.definite_graph_ = definite_graph(self.graph_, stat)
        self.status_ = pd.DataFrame(stat, index=names, columns=names)
        self.definite_pairs_ = definite_pairs(stat, names, self.graph_)
        self.initial_graph_ = from_graph_json(meta["initial_graph"]).graph
        self.local_graphs_ = {n: from_graph_json(g).graph for n, g in meta["local_graphs"].items()}
        self.decisions_ = {(a, b): value for a, b, value in meta["decisions"]}
        self.restore_bootstrap(meta)

    def evaluate(self, X: Graph | str | Path, y: None = None) -> dict[str, float]:
        """FedG against the true graph ``X`` (:func:`graph_scores`, with FeddG's
        definite pairs; both graphs over the union of their variables).

        Raises
        ------
        ConfigError
            If ``y`` is given, ``X`` is not a graph, or no FedG was built.
        """
        truth, fed = self._compared_graphs(X, y)
        causal, noncausal = self.definite_pairs_
        return graph_scores(truth, fed, [*causal, *noncausal])

    @property
    def names_(self) -> tuple[str, ...]:
        """The integrated variables ``O``, in FedG's order."""
        return self.graph_.names

    def status_counts(self) -> dict[int, int]:
        """How many pairs have each status value."""
        upper = self.status_.to_numpy()[np.triu_indices(len(self.names_), 1)]
        values, counts = np.unique(upper, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def graph_scores(
    truth: Graph, fed: Graph, definite: Sequence[tuple[str, str]] = ()
) -> dict[str, float]:
    """Edge and orientation precision/recall/F1 (both conventions), SHD and the FDRs of
    the returned causal / non-causal relationships, and of the definite ones
    (``definite``; Table 2), of ``fed`` against ``truth`` (same variables)."""
    metrics = graph_metrics(truth, fed)
    overall = relation_fdr(truth, fed)
    metrics["fdr_c"] = overall.fdr_causal
    metrics["fdr_nc"] = overall.fdr_noncausal
    if definite:
        sure = relation_fdr(truth, fed, definite)
        metrics["fdr_dc"] = sure.fdr_causal
        metrics["fdr_dnc"] = sure.fdr_noncausal
    return metrics
