"""``fedstruct run fedavg``: FedAvg on a categorical task sampled from a benchmark network,
or on a user's site files (a classification, or a regression for a continuous target)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from fedstruct.drawing.plots import plot_history
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedavg.settings import FedAvgRun
from fedstruct.methods.fedavg.sources import NetworkTask, SiteTask
from fedstruct.privacy.central_dp import central_report
from fedstruct.privacy.dp import epsilon_report
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.sites import warn_imputed_unobserved

__all__ = ["run_fedavg"]


def run_fedavg(
    settings: FedAvgRun, ctx: RunContext, model: FedAvg, source: NetworkTask | SiteTask
) -> RunOutcome:
    """Fit on the backend; metrics are those of the final global model on the server's
    test set (sampled from the network, never from a client), or on a user's files
    those of the federated evaluation on the sites' held-out rows."""
    if source.sites is not None:  # the user's files
        return _on_files(settings, ctx, model, cast(SiteTask, source))
    task = cast(NetworkTask, source)  # the method's protocol
    target = model.target
    test = task.test_rows()
    ctx.fit(model, source, test=test)
    last = model.history_[-1]
    majority = float(test[target].value_counts(normalize=True).iloc[0])
    metrics = {
        "test_accuracy": last["test_accuracy"],
        "test_loss": last["test_loss"],
        "majority_accuracy": majority,
        "rounds": len(model.history_),
        "mean_clients_answered": float(np.mean([h["clients_answered"] for h in model.history_])),
        **{k: last[k] for k in ("client_accuracy", "client_loss") if k in last},
        **model.traffic_.summary(),
        **_privacy(model, source.names),
    }
    figure = plot_history(
        model.history_,
        ["test_accuracy", ("train_loss", "test_loss"), "clients_answered"],
        ctx.out / "fedavg_rounds.png",
        f"FedAvg on {task.network.name} (target {target}, {settings.clients} clients)",
    )
    return RunOutcome(metrics, model.history_, [figure] if figure else [])


def _on_files(settings: FedAvgRun, ctx: RunContext, model: FedAvg, source: SiteTask) -> RunOutcome:
    """A run on a user's files: the federated evaluation of the final model on every
    site's held-out rows (``test_fraction``; the training rows when it is 0). With
    held-out rows the sites asked in each round score that round's model on them,
    which the per-round plot shows beside the training loss."""
    warn_imputed_unobserved(source.unobserved, model.categorical_imputation)
    ctx.fit(model, source)
    last = model.history_[-1]
    rows = "test" if settings.test_fraction > 0 else "training"
    names = ("rmse", "r2", "loss") if model.schema_.regression else ("accuracy", "loss")
    scored = {  # absent when a run is stopped early, or no site answered the evaluation
        f"{rows}_{name}": last[f"client_{name}"] for name in names if f"client_{name}" in last
    }
    first = model.history_[0]
    statistics = {  # the statistics step's report (continuous or incomplete columns)
        name: first[name] for name in ("missing_target_rows",) if name in first
    }
    metrics = {
        **scored,
        **statistics,
        "rounds": len(model.history_),
        "mean_clients_answered": float(np.mean([h["clients_answered"] for h in model.history_])),
        **model.traffic_.summary(),
        **_privacy(model, source.names),
        **source.report(),
    }
    score = "client_rmse" if model.schema_.regression else "client_accuracy"
    figure = plot_history(
        model.history_,
        [("train_loss", "client_loss"), score, "clients_answered"],
        ctx.out / "fedavg_rounds.png",
        f"FedAvg on your sites (target {model.schema_.target})",
    )
    return RunOutcome(metrics, model.history_, [figure] if figure else [])


def _privacy(model: FedAvg, sites: Sequence[str]) -> dict[str, float]:
    """With DP-SGD, the ε each site spent (:func:`~fedstruct.privacy.dp.epsilon_report`);
    with central DP, the site-level ε of the run (``central_dp_epsilon``) and the last
    round's clipping norm (``central_dp_clip``,
    :func:`~fedstruct.privacy.central_dp.central_report`)."""
    metrics: dict[str, float] = {}
    if model.config_.dp_epsilon is not None:
        metrics.update(epsilon_report(model.history_, sites))
    metrics.update(central_report(model.history_))
    return metrics
