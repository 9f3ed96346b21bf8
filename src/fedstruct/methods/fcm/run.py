"""``fedstruct run fcm``: F-CMs on concept data built from bnlearn networks (§5).

The data set (:func:`fedstruct.methods.fcm.concepts.make_concept_dataset`, App. B.1) turns a
network's samples into autoencoder inputs; the task is the paper's (``dysp`` for
asia, ``Akt`` sachs, ``BP`` alarm, ``PropCost`` insurance, ``R5Fcst`` hailfinder).
:func:`~fedstruct.methods.fcm.sources.concept_clients` (App. D.1) gives ``clients`` clients
with sub-graph supervision: the first ``initial_clients`` take part from round 1, the
others (which bring new concepts) join at ``arrival_round`` (App. D.3: 10 for asia
and sachs, 20 otherwise). The server samples ``clients_per_round`` of the available
clients each round.

``regime``: ``fcm``, ``sfcm``, ``sfcm-reinit`` run the federation; ``local`` trains one
model per client of the final pool alone and averages their metrics; ``central``
trains one model on every client's rows with the true graph. Metrics are measured on
the data set's test rows (never seen by any client).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd

from fedstruct.data import ClientData
from fedstruct.drawing.plots import plot_curves, plot_history
from fedstruct.errors import FedstructWarning
from fedstruct.fl.grid import torch_threads
from fedstruct.graphs.metrics import edge_type_counts, pair_disagreement
from fedstruct.methods.fcm import (
    FCM,
    FCMConfig,
    accuracy_metrics,
    fit_standalone,
    intervention_curve,
)
from fedstruct.methods.fcm.concepts import ConceptDataset
from fedstruct.methods.fcm.config import FEDERATED_REGIMES
from fedstruct.methods.fcm.evaluate import REPRESENTATION_METRICS, concept_quality
from fedstruct.methods.fcm.model import ConceptModel, ModelSpec
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.methods.fcm.sources import ConceptSource, SiteConcepts
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.knowledge import save_knowledge
from fedstruct.runs.settings import subset
from fedstruct.runs.sites import aligned, warn_imputed_unobserved

__all__ = ["pooled", "round_monitor", "run_fcm", "warn_if_task_has_no_parent"]


def pooled(clients: Sequence[ClientData]) -> ClientData:
    """Every client's rows with the labels it has (the Centralized regime, §5)."""
    rows = pd.concat([c.rows for c in clients], ignore_index=True)
    supervised = [v for v in rows.columns if any(v in c.supervised for c in clients)]
    rows[supervised] = rows[supervised].fillna(-1).astype(np.int64)
    return ClientData("pooled", rows, tuple(supervised))


def graph_provenance(s: FCMRun, model: FCM) -> dict[str, float]:
    """Which concept graph the model was built on, as the server saw it (the same in a
    deployment): ``graph_flat`` (1: :func:`flat_graph`), ``graph_sites_proposed`` (the
    sites that sent a graph to the vote, given or learned), ``graph_edges_<site>`` (its
    edges) and ``task_parents`` (the task's parents in the kept model's graph)."""
    proposed = {n: g for n, g in sorted(model.proposed_graphs_.items()) if g is not None}
    return {
        "graph_flat": float(s.client_graphs == "flat"),
        "graph_sites_proposed": float(len(proposed)),
        **{f"graph_edges_{name}": float(g.n_edges) for name, g in proposed.items()},
        "task_parents": float(len(model.graph_.parents(model.task))),
    }


