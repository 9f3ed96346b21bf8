"""Concept interventions on a concept model: policies, curves and causal effects.

An intervention replaces a concept's predicted state probabilities by its label for
every module that reads it (:meth:`~fedstruct.methods.fcm.model.ConceptModel.forward`).
An **intervention curve** gives the task accuracy after ``t = 0, 1, ..., K``
interventions, one concept at a time, in the order a **policy** chooses for each row
(docs/fcm.md, "Intervention policies"); a row intervenes only on concepts whose label
it has. Each policy scores the concepts not yet intervened on, on the current
predictions (so a graph-based model's re-predicted concepts count), and takes the
best (the first in the model's concept order on a tie):

* ``graph_level`` (§5.2, the recipes' curves so far): a fixed order, the task's
  ancestral graph layered by longest path from its roots, level by level;
* ``random``: a random order per row, drawn from a seed (``cem``'s
  ``IndependentRandomMaskIntPolicy``; PyC's ``RandomPolicy``);
* ``uncertainty``: the concept whose predicted distribution has the largest
  entropy, relative to ``log k`` (for a binary concept: the probability nearest
  0.5; ``cem``'s ``UncertaintyMaximizerPolicy``, PyC's ``UncertaintyInterventionPolicy``);
* ``group_uncertainty``: ``cem``'s group rule, a concept taken as the group of its
  states' indicators and scored by its most uncertain one, the state probability
  nearest 0.5 (for a binary concept the same order as ``uncertainty``);
* ``optimal_greedy``: an oracle that knows the task label and takes the concept
  whose intervention gives the true task state the highest probability
  (``cem``'s ``GreedyOptimal``).

The counts returned are sums over rows, so that clients can add them up (the
federated curve of :meth:`~fedstruct.methods.fcm.client.FCMClient.evaluate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm.config import INTERVENTION_POLICIES
from fedstruct.methods.fcm.model import ConceptModel

__all__ = [
    "POLICIES",
    "CurveCounts",
    "effect_sums",
    "intervention_counts",
    "level_order",
]

#: The intervention policies (``intervention_policy``).
POLICIES = INTERVENTION_POLICIES


@dataclass(frozen=True)
class CurveCounts:
    """An intervention curve as sums: ``correct[t]`` rows whose task state is
    predicted right after ``t`` interventions, of ``rows`` rows with a task label;
    ``orders[r, t]`` is the candidate (its index) row ``r`` intervened on at step
    ``t + 1`` (-1 once it had none left). Only the sums leave a client."""

    correct: NDArray[np.int64]
    rows: int
    orders: NDArray[np.int64]

    @property
    def accuracies(self) -> list[float]:
        """The task accuracy after ``t = 0..K`` interventions (NaN without rows)."""
        if not self.rows:
            return [float("nan")] * len(self.correct)
        return [float(c) / self.rows for c in self.correct]


def level_order(graph: Graph, task: str, concepts: Sequence[str]) -> list[str]:
    """``concepts`` in the ``graph_level`` policy's order: the task's ancestral graph
    by levels (:func:`~fedstruct.methods.fcm.evaluate.intervention_levels`), then the
    concepts outside it, each part in ``concepts``' order."""
    from fedstruct.methods.fcm.evaluate import intervention_levels  # it imports this

    inside = set(concepts)
    order: list[str] = []
    if task in graph.names:
        for level in intervention_levels(graph, task):
            order.extend(c for c in concepts if c in set(level) and c in inside)
    return order + [c for c in concepts if c not in set(order)]


def _probabilities(
    model: ConceptModel, x: torch.Tensor, truth: torch.Tensor, mask: torch.Tensor
) -> list[torch.Tensor]:
    return [torch.softmax(out, dim=-1) for out in model(x, truth, mask)]


