"""``fedstruct run fedavg``: FedAvg on a categorical task sampled from a benchmark network."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from fedstruct.data import ClientData, load_network
from fedstruct.data.partition import client_names
from fedstruct.experiments.fedavg.settings import FedAvgRun, task_variable
from fedstruct.experiments.plots import plot_history
from fedstruct.experiments.runs import RunContext, RunOutcome
from fedstruct.experiments.settings import subset
from fedstruct.methods.fedavg import FedAvg, FedAvgConfig

__all__ = ["method", "run_fedavg"]


def method(settings: FedAvgRun) -> FedAvg:
    """The FedAvg estimator the settings describe."""
    network = load_network(settings.network)
    return FedAvg(
        task_variable(settings, network),
        network.cardinalities,
        seed=settings.seed,
        participation=settings.participation(client_names(settings.clients)),
        **dataclasses.asdict(subset(settings, FedAvgConfig)),
    )


def run_fedavg(
    settings: FedAvgRun,
    ctx: RunContext,
    model: FedAvg,
    clients: Sequence[ClientData] | Sequence[str],
) -> RunOutcome:
    """Fit on the backend; metrics are those of the final global model on the server's
    test set (sampled from the network, never from a client)."""
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
        ["test_accuracy", "train_loss", "clients_answered"],
        ctx.out / "fedavg_rounds.png",
        f"FedAvg on {network.name} (target {target}, {settings.clients} clients)",
    )
    return RunOutcome(metrics, model.history_, [figure] if figure else [])