def warn_if_task_has_no_parent(model: FCM) -> None:
    """Warn (:class:`~fedstruct.errors.FedstructWarning`) when a graph-based model's
    kept graph gives the task no parent: the task is then predicted from the inputs
    alone, not from the concepts (issue 31: an empty graph is never silent)."""
    if not model.config_.graph_based or model.graph_.parents(model.task):
        return
    concepts = [v for v in model.graph_.names if v != model.task]
    warnings.warn(
        f"the aggregated concept graph gives the task {model.task!r} no parent among the "
        f"concepts {concepts} ({model.graph_.n_edges} edges): {model.config_.model} predicts "
        "it from the inputs alone; give the sites' graphs (graph: in the manifest) or "
        "--graph FILE, let each site learn its own (--set client_graphs=auto, the "
        "default, or fci), or --set client_graphs=flat (every concept feeds the task)",
        FedstructWarning,
        stacklevel=2,
    )


def _test_metrics(
    s: FCMRun, model, predicted, features, data: ConceptDataset, test: pd.DataFrame
) -> dict:
    """Accuracies, the §5.2 curve by level and the concept metrics
    (:func:`~fedstruct.methods.fcm.evaluate.concept_quality`) on the test rows."""
    x = test[list(features)].to_numpy(dtype=np.float32)
    metrics = accuracy_metrics(model, x, test, data.graph, data.cardinalities, predicted)
    for point in intervention_curve(model, x, test, data.graph, predicted):
        level = point["level"]
        metrics[f"label_accuracy_level_{level}"] = point["label_accuracy"]
        metrics[f"task_accuracy_level_{level}"] = point["task_accuracy"]
    metrics.update(
        concept_quality(model, x, test, policy=s.intervention_policy, seed=s.seed,
                        graph=data.graph, predicted=predicted, rows=s.metric_rows)
    )  # fmt: skip
    return metrics


def round_monitor(s: FCMRun, data: ConceptDataset, test: pd.DataFrame):
    """The server's per-round CAS, OIS and NIS on the run's test rows (every
    ``concept_metrics_every`` rounds; the rows the run scores its final model on,
    which no client sees): :class:`~fedstruct.methods.fcm.server.FCMServer`'s
    ``monitor``."""
    x = test[list(data.features)].to_numpy(dtype=np.float32)

    def monitor(rnd: int, spec: ModelSpec, params) -> dict[str, float]:
        every = s.concept_metrics_every
        if not every or rnd % every:
            return {}
        model = ConceptModel(spec)
        model.load_arrays(params)
        return concept_quality(model, x, test, policy=s.intervention_policy, seed=s.seed,
                               rows=s.metric_rows, which=REPRESENTATION_METRICS)  # fmt: skip

    return monitor


def _alone(s: FCMRun, source: ConceptSource) -> dict[str, float]:
    """Localized (mean over the final pool's clients) or Centralized metrics (the
    partition's clients with their given graphs)."""
    data, part = source.data, source.partition
    common = {
        "task": data.task,
        "cardinalities": data.cardinalities,
        "config": subset(s, FCMConfig),
        "max_epochs": s.max_epochs,
    }
    if s.regime == "central":
        fit = fit_standalone(pooled(part.clients), graph=data.graph, seed=s.seed, **common)
        return _test_metrics(s, fit.model, fit.predicted, data.features, data, part.test)
    rows = []
    for k, client in enumerate(part.clients):
        fit = fit_standalone(client, seed=s.seed + k, **common)
        rows.append(_test_metrics(s, fit.model, fit.predicted, data.features, data, part.test))
    keys = sorted(set().union(*rows))
    return {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}


def run_fcm(
    s: FCMRun, ctx: RunContext, model: FCM, source: ConceptSource | SiteConcepts
) -> RunOutcome:
    """Fit the regime; score on the test rows (a user's files: the sites' held-out
    rows); plot the validation loss per round. A knowledge file is checked against
    the concepts and the task first and saved as knowledge.json (the model checks
    the given graph against it)."""
    save_knowledge(s.knowledge, tuple(source.cardinalities), ctx.out)
    with torch_threads(1):  # small models: one thread is fastest (fl.grid.torch_threads)
        if source.sites is not None:  # the user's files
            return _on_files(s, ctx, model, cast(SiteConcepts, source))
        return _on_concepts(s, ctx, model, cast(ConceptSource, source))


