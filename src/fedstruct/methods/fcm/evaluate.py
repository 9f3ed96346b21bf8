"""Test metrics of a concept model (§5.1-5.2, App. E.1).

* **Task and concept accuracy.** A variable a model does not predict counts as a
  random guess, ``1 / k`` (§5.1: "variables not predicted by a model are treated as
  random guesses"); concept accuracy averages over every concept of the network.
* **Concept coverage**: the share of task-relevant concepts (those with a directed
  path to the task in the true DAG) the model predicts.
* **Interventions by level** (§5.2): the task's ancestral sub-graph is layered by
  longest path from its roots; at level ``l`` the labels of every predicted concept
  in the first ``l`` layers replace the model's predictions. Label accuracy is the
  mean accuracy over the remaining predicted variables of the sub-graph (concepts and
  task); task accuracy is reported beside it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd
import torch

from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm import concept_metrics as cm
from fedstruct.methods.fcm.interventions import effect_sums, intervention_counts, level_order
from fedstruct.methods.fcm.model import ConceptModel
from fedstruct.methods.fcm.train import label_matrix

__all__ = [
    "REPRESENTATION_METRICS",
    "SUMMARY_METRICS",
    "accuracy_metrics",
    "concept_quality",
    "concept_representations",
    "intervention_curve",
    "intervention_levels",
    "node_probabilities",
    "predict_states",
]


def node_probabilities(
    model: ConceptModel,
    x: np.ndarray,
    labels: pd.DataFrame | None = None,
    intervened: Collection[str] = (),
) -> dict[str, np.ndarray]:
    """Each model node's state probabilities (softmax of its logits), intervening on
    ``intervened`` (their labels replace the predictions the other modules read)."""
    spec = model.spec
    xt = torch.from_numpy(np.array(x, dtype=np.float32))
    truth = mask = None
    if intervened and labels is not None:
        truth = label_matrix(labels, spec)
        mask = torch.zeros(truth.shape, dtype=torch.bool)
        for j, n in enumerate(spec.nodes):
            mask[:, j] = n in intervened
    model.eval()
    with torch.no_grad():
        logits = model(xt, truth, mask)
    return {
        n: torch.softmax(out, dim=-1).double().numpy()
        for n, out in zip(spec.nodes, logits, strict=True)
    }


def predict_states(
    model: ConceptModel,
    x: np.ndarray,
    labels: pd.DataFrame | None = None,
    intervened: Collection[str] = (),
) -> dict[str, np.ndarray]:
    """Each model node's predicted state (argmax), intervening on ``intervened``."""
    probabilities = node_probabilities(model, x, labels, intervened)
    return {n: p.argmax(axis=-1) for n, p in probabilities.items()}


def _accuracy(states: Mapping[str, np.ndarray], labels: pd.DataFrame, node: str) -> float:
    return float(np.mean(states[node] == labels[node].to_numpy()))


def accuracy_metrics(
    model: ConceptModel,
    x: np.ndarray,
    labels: pd.DataFrame,
    truth: Graph | None,
    cardinalities: Mapping[str, int],
    predicted: Collection[str] | None = None,
) -> dict[str, float]:
    """Task accuracy, concept accuracy and (with the true graph) concept coverage.

    Parameters
    ----------
    model
        The trained model.
    x, labels
        Test inputs and their labels: the task's, and every concept of ``truth`` (with
        no true graph, the concepts that ``labels`` holds).
    truth
        The true DAG (concepts and task), or ``None`` when it is not known (a user's
        own data): concept accuracy then averages over the concepts ``labels``
        holds, and there is no coverage.
    cardinalities
        States per variable (for the random-guess accuracy ``1/k``).
    predicted
        The nodes the model predicts (default: all its nodes). A localized model
        predicts only what its client supervised.
    """
    spec = model.spec
    own = set(spec.nodes if predicted is None else predicted) & set(spec.nodes)
    states = predict_states(model, x)
    task = spec.task
    names = truth.names if truth is not None else [c for c in labels.columns if c in cardinalities]
    concepts = [v for v in names if v != task]

    def score(node: str) -> float:
        return _accuracy(states, labels, node) if node in own else 1.0 / cardinalities[node]

    metrics = {
        "task_accuracy": score(task),
        "concept_accuracy": float(np.mean([score(c) for c in concepts])) if concepts else 0.0,
    }
    if truth is not None:
        relevant = [c for c in truth.ancestors(task) if c != task]
        metrics["concept_coverage"] = (
            float(np.mean([c in own for c in relevant])) if relevant else 1.0
        )
    return metrics


def intervention_levels(truth: Graph, task: str) -> list[list[str]]:
    """Layers of the task's ancestral sub-graph by longest path from its roots,
    concepts only (the task is never intervened on)."""
    ancestors = [v for v in truth.topological_order() if v in set(truth.ancestors(task))]
    depth: dict[str, int] = {}
    for v in ancestors:
        depth[v] = 1 + max((depth[p] for p in truth.parents(v) if p in depth), default=-1)
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for v in ancestors:
        if v != task:
            layers[depth[v]].append(v)
    return [layer for layer in layers if layer]


