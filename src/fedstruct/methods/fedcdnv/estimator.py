"""FedCDnv's estimator, :class:`FedCDnv` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError
from fedstruct.fl.estimator import GraphLearner
from fedstruct.fl.participation import Participation
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
    seed
        The run's seed (participation draws; FedCDnv itself is deterministic).
    participation
        Who takes part in each round (default: everyone).
    bootstrap
        ``B``: after the fit, run the federation ``B`` more times on site-resampled
        rows and keep each edge's frequencies and their consensus
        (:class:`~fedstruct.fl.estimator.GraphLearner`; ``None``: no bootstrap).
    subsample
        Each resampled run's share of a site's rows, drawn without replacement
        (``None``: a bootstrap sample, as many rows drawn with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests, so that its
        repeated rows are not taken for new evidence (docs/confidence.md, "Which
        resampling"); ``False``: the plain bootstrap. Ignored with ``subsample``.
    jobs
        Processes for the bootstrap's replicates (``None``: the cores available).
    **params
        Fields of :class:`FedCDnvConfig` (``strategy``, ``learner``, ``alpha``, ...).

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
        reason = SECURE_REFUSALS.get(self.config.strategy)
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
        #: Variable -> kind for the clients' CI tests (``ci_test="auto"``; a user's
        #: files: the federation schema's kinds), else each column's dtype's kind.
        self.kinds = dict(kinds) if kinds is not None else None
        self._given(kinds=self.kinds)

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
            data, config=self.config, seed=self.seed, progress=progress, kinds=self.kinds
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
        if self.secure_aggregation is not None:
            return {}
        return dict(getattr(self, "local_graphs_", {}))

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
