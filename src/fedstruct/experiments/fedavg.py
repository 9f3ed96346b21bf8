"""``fedstruct run fedavg``: FedAvg on a categorical task sampled from a benchmark network."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedstruct.data import ClientData, load_network
from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.data.partition import client_names, horizontal, label_skew
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.experiments.plots import plot_history
from fedstruct.experiments.runs import (
    FederationSettings,
    RunContext,
    Runnable,
    RunOutcome,
    register,
)
from fedstruct.experiments.settings import subset
from fedstruct.methods.fedavg import FedAvg, FedAvgConfig

__all__ = ["FedAvgRun", "default_target", "federation", "method", "run_fedavg"]

#: The task variable of each network in the F-CMs experiments (App. B.1), reused here.
TASKS = {
    "asia": "dysp",
    "sachs": "Akt",
    "alarm": "BP",
    "insurance": "PropCost",
    "hailfinder": "R5Fcst",
}


def default_target(network: DiscreteNetwork) -> str:
    """The network's task variable: the F-CMs task if it has one, else its last variable
    in topological order (a sink)."""
    return TASKS.get(network.name, network.graph.topological_order()[-1])


@dataclass(frozen=True)
class FedAvgRun(FederationSettings, FedAvgConfig):
    """Settings of ``fedstruct run fedavg``: the federation, FedAvg's hyper-parameters
    (:class:`FedAvgConfig`) and the data.

    ``samples`` training rows are sampled from ``network`` and split over the
    clients (``partition``: ``iid``, or ``label-skew`` = Dirichlet(``dirichlet_alpha``)
    over the target's classes with at least ``min_per_client`` rows each);
    ``test_samples`` more rows form the server's test set.
    """

    network: str = "asia"
    target: str = ""
    samples: int = 5000
    test_samples: int = 2000
    partition: str = "iid"
    dirichlet_alpha: float = 0.5
    min_per_client: int = 20


def federation(settings: FedAvgRun) -> list[ClientData]:
    """Sample the training rows and split them over ``client-1 .. client-K``."""
    network = load_network(settings.network)
    target = _target(settings, network)
    rows = network.sample(settings.samples, seed=settings.seed)
    if settings.partition == "iid":
        return horizontal(rows, settings.clients, seed=settings.seed)
    if settings.partition == "label-skew":
        split = label_skew(
            rows[target].to_numpy(),
            settings.clients,
            alpha=settings.dirichlet_alpha,
            min_per_client=settings.min_per_client,
            seed=settings.seed,
        )
        return [
            ClientData(name, rows.iloc[np.sort(idx)].reset_index(drop=True))
            for name, idx in zip(client_names(settings.clients), split.clients, strict=True)
        ]
    raise ConfigError(
        f"fedavg setting partition = {settings.partition!r}; valid partitions: iid, label-skew"
    )


def method(settings: FedAvgRun) -> FedAvg:
    """The FedAvg estimator the settings describe."""
    network = load_network(settings.network)
    return FedAvg(
        _target(settings, network),
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
    model.fit(
        clients,
        test=test,
        backend=ctx.backend,
        checkpoint=ctx.checkpoint,
        resume=ctx.resume,
        progress=ctx.progress,
        stop_after=ctx.stop_after,
    )
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


def _target(settings: FedAvgRun, network: DiscreteNetwork) -> str:
    target = settings.target or default_target(network)
    if target not in network.names:
        raise UnknownVariableError(
            f"target {target!r} is not a variable of {network.name}; "
            f"pick one of {list(network.names)}"
        )
    return target


register(
    Runnable(
        name="fedavg",
        summary="FedAvg classifier on a task sampled from a network (runtime reference)",
        settings=FedAvgRun,
        federation=federation,
        method=method,
        run=run_fedavg,
        quick={"clients": 3, "rounds": 2, "samples": 1500, "test_samples": 500},
    )
)