def intervention_curve(
    model: ConceptModel,
    x: np.ndarray,
    labels: pd.DataFrame,
    truth: Graph,
    predicted: Collection[str] | None = None,
) -> list[dict[str, float]]:
    """Label and task accuracy after intervening on the first ``l`` levels (§5.2).

    Returns one record per level ``l = 0..L`` with ``level``, ``intervened`` (how many
    concepts received their label), ``label_accuracy`` and ``task_accuracy``
    (``nan`` when the model does not predict the task).
    """
    spec = model.spec
    own = set(spec.nodes if predicted is None else predicted) & set(spec.nodes)
    task = spec.task
    levels = intervention_levels(truth, task)
    ancestral = truth.ancestors(task)
    scope = [v for v in truth.topological_order() if v in ancestral]
    out = []
    done: list[str] = []
    for level in range(len(levels) + 1):
        if level:
            done.extend(v for v in levels[level - 1] if v in own)
        states = predict_states(model, x, labels, done)
        remaining = [v for v in scope if v in own and v not in done]
        out.append(
            {
                "level": level,
                "intervened": len(done),
                "label_accuracy": (
                    float(np.mean([_accuracy(states, labels, v) for v in remaining]))
                    if remaining
                    else float("nan")
                ),
                "task_accuracy": _accuracy(states, labels, task) if task in own else float("nan"),
            }
        )
    return out


#: The metrics of :func:`concept_quality` that read the concepts' representations of
#: rows together (clustering, helper classifiers): never a sum over rows.
REPRESENTATION_METRICS = ("cas", "ois", "nis")
#: The concept metrics ``fedstruct show`` lists for a run (the final model's; on a
#: user's files, the kept round's federated ones).
SUMMARY_METRICS = (
    *REPRESENTATION_METRICS,
    "cace_mean",
    "intervention_auc",
    "val_cace_mean",
    "val_intervention_auc",
)


def concept_representations(model: ConceptModel, x: np.ndarray) -> dict[str, np.ndarray]:
    """Each node's representation of the rows ``x`` (what its readers read:
    :meth:`~fedstruct.methods.fcm.model.ConceptModel.representations`), float64."""
    model.eval()
    with torch.no_grad():
        reads = model.representations(torch.from_numpy(np.array(x, dtype=np.float32)))
    return {n: r.double().numpy() for n, r in reads.items()}


def concept_quality(
    model: ConceptModel,
    x: np.ndarray,
    labels: pd.DataFrame,
    *,
    policy: str,
    seed: int,
    graph: Graph | None = None,
    predicted: Collection[str] | None = None,
    rows: int = 500,
    which: Collection[str] = ("cas", "ois", "nis", "cace", "interventions"),
) -> dict[str, float]:
    """CAS, OIS, NIS, CaCE and the intervention curve of ``policy`` on labelled rows.

    Over the concepts the model predicts (``predicted``, default all) that ``labels``
    holds. CAS, OIS and NIS use the first ``rows`` rows of a permutation drawn from
    ``seed`` (they cluster and fit helper classifiers: quadratic in the rows); CaCE and
    the curve use every row. The opaque model's task reads no concept, so it has no
    CaCE and no curve: only CAS, OIS and NIS of its concept side outputs.

    Returns
    -------
    dict
        ``cas``, ``ois``, ``nis``; ``cace_mean`` and ``cace_<concept>``
        (:func:`~fedstruct.methods.fcm.concept_metrics.causal_effect`);
        ``intervention_auc`` and ``intervention_task_accuracy_<t>`` for ``t``
        concepts intervened on (the ``graph_level`` order follows ``graph``'s
        levels, the true graph where it is known).
    """
    spec = model.spec
    own = set(spec.nodes if predicted is None else predicted)
    concepts = [c for c in spec.concepts if c in own and c in labels.columns]
    out: dict[str, float] = {}
    if not concepts:
        return out
    codes = labels[concepts].to_numpy(dtype=np.int64)
    sample = np.random.default_rng(seed).permutation(len(labels))[:rows]
    reps = concept_representations(model, np.asarray(x)[sample])
    chosen = [reps[c] for c in concepts]
    states = [spec.cardinalities[c] for c in concepts]
    if "cas" in which:
        out["cas"] = cm.concept_alignment_score(chosen, codes[sample])
    if "ois" in which:
        purity, oracle = cm.purity_matrices(chosen, codes[sample], states, seed)
        out["ois"] = cm.oracle_impurity_score(purity, oracle)
    if "nis" in which:
        out["nis"] = cm.niche_impurity_score(chosen, codes[sample], states, seed)
    if spec.architecture == "opaque":
        return {k: v for k, v in out.items() if np.isfinite(v)}
    xt = torch.from_numpy(np.array(x, dtype=np.float32))
    if "cace" in which:
        sums = effect_sums(model, xt, concepts)
        effects = {c: cm.causal_effect(dict(enumerate(s / len(x)))) for c, s in sums.items()}
        out["cace_mean"] = float(np.mean(list(effects.values())))
        out.update({f"cace_{c}": v for c, v in effects.items()})
    if "interventions" in which and spec.task in own and spec.task in labels.columns:
        order = level_order(graph, spec.task, concepts) if graph is not None else concepts
        truth = label_matrix(labels, spec)
        curve = intervention_counts(model, xt, truth, concepts, policy, order, seed)
        accuracies = curve.accuracies
        out["intervention_auc"] = cm.intervention_auc(accuracies)
        out.update({f"intervention_task_accuracy_{t}": a for t, a in enumerate(accuracies)})
    return {k: v for k, v in out.items() if np.isfinite(v)}
