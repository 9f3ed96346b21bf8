"""``fedstruct run fedavg``: FedAvg on a categorical task sampled from a benchmark network."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedstruct.data import ClientData, load_network
from fedstruct.data.sites import LEVELLED, FederationSchema
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.experiments.fedavg.settings import FedAvgRun, task_variable
from fedstruct.experiments.plots import plot_history
from fedstruct.experiments.runs import RunContext, RunOutcome
from fedstruct.experiments.settings import subset
from fedstruct.experiments.sites import file_metrics, site_federation, site_roles
from fedstruct.methods.fedavg import FedAvg, FedAvgConfig

__all__ = ["method", "run_fedavg"]


def method(settings: FedAvgRun) -> FedAvg:
    """The FedAvg estimator the settings describe."""
    if settings.from_files:
        target, cardinalities = _file_task(settings)
    else:
        network = load_network(settings.network)
        target, cardinalities = task_variable(settings, network), network.cardinalities
    return FedAvg(
        target,
        cardinalities,
        seed=settings.seed,
        participation=settings.participation(settings.client_names()),
        **dataclasses.asdict(subset(settings, FedAvgConfig)),
    )


def run_fedavg(
    settings: FedAvgRun,
    ctx: RunContext,
    model: FedAvg,
    clients: Sequence[ClientData] | Sequence[str],
) -> RunOutcome:
    """Fit on the backend; metrics are those of the final global model on the server's
    test set (sampled from the network, never from a client), or on a user's files
    those of the federated evaluation on the sites' held-out rows."""
    if settings.from_files:
        return _on_files(settings, ctx, model, clients)
    network = load_network(settings.network)
    target = model.schema.target
    test = network.sample(settings.test_samples, seed=settings.seed + 10_000)
    ctx.fit(model, clients, test=test)
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
    }
    figure = plot_history(
        model.history_,
        ["test_accuracy", ("train_loss", "test_loss"), "clients_answered"],
        ctx.out / "fedavg_rounds.png",
        f"FedAvg on {network.name} (target {target}, {settings.clients} clients)",
    )
    return RunOutcome(metrics, model.history_, [figure] if figure else [])


def _file_task(settings: FedAvgRun) -> tuple[str, dict[str, int]]:
    """The target and every variable's number of levels, from the sites' schema.

    Raises
    ------
    ConfigError
        If no target is named or a variable is continuous.
    UnknownVariableError
        If the target is not a column of the sites.
    """
    schema = site_federation(settings).schema
    target = settings.target or site_roles(settings).get("target")
    if not target:
        raise ConfigError("name the column to predict: --set target=COLUMN")
    if target not in schema.variables:
        raise UnknownVariableError(
            f"target {target!r} is not a column of the sites; their columns are "
            f"{list(schema.variables)}"
        )
    _require_levelled(schema)
    return target, schema.cardinalities()


def _require_levelled(schema: FederationSchema) -> None:
    """Every column of the sites has levels (categorical or ordinal).

    Raises
    ------
    DataError
        Naming every continuous column at once, with what the user can do.
    """
    continuous = [v for v in schema.variables if schema.kinds[v] not in LEVELLED]
    if continuous:
        more = " ..." if len(continuous) > 10 else ""
        shown = ", ".join(repr(v) for v in continuous[:10]) + more
        raise DataError(
            f"FedAvg's classifier takes categorical or ordinal columns, but {len(continuous)} "
            f"of the sites' columns are continuous: {shown}; bin them into levels in the "
            "files (e.g. age groups), leave them out, or use a method that takes continuous "
            "columns (fedngm; fedcdnv with --set ci_test=fisherz). If a column's numbers are "
            "codes of a few levels, say so with --set kinds.COLUMN=ordinal"
        )


def _on_files(
    settings: FedAvgRun, ctx: RunContext, model: FedAvg, clients: Sequence[Any]
) -> RunOutcome:
    """A run on a user's files: the federated evaluation of the final model on every
    site's held-out rows (``test_fraction``; the training rows when it is 0). With
    held-out rows the sites asked in each round score that round's model on them,
    which the per-round plot shows beside the training loss."""
    ctx.fit(model, clients)
    last = model.history_[-1]
    rows = "test" if settings.test_fraction > 0 else "training"
    scored = {  # absent when a run is stopped early, or no site answered the evaluation
        f"{rows}_{name}": last[f"client_{name}"]
        for name in ("accuracy", "loss")
        if f"client_{name}" in last
    }
    metrics = {
        **scored,
        "rounds": len(model.history_),
        "mean_clients_answered": float(np.mean([h["clients_answered"] for h in model.history_])),
        **model.traffic_.summary(),
        **file_metrics(site_federation(settings)),
    }
    figure = plot_history(
        model.history_,
        [("train_loss", "client_loss"), "client_accuracy", "clients_answered"],
        ctx.out / "fedavg_rounds.png",
        f"FedAvg on your sites (target {model.schema.target})",
    )
    return RunOutcome(metrics, model.history_, [figure] if figure else [])