def _on_concepts(s: FCMRun, ctx: RunContext, model: FCM, source: ConceptSource) -> RunOutcome:
    """A run of the paper's protocol, scored on the data set's test rows and graph."""
    if s.regime not in FEDERATED_REGIMES:
        metrics = _alone(s, source)
        metrics.update({"params_growth": 0.0, "params_changed_fraction": 0.0})
        return RunOutcome(metrics)
    data = source.data
    model.round_monitor = round_monitor(s, data, source.test)
    ctx.fit(model, source)
    warn_if_task_has_no_parent(model)
    metrics = _test_metrics(s, model.model_, None, model.features_, data, source.test)
    metrics.update(model.parameter_change_)
    shared = [v for v in source.truth.names if v in set(model.graph_.names)]
    truth = source.truth.restrict(shared)
    metrics["pair_disagreement"] = float(pair_disagreement(truth, model.graph_.restrict(shared)))
    metrics["rounds_run"] = float(len(model.history_))
    metrics["best_round"] = float(model.best_round_)
    spent = [h["epsilon_max"] for h in model.history_ if "epsilon_max" in h]
    if spent:
        metrics["epsilon"] = float(max(spent))
    figures = [
        f
        for f in (
            plot_history(
                model.history_,
                ["val_loss", "val_task_loss", "concepts"],
                ctx.out / "fcm_rounds.png",
                f"F-CMs ({s.model}, {s.regime}) on {s.network}",
            ),
            plot_curves(
                {
                    "label accuracy": [
                        (float(k.rsplit("_", 1)[1]), v)
                        for k, v in metrics.items()
                        if k.startswith("label_accuracy_level_")
                    ]
                },
                ctx.out / "fcm_interventions.png",
                title=f"Interventions by level ({s.model}, {s.network})",
                xlabel="intervened levels",
                ylabel="accuracy",
            ),
        )
        if f is not None
    ]
    return RunOutcome(metrics, [dict(h) for h in model.history_], figures)


def _on_files(s: FCMRun, ctx: RunContext, model: FCM, source: SiteConcepts) -> RunOutcome:
    """A run on a user's files: the kept model's held-out task and concept accuracy
    and losses over the sites (federated evaluation on the rows each site holds out,
    ``validation_fraction``), the concept space and the aggregated graph, and with
    ``--truth`` the pairs on which that graph disagrees with the truth."""
    if s.scales_inputs:
        warn_imputed_unobserved(source.unobserved, None)
    ctx.fit(model, source)
    warn_if_task_has_no_parent(model)
    history = [dict(h) for h in model.history_]
    kept = next(h for h in history if h["round"] == model.best_round_) if history else {}
    metrics: dict[str, float] = {
        key: float(kept[key])
        for key in (
            "val_loss",
            "val_task_loss",
            "val_task_accuracy",
            "val_concept_accuracy",
            "val_intervention_auc",
            "val_cace_mean",
        )
        if key in kept and np.isfinite(kept[key])
    }
    metrics.update(
        {
            "concepts": float(len(model.graph_.names) - 1),
            "rounds_run": float(len(history)),
            "best_round": float(model.best_round_),
            **graph_provenance(s, model),
            **edge_type_counts(model.graph_),
            **model.parameter_change_,
            **source.report(),
        }
    )
    truth = source.truth
    if truth is not None:
        truth, learned = aligned(truth, model.graph_)
        metrics["pair_disagreement"] = float(pair_disagreement(truth, learned))
    figure = plot_history(
        history,
        ["val_loss", "val_task_accuracy", "val_concept_accuracy", "concepts"],
        ctx.out / "fcm_rounds.png",
        f"F-CMs ({s.model}, {s.regime}) on your sites",
    )
    return RunOutcome(metrics, history, [figure] if figure else [])
