"""Training one concept model on one data set: the Localized and Centralized regimes (§5).

Both train a single model with the F-CMs modules, loss (eq. 2) and freezing, for up to
``max_epochs`` epochs with early stopping on the held-out rows' loss (App. D.3: 200
epochs, patience 10). Localized: one model per client, on its own rows and graph.
Centralized: one model on the pooled rows of every client, with the true graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.fl.grid import torch_threads
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm.client import LocalConceptData
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fcm.model import ConceptModel, ModelSpec
from fedstruct.methods.fcm.train import label_matrix, train_local, validation_losses

__all__ = ["StandaloneFit", "fit_standalone"]


@dataclass(frozen=True)
class StandaloneFit:
    """A model trained alone: the model, the nodes it predicts, per-epoch losses."""

    model: ConceptModel
    predicted: tuple[str, ...]
    history: list[dict[str, float]]


def fit_standalone(
    data: ClientData,
    *,
    task: str,
    cardinalities: Mapping[str, int],
    config: FCMConfig,
    graph: Graph | None = None,
    seed: int = 0,
    max_epochs: int = 200,
    threads: int | None = 1,
) -> StandaloneFit:
    """Train one model on ``data`` with early stopping (patience ``config.patience``).

    Parameters
    ----------
    data
        The rows (features and supervised label columns).
    task, cardinalities
        The task variable and the states of every concept and the task.
    config
        Architecture and training settings (``rounds``/``clients_per_round`` unused).
    graph
        The graph of graph-based models (default ``data.graph``; none: every node a root).
    seed
        Seed of the initial parameters, the held-out rows and the batches.
    max_epochs
        Epoch limit.
    threads
        Torch threads while training (one is fastest for these small models, see
        :func:`fedstruct.fl.grid.torch_threads`; ``None`` leaves the setting alone).
    """
    with torch_threads(threads):
        return _fit(data, task, cardinalities, config, graph, seed, max_epochs)


def _fit(
    data: ClientData,
    task: str,
    cardinalities: Mapping[str, int],
    config: FCMConfig,
    graph: Graph | None,
    seed: int,
    max_epochs: int,
) -> StandaloneFit:
    local = LocalConceptData(data, task, cardinalities, config.validation_fraction, seed)
    nodes = (*local.concepts, task)
    graph = graph if graph is not None else data.graph
    if graph is None:
        graph = Graph.empty(nodes)
    spec = ModelSpec.build(config, task, local.concepts, cardinalities, len(local.features), graph)
    model = ConceptModel(spec, seed)
    x, truth = local.x, label_matrix(local.labels, spec)
    x_val, truth_val = local.x_val, label_matrix(local.labels_val, spec)
    rng = np.random.default_rng([int(seed), 2])
    best, best_state, since = float("inf"), model.state_arrays(), 0
    history = []
    trainable = local.trainable(spec)
    for epoch in range(1, max_epochs + 1):
        loss = train_local(
            model,
            x,
            truth,
            trainable=trainable,
            epochs=1,
            batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            concept_weight=config.concept_weight,
            intervention_rate=config.train_intervention_rate,
            rng=rng,
            freeze=config.freeze_unsupervised,
        )
        val = (
            validation_losses(model, x_val, truth_val, config.concept_weight)
            if len(x_val)
            else {"loss": loss, "task_loss": float("nan")}
        )
        history.append({"epoch": epoch, "train_loss": loss, "val_loss": val["loss"],
                        "val_task_loss": val["task_loss"]})  # fmt: skip
        if val["loss"] < best:
            best, best_state, since = val["loss"], model.state_arrays(), 0
        else:
            since += 1
            if since >= config.patience:
                break
    model.load_arrays(best_state)
    return StandaloneFit(model, tuple(trainable), history)
