"""``fedstruct run fedcd``: FED-CD on ENCO's synthetic graphs and bnlearn networks (§6).

Data sources (``--network``):

- ``er`` (default): an Erdős–Rényi DAG with ``nodes`` variables and ``edges_per_node``
  expected edges per node (FED-CD's ER-n, §6.1), or a structured family ``chain``,
  ``bidiag``, ``collider``, ``jungle``, ``full`` (§9.6); conditionals from ENCO's
  generator (``categories`` categories, random-MLP conditionals);
- a bundled network (``asia``, ``sachs``, ``alarm``, ...), sampled from its tables.

The global data set has ``n_observational`` observational rows and
``n_per_intervention`` rows per variable under a perfect uniform intervention; it is
split ``horizontal`` (every client gets a share of every part, §6.2) or ``vertical``
(disjoint intervened-variable sets per client, ``targets_per_client`` such as
``"16,4"``, §6.4). ``alone = "first"`` (default) also scores ENCO alone on the first
client's data with the same epoch budget (Table 1's single-client setting; metric
``single_client_shd``), ``"all"`` on every client's (``alone_shd_<client>``, Figure 3's
isolated clients); with ``centralized`` ENCO runs on the pooled data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedstruct.data import ClientData
from fedstruct.experiments.confidence import bootstrap_metrics
from fedstruct.experiments.fedcd.federation import InterventionTask, RegimeSites
from fedstruct.experiments.fedcd.settings import FedCDRun
from fedstruct.experiments.plots import plot_graph_comparison
from fedstruct.experiments.run_knowledge import save_knowledge
from fedstruct.experiments.runs import RunContext, RunOutcome
from fedstruct.experiments.settings import subset
from fedstruct.experiments.sites import aligned
from fedstruct.experiments.source import Source
from fedstruct.fl.binning import QuantileBins
from fedstruct.graphs import Graph, graph_metrics
from fedstruct.graphs.metrics import edge_type_counts, shd, site_agreement
from fedstruct.methods.fedcd import (
    ENCO,
    Beliefs,
    FedCD,
    FedCDConfig,
    InterventionalData,
    final_graph,
)

__all__ = ["bin_report", "method", "pooled", "run_fedcd"]


def pooled(clients: Sequence[ClientData]) -> ClientData:
    """All clients' rows in one data set (the centralised setting)."""
    rows = pd.concat([c.rows for c in clients], ignore_index=True)
    regimes = np.concatenate([c.regimes() for c in clients])
    return ClientData("pooled", rows, intervention=regimes)


def method(s: FedCDRun, source: Source) -> FedCD:
    """The FED-CD estimator the settings describe, for the source's clients (a user's
    continuous columns binned by the method's exchange, ``bins`` and ``bin_grid``)."""
    return FedCD(
        seed=s.seed,
        participation=s.participation(source.names),
        continuous=source.continuous if isinstance(source, RegimeSites) else (),
        bins=s.bins,
        bin_grid=s.bin_grid,
        bootstrap=s.bootstrap or None,
        subsample=s.subsample,
        correct_duplicates=s.correct_duplicates,
        jobs=s.jobs,
        secure_aggregation=s.secure_aggregation,
        **dataclasses.asdict(subset(s, FedCDConfig)),
    )


def bin_report(bins: QuantileBins | None) -> dict[str, float]:
    """Per binned column its number of bins (``bins_<column>``) and cut points
    (``bin_cut_<column>_<j>``); nothing without continuous columns."""
    out: dict[str, float] = {}
    for column, cuts in ({} if bins is None else bins.cuts).items():
        out[f"bins_{column}"] = float(len(cuts) + 1)
        out.update({f"bin_cut_{column}_{j}": float(c) for j, c in enumerate(cuts)})
    return out


def _alone(s: FedCDRun, data: ClientData, names: Sequence[str]) -> Graph:
    """ENCO on one data set for the federation's epoch budget."""
    local = InterventionalData.from_client(data)
    beliefs = ENCO(s.enco()).fit(
        local, Beliefs.uniform(len(names)), s.rounds * s.epochs_per_round, seed=s.seed
    )
    return final_graph(local.names, beliefs, s.acyclic)


