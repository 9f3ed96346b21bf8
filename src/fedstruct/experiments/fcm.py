"""``fedstruct run fcm``: F-CMs on concept data built from bnlearn networks (§5).

The data set (:func:`fedstruct.data.concepts.make_concept_dataset`, App. B.1) turns a
network's samples into autoencoder inputs; the task is the paper's (``dysp`` for
asia, ``Akt`` sachs, ``BP`` alarm, ``PropCost`` insurance, ``R5Fcst`` hailfinder).
:func:`~fedstruct.data.concepts.concept_clients` (App. D.1) gives ``clients`` clients
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

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from fedstruct.data import ClientData, Schedule
from fedstruct.data.concepts import (
    TASKS,
    ConceptDataset,
    ConceptPartition,
    concept_clients,
    make_concept_dataset,
)
from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.experiments.plots import plot_curves, plot_history
from fedstruct.experiments.runs import (
    FederationSettings,
    RunContext,
    Runnable,
    RunOutcome,
    register,
)
from fedstruct.experiments.settings import subset
from fedstruct.fl import Participation
from fedstruct.fl.grid import torch_threads
from fedstruct.graphs import Graph
from fedstruct.graphs.metrics import pair_disagreement
from fedstruct.methods.fcm import (
    FCM,
    FCMConfig,
    accuracy_metrics,
    fit_standalone,
    intervention_curve,
)
from fedstruct.methods.fcm.config import FEDERATED_REGIMES

__all__ = ["FCMRun", "build_federation", "concept_data", "dataset", "pooled"]

#: Round at which the late cohort joins (App. D.3).
ARRIVALS = {"asia": 10, "sachs": 10}
DEFAULT_ARRIVAL = 20


@dataclass(frozen=True)
class FCMRun(FederationSettings, FCMConfig):
    """Settings of ``fedstruct run fcm`` (defaults: the paper's asia protocol)."""

    network: str = "asia"
    clients: int = 20
    rounds: int = 200
    initial_clients: int = 10
    arrival_round: int = 0
    n_samples: int = 0
    latent_dim: int = 0
    autoencoder_epochs: int = 30
    noise: float = 0.5
    standardise_latent: bool = False
    paths_per_client: int = 2
    extra_concepts: int = 1
    task_missing: float = 0.2
    new_concept_fraction: float = 0.3
    perturbed_clients: float = 0.0
    perturbed_edges: float = 0.0
    max_epochs: int = 200

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.network not in TASKS:
            raise ConfigError(unknown_choice_message("fcm network", self.network, tuple(TASKS)))
        if not 1 <= self.initial_clients <= self.clients:
            raise ConfigError(
                f"initial_clients = {self.initial_clients} must lie in 1..clients ({self.clients})"
            )
        if self.arrival_round < 0 or self.max_epochs < 1:
            raise ConfigError("arrival_round must be >= 0 (0: the paper's) and max_epochs >= 1")

    @property
    def arrival(self) -> int:
        """The late cohort's first round."""
        return self.arrival_round or ARRIVALS.get(self.network, DEFAULT_ARRIVAL)


@lru_cache(maxsize=4)
def _dataset(
    network: str, n_samples: int, latent_dim: int, epochs: int, noise: float, standardise: bool,
    seed: int,
) -> ConceptDataset:  # fmt: skip
    return make_concept_dataset(
        network,
        n_samples=n_samples or None,
        latent_dim=latent_dim or None,
        autoencoder_epochs=epochs,
        noise=noise,
        standardise_latent=standardise,
        seed=seed,
    )


def dataset(s: FCMRun) -> ConceptDataset:
    """The run's concept data set (App. B.1), built once per settings in a process."""
    return _dataset(s.network, s.n_samples, s.latent_dim, s.autoencoder_epochs, s.noise,
                    s.standardise_latent, s.seed)  # fmt: skip


def concept_data(s: FCMRun) -> tuple[ConceptDataset, ConceptPartition]:
    """The data set and its client partition (built once per settings in a process)."""
    data = dataset(s)
    part = concept_clients(
        data,
        s.clients,
        s.initial_clients,
        paths_per_client=s.paths_per_client,
        extra_concepts=s.extra_concepts,
        task_missing=s.task_missing,
        new_concept_fraction=s.new_concept_fraction,
        perturbed_clients=s.perturbed_clients,
        perturbed_edges=s.perturbed_edges,
        seed=s.seed,
    )
    return data, part


def build_federation(s: FCMRun) -> list[ClientData]:
    """The clients (App. D.1): initial cohort first, then the late one."""
    return concept_data(s)[1].clients


def pooled(clients: Sequence[ClientData]) -> ClientData:
    """Every client's rows with the labels it has (the Centralized regime, §5)."""
    rows = pd.concat([c.rows for c in clients], ignore_index=True)
    supervised = [v for v in rows.columns if any(v in c.supervised for c in clients)]
    rows[supervised] = rows[supervised].fillna(-1).astype(np.int64)
    return ClientData("pooled", rows, tuple(supervised))


def participation(s: FCMRun) -> Participation:
    """Initial cohort from round 1, late cohort from :attr:`FCMRun.arrival`."""
    names = [f"client-{k + 1}" for k in range(s.clients)]
    schedule = Schedule.arrivals(names, s.initial_clients, s.arrival)
    return subset(s, Participation, schedule=schedule)


def method(s: FCMRun) -> FCM:
    """The F-CMs estimator the settings describe (``local``/``central``: the federated
    F-CMs settings, which :func:`run_fcm` does not fit)."""
    config = subset(s, FCMConfig)
    if config.regime not in FEDERATED_REGIMES:
        config = dataclasses.replace(config, regime="fcm")
    data = dataset(s)
    return FCM(
        task=data.task,
        cardinalities=data.cardinalities,
        seed=s.seed,
        participation=participation(s),
        **dataclasses.asdict(config),
    )


def _test_metrics(model, predicted, features, data: ConceptDataset, test: pd.DataFrame) -> dict:
    x = test[list(features)].to_numpy(dtype=np.float32)
    metrics = accuracy_metrics(model, x, test, data.graph, data.cardinalities, predicted)
    for point in intervention_curve(model, x, test, data.graph, predicted):
        level = point["level"]
        metrics[f"label_accuracy_level_{level}"] = point["label_accuracy"]
        metrics[f"task_accuracy_level_{level}"] = point["task_accuracy"]
    return metrics


def _alone(s: FCMRun, data: ConceptDataset, part: ConceptPartition) -> dict[str, float]:
    """Localized (mean over the final pool's clients) or Centralized metrics."""
    common = {
        "task": data.task,
        "cardinalities": data.cardinalities,
        "config": subset(s, FCMConfig),
        "max_epochs": s.max_epochs,
    }
    if s.regime == "central":
        fit = fit_standalone(pooled(part.clients), graph=data.graph, seed=s.seed, **common)
        return _test_metrics(fit.model, fit.predicted, data.features, data, part.test)
    rows = []
    for k, client in enumerate(part.clients):
        fit = fit_standalone(client, seed=s.seed + k, **common)
        rows.append(_test_metrics(fit.model, fit.predicted, data.features, data, part.test))
    keys = sorted(set().union(*rows))
    return {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}


def run_fcm(
    s: FCMRun, ctx: RunContext, model: FCM, clients: Sequence[ClientData] | Sequence[str]
) -> RunOutcome:
    """Fit the regime; score on the test rows; plot the validation loss per round."""
    with torch_threads(1):  # small models: one thread is fastest (fl.grid.torch_threads)
        return _run(s, ctx, model, clients)


def _run(
    s: FCMRun, ctx: RunContext, model: FCM, clients: Sequence[ClientData] | Sequence[str]
) -> RunOutcome:
    data, part = concept_data(s)
    if s.regime not in FEDERATED_REGIMES:
        metrics = _alone(s, data, part)
        metrics.update({"params_growth": 0.0, "params_changed_fraction": 0.0})
        return RunOutcome(metrics)
    model.fit(
        clients,
        backend=ctx.backend,
        checkpoint=ctx.checkpoint,
        resume=ctx.resume,
        progress=ctx.progress,
        stop_after=ctx.stop_after,
    )
    metrics = _test_metrics(model.model_, None, model.features_, data, part.test)
    metrics.update(model.parameter_change_)
    shared = [v for v in data.graph.names if v in set(model.graph_.names)]
    truth: Graph = data.graph.restrict(shared)
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


register(
    Runnable(
        name="fcm",
        summary="F-CMs: federated concept-based models with evolving concept spaces",
        settings=FCMRun,
        federation=build_federation,
        method=method,
        run=run_fcm,
        quick={
            "network": "asia",
            "clients": 4,
            "initial_clients": 2,
            "arrival_round": 2,
            "clients_per_round": 3,
            "rounds": 3,
            "n_samples": 2000,
            "autoencoder_epochs": 5,
        },
    )
)
