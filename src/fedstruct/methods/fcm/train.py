"""Module-specific local training and validation losses (§4.2.3, eq. 2).

A client trains the encoder and only the modules it can supervise: the concepts it
has labels for and, if it has task labels, the task decoder. Every other module is
frozen (App. D.3, "parameter freezing under partial supervision"). During training a
supervised concept's prediction is replaced by its label with probability
``train_intervention_rate`` for the nodes that read it (App. D.3, after CEM).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from fedstruct.methods.fcm.model import ConceptModel, ModelSpec
from fedstruct.privacy.dp import PrivateSGD, make_private, private_schedule

__all__ = [
    "PrivateSGD",
    "eq2_loss",
    "label_matrix",
    "private_schedule",
    "train_local",
    "validation_losses",
]


def label_matrix(labels: pd.DataFrame, spec: ModelSpec) -> torch.Tensor:
    """``(n, len(spec.nodes))`` label codes; ``-1`` where a label is missing or the
    client has no column for the node."""
    n = len(labels)
    out = np.full((n, len(spec.nodes)), -1, dtype=np.int64)
    for j, name in enumerate(spec.nodes):
        if name in labels.columns:
            out[:, j] = labels[name].to_numpy(dtype=np.int64)
    return torch.from_numpy(out)


def eq2_loss(
    logits: list[torch.Tensor], truth: torch.Tensor, spec: ModelSpec, concept_weight: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (2): ``γ Σ_{j ∈ I} L_c(ĉ_j, c_j) + (1 - γ) 1[task labels] L_t(ŷ, y)``.

    Each cross-entropy is the mean over the rows whose label is known (``>= 0``); a
    node without any known label contributes nothing (it is not in ``I^(k)``).

    Returns
    -------
    tuple
        The total loss and the task term ``L_t`` (0 when no task label is known).
    """
    concept = logits[0].new_zeros(())
    task = concept
    last = len(spec.nodes) - 1
    for j, out in enumerate(logits):
        y = truth[:, j]
        known = (y >= 0).to(out.dtype)
        # Masked mean: rows without a label (and nodes without any) weigh zero but stay
        # in the graph, so every module has a (possibly zero) gradient, as DP-SGD's
        # per-sample gradients require.
        ce = F.cross_entropy(out, y.clamp(min=0), reduction="none")
        term = (ce * known).sum() / known.sum().clamp(min=1.0)
        if j == last:
            task = term
        else:
            concept = concept + term
    return concept_weight * concept + (1.0 - concept_weight) * task, task


def _freeze(
    model: ConceptModel, trainable: Collection[str], freeze: bool
) -> list[torch.nn.Parameter]:
    """Freeze the modules outside ``trainable`` (unless ``freeze`` is off); return the rest."""
    allowed = set(trainable)
    for name in model.spec.nodes:
        for p in model.node_parameters(name):
            p.requires_grad_(name in allowed or not freeze)
    return [p for p in model.parameters() if p.requires_grad]


def _concept_columns(spec: ModelSpec) -> torch.Tensor:
    """Columns a training intervention may hit: every node but the task."""
    mask = torch.ones(len(spec.nodes), dtype=torch.bool)
    mask[-1] = False
    return mask


def train_local(
    model: ConceptModel,
    x: torch.Tensor,
    truth: torch.Tensor,
    *,
    trainable: Collection[str],
    epochs: int,
    batch_size: int,
    learning_rate: float,
    concept_weight: float,
    intervention_rate: float,
    rng: np.random.Generator,
    freeze: bool = True,
    private: PrivateSGD | None = None,
) -> float:
    """``epochs`` epochs of Adam on eq. (2), modules outside ``trainable`` frozen.

    Parameters
    ----------
    model
        The broadcast model (updated in place).
    x, truth
        Inputs and :func:`label_matrix` labels (each batch is moved to the model's
        device: on a GPU, keep them on the CPU).
    trainable
        Nodes whose modules this client may update (its supervised concepts, and the
        task if it has task labels); the encoder is always trained.
    rng
        Source of the batch order, the random training interventions and DP noise.
    freeze
        ``False`` trains every module (the ablation of App. E.5.2).
    private
        DP-SGD (App. E.4) with Opacus: Poisson-sampled batches, per-sample gradients
        clipped to ``C`` (eq. 4), Gaussian noise ``σ C`` on their sum; batches and
        noise drawn from the operating system's entropy (not ``rng``: a DP run is not
        bit-reproducible). The privacy
        cost is the caller's to account (:func:`private_schedule`: every drawn batch
        counts, empty ones included).

    Returns
    -------
    float
        Mean training loss over the last epoch's batches.
    """
    params = _freeze(model, trainable, freeze)
    device = next(model.parameters()).device  # batches move there; x stays where it is
    seed = int(rng.integers(2**62))
    optimiser = torch.optim.Adam(params, lr=learning_rate)
    forward = model
    dataset = TensorDataset(x, truth)
    with warnings.catch_warnings():
        # Opacus: "secure RNG turned off"; backward hooks on constant inputs.
        warnings.simplefilter("ignore", UserWarning)
        if private is None:
            generator = torch.Generator().manual_seed(seed)
            loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator)
        else:  # batches and noise from the OS's entropy, not the run's seed
            forward, optimiser, loader = make_private(
                model, optimiser, dataset, batch_size, private
            )
        concepts = _concept_columns(model.spec)
        interventions = torch.Generator().manual_seed(seed + 2)
        model.train()
        last = float("nan")
        for _ in range(epochs):
            total, count = 0.0, 0
            for xb, yb in loader:
                if len(xb) == 0:  # a Poisson draw can be empty
                    continue
                hit = (torch.rand(yb.shape, generator=interventions) < intervention_rate) & concepts
                xb, yb, hit = xb.to(device), yb.to(device), hit.to(device)
                loss, _ = eq2_loss(forward(xb, yb, hit), yb, model.spec, concept_weight)
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                total += float(loss.detach())
                count += 1
            last = total / max(count, 1)
    if private is not None:
        forward._close()  # type: ignore[union-attr]  (detach Opacus' hooks)
    for p in model.parameters():
        p.requires_grad_(True)
    return last


def validation_losses(
    model: ConceptModel, x: torch.Tensor, truth: torch.Tensor, concept_weight: float
) -> Mapping[str, float]:
    """Eq. (2) and its task term on held-out rows, without interventions, and how many
    known task and concept labels the model predicts right (``task_correct`` of
    ``task_known``, ``concept_correct`` of ``concept_known``: the held-out accuracies
    as sums that clients can add up)."""
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss, task = eq2_loss(logits, truth, model.spec, concept_weight)
    known = truth >= 0
    right = [int((out.argmax(1) == truth[:, j])[known[:, j]].sum()) for j, out in enumerate(logits)]
    counts = known.sum(0).tolist()
    return {
        "loss": float(loss),
        "task_loss": float(task),
        "task_correct": float(right[-1]),
        "task_known": float(counts[-1]),
        "concept_correct": float(sum(right[:-1])),
        "concept_known": float(sum(counts[:-1])),
    }