def run_fedcd(
    s: FedCDRun, ctx: RunContext, model: FedCD, source: InterventionTask | RegimeSites
) -> RunOutcome:
    """Fit on the backend; SHD of the final and of every round's graph against the truth
    (on a user's files: :func:`_on_files`). A knowledge file is checked against the
    variables first and saved as knowledge.json."""
    variables = source.sites.schema.variables if isinstance(source, RegimeSites) else None
    if variables is None and s.knowledge is not None:
        variables = source.truth.names
    save_knowledge(s.knowledge, variables, ctx.out)
    ctx.fit(model, source)
    if isinstance(source, RegimeSites):
        return _on_files(ctx, model, source)
    truth = source.truth
    fed = model.graph_
    truth = truth.restrict(fed.names) if set(fed.names) <= set(truth.names) else truth
    metrics: dict[str, float] = {"shd": float(shd(truth, fed))}
    metrics.update({k: float(v) for k, v in graph_metrics(truth, fed).items() if k != "shd"})
    history = [dict(h) for h in model.history_]
    for record, graph, locals_ in zip(
        history, model.round_graphs_, model.client_graphs_, strict=True
    ):
        if graph is not None:
            record["shd"] = float(shd(truth, graph))
        for name, g in locals_.items():
            record[f"shd_{name}"] = float(shd(truth, g))
    metrics["edge_entropy"] = float(history[-1].get("edge_entropy", np.nan))
    metrics.update(_bootstrap_metrics(model, truth))
    if ctx.backend.needs_client_data:  # a deployment's server holds no client data
        data = list(source.clients())
        solo = data[:1] if s.alone == "first" else data if s.alone == "all" else []
        for client in solo:
            alone = float(shd(truth, _alone(s, client, fed.names)))
            metrics[f"alone_shd_{client.name}"] = alone
        if solo:
            metrics["single_client_shd"] = metrics[f"alone_shd_{data[0].name}"]
        if s.centralized:
            metrics["centralized_shd"] = float(shd(truth, _alone(s, pooled(data), fed.names)))
    figure = plot_graph_comparison(
        truth, fed, ctx.out / "fedcd_graph.png", title=f"FED-CD ({s.aggregation}) on {s.network}"
    )
    return RunOutcome(metrics, history, [figure])


def _on_files(ctx: RunContext, model: FedCD, source: RegimeSites) -> RunOutcome:
    """A run on a user's files: the DAG's edges, the certainty of the beliefs (edge
    entropy), how far the sites' last graphs agree with it, the continuous columns'
    bins (:func:`bin_report`), and, with ``--truth``, the scores against that graph
    (SHD per round too)."""
    fed = model.graph_
    history = [dict(h) for h in model.history_]
    metrics: dict[str, float] = {
        **edge_type_counts(fed),
        "edge_entropy": float(history[-1].get("edge_entropy", np.nan)),
        # with secure aggregation the sites' own graphs are never seen
        **(
            {"site_agreement": site_agreement(fed, model.client_graphs_[-1].values())}
            if model.secure_aggregation is None
            else {}
        ),
        **source.report(),
        **bin_report(model.bins_),
    }
    figures = []
    truth = source.truth
    if truth is not None:
        truth, learned = aligned(truth, fed)
        metrics.update({k: float(v) for k, v in graph_metrics(truth, learned).items()})
        for record, graph in zip(history, model.round_graphs_, strict=True):
            if graph is not None:
                record["shd"] = float(shd(*aligned(truth, graph)))
        figures.append(
            plot_graph_comparison(
                truth, learned, ctx.out / "fedcd_graph.png", title="FED-CD on your sites"
            )
        )
    metrics.update(_bootstrap_metrics(model, truth))
    return RunOutcome(metrics, history, figures)


def _bootstrap_metrics(model: FedCD, truth: Graph | None) -> dict[str, float]:
    """With ``--bootstrap``: the edges' frequencies and how many adjacencies each
    site's last graph contradicts in the consensus DAG
    (:func:`~fedstruct.experiments.confidence.bootstrap_metrics`)."""
    return bootstrap_metrics(
        model.graph_,
        model.edge_frequencies_,
        model.consensus_graph_,
        model.client_graphs_[-1],
        truth,
    )