def intervention_counts(
    model: ConceptModel,
    x: torch.Tensor,
    truth: torch.Tensor,
    candidates: Sequence[str],
    policy: str,
    order: Sequence[str] = (),
    seed: int | Sequence[int] | np.random.Generator = 0,
) -> CurveCounts:
    """The intervention curve of ``policy`` on the rows with a task label.

    Parameters
    ----------
    model
        The concept model (its task is the last node).
    x, truth
        Inputs and ``(n, len(spec.nodes))`` label codes (``-1``: unknown).
    candidates
        The concepts that may be intervened on (``K`` of them: the curve has
        ``K + 1`` points); a row intervenes only where its label is known.
    policy
        One of :data:`POLICIES`.
    order
        The ``graph_level`` order (:func:`level_order`); a candidate it lacks comes last.
    seed
        The ``random`` policy's seed (anything :func:`numpy.random.default_rng` takes).
    """
    spec = model.spec
    column = {n: i for i, n in enumerate(spec.nodes)}
    cand = [column[c] for c in candidates]
    known = truth[:, -1] >= 0
    x, truth = x[known], truth[known]
    n, k = len(x), len(cand)
    correct = np.zeros(k + 1, dtype=np.int64)
    orders = np.full((n, k), -1, dtype=np.int64)
    if n == 0:
        return CurveCounts(correct, 0, orders)
    y = truth[:, -1]
    mask = torch.zeros(truth.shape, dtype=torch.bool, device=truth.device)
    open_ = (truth[:, cand] >= 0).cpu().numpy()  # (n, K): may still be intervened on
    fixed = _fixed_scores(policy, candidates, order, seed, n)
    model.eval()
    with torch.no_grad():
        probs = _probabilities(model, x, truth, mask)
        correct[0] = int((probs[-1].argmax(1) == y).sum())
        for t in range(1, k + 1):
            if not open_.any():
                correct[t:] = correct[t - 1]
                break
            if fixed is not None:
                scores = fixed.copy()
            elif policy == "optimal_greedy":
                scores = _greedy_scores(model, x, truth, mask, cand, open_)
            else:
                scores = _uncertainty_scores(policy, [probs[c] for c in cand])
            scores[~open_] = -np.inf
            rows = np.flatnonzero(open_.any(axis=1))
            chosen = np.argmax(scores[rows], axis=1)
            open_[rows, chosen] = False
            orders[rows, t - 1] = chosen
            mask[torch.as_tensor(rows), torch.as_tensor([cand[c] for c in chosen])] = True
            probs = _probabilities(model, x, truth, mask)
            correct[t] = int((probs[-1].argmax(1) == y).sum())
    return CurveCounts(correct, n, orders)


def _fixed_scores(
    policy: str, candidates: Sequence[str], order: Sequence[str], seed, n: int
) -> NDArray[np.float64] | None:
    """The scores of a policy that does not look at the predictions (``graph_level``,
    ``random``), ``(n, K)``; ``None`` for the others."""
    k = len(candidates)
    if policy == "graph_level":
        rank = {c: i for i, c in enumerate(order)}
        position = [rank.get(c, len(order) + i) for i, c in enumerate(candidates)]
        return np.tile(-np.asarray(position, dtype=np.float64), (n, 1))
    if policy == "random":
        return np.random.default_rng(seed).random((n, k))
    if policy not in POLICIES:
        raise ValueError(f"unknown intervention policy {policy!r}; known: {POLICIES}")
    return None


def _uncertainty_scores(policy: str, probs: Sequence[torch.Tensor]) -> NDArray[np.float64]:
    """``uncertainty``: each concept's entropy over ``log k``; ``group_uncertainty``:
    minus the smallest ``|p_s - 0.5|`` over its states."""
    out = []
    for p in probs:
        q = p.double().cpu().numpy()
        if policy == "uncertainty":
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.where(q > 0, q * np.log(q), 0.0).sum(axis=1)
            out.append(h / np.log(q.shape[1]))
        else:
            out.append(-np.abs(q - 0.5).min(axis=1))
    return np.stack(out, axis=1)


def _greedy_scores(
    model: ConceptModel,
    x: torch.Tensor,
    truth: torch.Tensor,
    mask: torch.Tensor,
    cand: Sequence[int],
    open_: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """``optimal_greedy``: per row and candidate, the true task state's probability
    after also intervening on the candidate (``-inf`` where it is not open)."""
    y = truth[:, -1]
    scores = np.full(open_.shape, -np.inf)
    for i, c in enumerate(cand):
        if not open_[:, i].any():
            continue
        trial = mask.clone()
        trial[:, c] = True
        task = _probabilities(model, x, truth, trial)[-1]
        scores[:, i] = task.gather(1, y[:, None]).squeeze(1).double().cpu().numpy()
    return scores


def effect_sums(
    model: ConceptModel, x: torch.Tensor, concepts: Sequence[str]
) -> dict[str, NDArray[np.float64]]:
    """Per concept, ``(k_c, k_Y)``: the sums over the rows of the task distribution
    under ``do(C = s)`` for each state ``s`` (CaCE's terms; divided by the row count
    they are ``E[p(Y | do(C = s))]``)."""
    spec = model.spec
    column = {n: i for i, n in enumerate(spec.nodes)}
    n = len(x)
    out = {}
    model.eval()
    with torch.no_grad():
        for c in concepts:
            j = column[c]
            mask = torch.zeros((n, len(spec.nodes)), dtype=torch.bool, device=x.device)
            mask[:, j] = True
            rows = []
            for s in range(spec.cardinalities[c]):
                truth = torch.full(mask.shape, -1, dtype=torch.long, device=x.device)
                truth[:, j] = s
                task = _probabilities(model, x, truth, mask)[-1]
                rows.append(task.double().sum(0).cpu().numpy())
            out[c] = np.stack(rows)
    return out
