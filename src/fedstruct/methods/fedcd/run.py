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

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from fedstruct.data import ClientData
from fedstruct.drawing.plots import plot_graph_comparison
from fedstruct.errors import FedstructWarning
from fedstruct.fl.binning import QuantileBins
from fedstruct.graphs import Graph, graph_metrics
from fedstruct.graphs.metrics import edge_type_counts, shd, site_agreement
from fedstruct.methods.fedcd import (
    ENCO,
    Beliefs,
    FedCD,
    InterventionalData,
    final_graph,
)
from fedstruct.methods.fedcd.settings import FedCDRun
from fedstruct.methods.fedcd.sources import InterventionTask, RegimeSites
from fedstruct.runs.confidence import bootstrap_metrics
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.knowledge import save_knowledge
from fedstruct.runs.sites import aligned

__all__ = [
    "BINS_FILE",
    "bin_report",
    "binning_warning",
    "pooled",
    "run_fedcd",
    "write_bins",
]

#: The continuous columns' cut points, in the run's folder (one row per column).
BINS_FILE = "bins.csv"
#: From this many variables the warning before round 1 says an epoch can take minutes.
WIDE = 20


def pooled(clients: Sequence[ClientData]) -> ClientData:
    """All clients' rows in one data set (the centralised setting)."""
    rows = pd.concat([c.rows for c in clients], ignore_index=True)
    regimes = np.concatenate([c.regimes() for c in clients])
    return ClientData("pooled", rows, intervention=regimes)


def bin_report(bins: QuantileBins | None) -> dict[str, float]:
    """The binning in three numbers: the continuous columns binned
    (``binned_columns``) and the fewest and most bins a column got (``bins_min``,
    ``bins_max``: a column with few distinct values gets fewer); nothing without
    continuous columns. Each column's cut points are in :data:`BINS_FILE`
    (:func:`write_bins`) and the saved model (issue 49: 46 columns' cuts were 184
    rows of the metrics table)."""
    if bins is None or not bins.cuts:
        return {}
    counts = [len(cuts) + 1 for cuts in bins.cuts.values()]
    return {
        "binned_columns": float(len(counts)),
        "bins_min": float(min(counts)),
        "bins_max": float(max(counts)),
    }


def write_bins(bins: QuantileBins | None, out: Path) -> Path | None:
    """Write each binned column's bins and cut points to ``out /`` :data:`BINS_FILE`
    (``column,bins,cut_1,cut_2,...``; a column with fewer bins leaves its last cells
    empty); ``None`` (no file) without continuous columns."""
    if bins is None or not bins.cuts:
        return None
    width = max(len(c) for c in bins.cuts.values())
    table = pd.DataFrame(
        [
            {
                "column": column,
                "bins": len(cuts) + 1,
                **{f"cut_{j + 1}": c for j, c in enumerate(cuts)},
            }
            for column, cuts in bins.cuts.items()
        ],
        columns=["column", "bins", *(f"cut_{j + 1}" for j in range(width))],
    )
    path = out / BINS_FILE
    table.to_csv(path, index=False)
    return path


def binning_warning(s: FedCDRun, source: InterventionTask | RegimeSites, out: Path) -> str | None:
    """What a run on continuous columns is in for, said before round 1: ENCO models
    categories, so each continuous column is cut into ``bins`` pooled quantile bins
    (what varies within a bin is lost), and the work of each round at every site
    (issue 49: 46 continuous columns ran 15 minutes without a word, then 26 minutes
    for adjacency F1 0.43 where PC on the pooled observational rows reached 0.88);
    ``None`` without continuous columns."""
    columns = source.continuous
    if not columns:
        return None
    d = len(source.graph_variables())
    wide = (
        f"on {d} variables an epoch can take many minutes on a CPU (ENCO's cost grows with "
        "the square of the variables); "
        if d >= WIDE
        else ""
    )
    n = len(columns)
    return (
        f"FED-CD's ENCO learns categories: {_count(n, 'continuous column')} "
        f"{'is' if n == 1 else 'are each'} cut into {s.bins} pooled quantile bins (--set "
        f"bins=K; cut points in {out / BINS_FILE}), so what varies within a bin is lost. "
        f"The run: {_count(s.rounds, 'round')} of {_count(s.epochs_per_round, 'ENCO epoch')} "
        f"at every site, each epoch {s.model_steps:,} distribution-fitting and "
        f"{s.graph_steps:,} graph-fitting steps (a graph step scores {s.graphs_per_step} "
        f"graphs of {d} networks): {wide}the progress lines give the time left and the run's "
        "time at this machine's pace after a site's first steps (fewer steps: --set "
        "model_steps=N --set graph_steps=N, docs/fedcd.md). For continuous observational "
        "rows a constraint-based search (fedstruct run fedcdnv on them: Fisher-z tests) is "
        "far quicker"
    )


def _count(n: int, noun: str) -> str:
    """``1 round``, ``5 rounds``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


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
    save_knowledge(s.knowledge, source.graph_variables(), ctx.out)
    note = binning_warning(s, source, ctx.out)
    if note:
        warnings.warn(note, FedstructWarning, stacklevel=2)
    ctx.fit(model, source)
    if source.sites is not None:  # the user's files
        return _on_files(ctx, model, cast(RegimeSites, source))
    truth = cast(InterventionTask, source).truth  # the paper's federation
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
    bins (:func:`bin_report`; their cut points in :data:`BINS_FILE`), and, with
    ``--truth``, the scores against that graph (SHD per round too)."""
    fed = model.graph_
    history = [dict(h) for h in model.history_]
    metrics: dict[str, float] = {
        **edge_type_counts(fed),
        "edge_entropy": float(history[-1].get("edge_entropy", np.nan)),
        # with secure aggregation the sites' own graphs are never seen
        **(
            {"site_agreement": site_agreement(fed, model.client_graphs_[-1].values())}
            if model.secure_aggregation_ is None
            else {}
        ),
        **source.report(),
        **bin_report(model.bins_),
    }
    write_bins(model.bins_, ctx.out)
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
    (:func:`~fedstruct.runs.confidence.bootstrap_metrics`)."""
    return bootstrap_metrics(
        model.graph_,
        model.edge_frequencies_,
        model.consensus_graph_,
        model.client_graphs_[-1],
        truth,
    )
