"""Concept-quality metrics of a concept model, on arrays (issue 54; docs/fcm.md).

Each function takes what a model predicted for some rows (its concept
representations, or its task probabilities under interventions) and those rows'
labels; the model-level helpers that produce them are in
:mod:`fedstruct.methods.fcm.interventions` and :func:`~fedstruct.methods.fcm.evaluate.
concept_quality`.

* **CAS**, the concept alignment score (Espinosa Zarlenga et al. 2022, the CEM
  paper; the ``cem`` repository's ``cem/metrics/cas.py``): for each concept, its
  representations are clustered by k-medoids for ``steps`` cluster counts from 2 to
  the number of rows; the homogeneity of the concept's labels within the clusters
  (Rosenberg & Hirschberg 2007) is integrated over the counts by the trapezoid rule
  and divided by the area of a homogeneity of 1; CAS is the mean over concepts.
* **OIS**, the oracle impurity score (Espinosa Zarlenga et al. 2023, "Towards robust
  metrics for concept representation evaluation", AAAI; ``cem/metrics/oracle.py``):
  ``||π - π*||_F / (m / 2)`` for ``m`` concepts, with ``π[i, j]`` the test AUC of a
  helper classifier predicting concept ``j``'s label from concept ``i``'s
  representation and ``π*`` the same from concept ``i``'s true label (one-hot; the
  oracle's diagonal is 1).
* **NIS**, the niche impurity score (same paper; ``cem/metrics/niching.py``): one
  classifier predicts every concept label from all representations; the niche of
  concept ``j`` at threshold ``β`` is the set of concepts whose representation
  correlates with ``j``'s label beyond ``β`` (``|corr|``); the impurity at ``β`` is
  the mean test AUC of predicting each concept with its niche zeroed out (from the
  representations outside its niche); NIS is the trapezoid area over
  ``β = 0, δ, ..., 1 - δ``.
* **CaCE**, the causal concept effect (Goyal et al. 2019; PyC's ``cace_score``):
  ``E[p(Y | do(C = 1))] - E[p(Y | do(C = 0))]`` per task state; here summarised as
  the total-variation distance between the two mean task distributions, the largest
  over pairs of the concept's states.
* **Intervention AUC** (PyC's ``intervention_score``): the mean of the task
  accuracy over the points of an intervention curve (0, 1, ..., ``K`` concepts
  intervened on).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import homogeneity_score, pairwise_distances, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier

__all__ = [
    "CAS_STEPS",
    "NIS_DELTA",
    "TEST_SIZE",
    "auc",
    "causal_effect",
    "concept_alignment_score",
    "indicator_targets",
    "intervention_auc",
    "k_medoids",
    "niche_helper",
    "niche_impurity_score",
    "oracle_impurity_score",
    "purity_helper",
    "purity_matrices",
]

#: Cluster counts of CAS (``np.linspace(2, n, CAS_STEPS)``).
CAS_STEPS = 5
#: Step of NIS's thresholds ``β``.
NIS_DELTA = 0.05
#: Share of the rows on which OIS's and NIS's helper classifiers are scored.
TEST_SIZE = 0.2

#: A factory of helper classifiers: ``(seed) -> estimator`` with ``fit`` and
#: ``predict_proba`` (scikit-learn's interface).
Helper = Callable[[int], Any]


def k_medoids(points: NDArray[np.floating], k: int, max_iter: int = 300) -> NDArray[np.intp]:
    """Cluster labels of ``points`` (rows) by k-medoids with Euclidean distances.

    The "alternate" algorithm (Park & Jun 2009): start from the ``k`` points with the
    smallest total distance to all others; then repeat until no medoid moves (at most
    ``max_iter`` times): assign every point to its nearest medoid (the first on a
    tie), and in each cluster move the medoid to the member with the smallest total
    distance to the other members when that is strictly smaller than the current
    medoid's.
    """
    distances = pairwise_distances(np.asarray(points, dtype=np.float64))
    n = len(distances)
    medoids = np.argpartition(distances.sum(axis=1), k - 1)[:k]
    index = np.arange(n)
    for _ in range(max_iter):
        before = medoids.copy()
        labels = np.argmin(distances[medoids, :], axis=0)
        # each point's total distance from the other members of its cluster, summed
        # over the rows (distances *to* it: scikit-learn's distances are symmetric only
        # up to rounding, and on near-ties this side decides); the zeros added for the
        # other clusters' rows leave every sum exactly as over the members alone
        costs = np.where(labels[:, None] == labels[None, :], distances, 0.0).sum(axis=0)
        # in each cluster the member of smallest cost, the first of equal ones
        order = np.lexsort((index, costs, labels))
        first = np.ones(n, dtype=bool)
        first[1:] = labels[order][1:] != labels[order][:-1]
        best = order[first]
        clusters = labels[best]
        # the medoid's own cost; a medoid that an equal, earlier medoid took into its
        # cluster (exact duplicates) is compared as the reference compares it: by the
        # cost of its cluster's first member
        head = np.full(k, n)
        np.minimum.at(head, labels, index)
        own = labels[medoids[clusters]] == clusters
        current = np.where(own, costs[medoids[clusters]], costs[head[clusters]])
        moves = costs[best] < current
        medoids[clusters[moves]] = best[moves]
        if np.array_equal(before, medoids):
            break
    return np.argmin(distances[medoids, :], axis=0)


def concept_alignment_score(
    representations: Sequence[NDArray[np.floating]],
    labels: NDArray[np.integer],
    steps: int = CAS_STEPS,
) -> float:
    """CAS (module docstring) of ``m`` concepts on ``n`` rows.

    Parameters
    ----------
    representations
        Concept ``j``'s representation of each row, ``(n, d_j)``.
    labels
        ``(n, m)`` label codes.
    steps
        How many cluster counts, spread evenly over ``2..n``.
    """
    n = len(labels)
    counts = np.linspace(2, n, steps).astype(int)
    width = len(counts) - 1
    scores = []
    for j, rep in enumerate(representations):
        curve = [homogeneity_score(labels[:, j], k_medoids(rep, int(k))) for k in counts]
        scores.append(float(np.trapezoid(curve)) / width)
    return float(np.mean(scores))


def auc(labels: NDArray[np.integer], probabilities: NDArray[np.floating], k: int) -> float:
    """The ROC AUC of ``probabilities`` (``(n, k)``) for ``labels`` (codes ``0..k-1``):
    of state 1 for a binary variable, else the mean one-vs-rest AUC over the states
    that occur (NaN when only one state occurs: no ranking to score)."""
    present = np.unique(labels)
    if len(present) < 2:
        return float("nan")
    if k == 2:
        return float(roc_auc_score(labels, probabilities[:, 1]))
    onehot = np.eye(k)[labels][:, present]
    return float(roc_auc_score(onehot, probabilities[:, present], average="macro"))


def purity_helper(seed: int) -> GaussianNB:
    """OIS's helper classifier: Gaussian naive Bayes (closed form, so that the
    ``m²`` fits of a purity matrix stay cheap; ``cem``'s default is a Keras MLP with
    32 hidden units, trained for 25 epochs). ``seed`` is unused: it is exact."""
    return GaussianNB()


def niche_helper(seed: int) -> MLPClassifier:
    """NIS's helper classifier: the ``cem`` default, an MLP with two hidden layers of
    20 ReLU units (Adam, at most 1,000 epochs)."""
    return MLPClassifier((20, 20), random_state=seed, max_iter=1000)


def _split(n: int, seed: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    train, test = train_test_split(list(range(n)), test_size=TEST_SIZE, random_state=seed)
    return np.asarray(train), np.asarray(test)


def _proba(
    helper: Any, inputs: NDArray, labels: NDArray, train: NDArray, test: NDArray, k: int
) -> NDArray[np.floating]:
    """The helper's state probabilities for the test rows, ``(n_test, k)`` (a state
    absent from the training rows gets 0; a row the helper cannot score, e.g. a
    constant representation with no variance, gets a uniform one: it informs nothing)."""
    helper.fit(inputs[train], labels[train])
    out = np.zeros((len(test), k))
    classes = np.asarray(helper.classes_, dtype=int)
    if len(classes) == 1:
        out[:, classes[0]] = 1.0
    else:
        with np.errstate(all="ignore"):
            out[:, classes] = helper.predict_proba(inputs[test])
    out[~np.isfinite(out).all(axis=1)] = 1.0 / k
    return out


def purity_matrices(
    representations: Sequence[NDArray[np.floating]],
    labels: NDArray[np.integer],
    cardinalities: Sequence[int],
    seed: int,
    helper: Helper = purity_helper,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """OIS's purity matrix ``π`` and oracle matrix ``π*`` (module docstring), both
    ``(m, m)``, scored on one split of the rows (``TEST_SIZE`` held out, drawn from
    ``seed``); the oracle's diagonal is 1. An entry whose target has one state in the
    test rows is NaN."""
    m = labels.shape[1]
    train, test = _split(len(labels), seed)
    oracle_inputs = [np.eye(k)[labels[:, j]] for j, k in enumerate(cardinalities)]
    purity = np.zeros((m, m))
    oracle = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            k = int(cardinalities[j])
            target = labels[:, j]
            p = _proba(helper(seed), representations[i], target, train, test, k)
            purity[i, j] = auc(target[test], p, k)
            if i == j:
                oracle[i, j] = 1.0
                continue
            q = _proba(helper(seed), oracle_inputs[i], target, train, test, k)
            oracle[i, j] = auc(target[test], q, k)
    return purity, oracle


def oracle_impurity_score(purity: NDArray[np.floating], oracle: NDArray[np.floating]) -> float:
    """OIS from the two matrices: ``||π - π*||_F / (m / 2)``, over the concepts
    whose columns are finite in both (a concept with one state in the test rows has
    no AUC as a target, and is left out, its row with it)."""
    finite = np.isfinite(purity) & np.isfinite(oracle)
    keep = np.flatnonzero(finite.all(axis=0))
    while len(keep) and not finite[np.ix_(keep, keep)].all():
        keep = keep[finite[np.ix_(keep, keep)].all(axis=0)]
    if not len(keep):
        return float("nan")
    sub = np.ix_(keep, keep)
    return float(np.linalg.norm(np.abs(oracle[sub] - purity[sub]), ord="fro") / (len(keep) / 2))


def indicator_targets(
    labels: NDArray[np.integer], cardinalities: Sequence[int]
) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """NIS's binary targets: a binary concept's label, or one indicator per state of a
    concept with more states; and the concept each target belongs to."""
    columns, owners = [], []
    for j, k in enumerate(cardinalities):
        if k == 2:
            columns.append(labels[:, j : j + 1])
        else:
            columns.append(np.eye(k, dtype=np.int64)[labels[:, j]])
        owners.extend([j] * columns[-1].shape[1])
    return np.hstack(columns).astype(np.int64), np.asarray(owners)


def niche_impurity_score(
    representations: Sequence[NDArray[np.floating]],
    labels: NDArray[np.integer],
    cardinalities: Sequence[int],
    seed: int,
    delta: float = NIS_DELTA,
    helper: Helper = niche_helper,
) -> float:
    """NIS (module docstring).

    Parameters
    ----------
    representations
        Concept ``j``'s representation of each row, ``(n, d_j)``; it is in a target's
        niche when one of its columns correlates with the target beyond ``β``.
    labels
        ``(n, m)`` label codes; a concept with more than two states is scored as its
        states' indicators (:func:`indicator_targets`).
    cardinalities
        States per concept.
    seed
        Seed of the split (``TEST_SIZE`` held out) and of the helper.
    delta
        Step of the thresholds ``β``.
    """
    n = len(labels)
    targets, _ = indicator_targets(labels, cardinalities)
    blocks = [np.asarray(r, dtype=np.float64).reshape(n, -1) for r in representations]
    owner = np.concatenate([np.full(b.shape[1], j) for j, b in enumerate(blocks)])
    inputs = np.hstack(blocks)
    width, m = inputs.shape[1], targets.shape[1]
    train, test = _split(n, seed)
    classifier = helper(seed)
    with warnings.catch_warnings():  # cem's 1,000 epochs: the MLP may stop before converging
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit(inputs[train], targets[train] if m > 1 else targets[train, 0])
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = np.abs(np.corrcoef(np.hstack([inputs[train], targets[train]]).T))
    correlation = correlation[:width, width:]
    area, previous = 0.0, None
    for beta in np.arange(0.0, 1.0, delta):
        scores = []
        for t in range(m):
            truth = targets[test, t]
            if len(np.unique(truth)) < 2:
                continue
            with np.errstate(invalid="ignore"):
                niche = [c for c in range(len(blocks)) if np.any(correlation[owner == c, t] > beta)]
            outside = inputs[test].copy()
            outside[:, np.isin(owner, niche)] = 0.0
            p = classifier.predict_proba(outside)
            scores.append(roc_auc_score(truth, p[:, t] if m > 1 else p[:, 1]))
        value = float(np.mean(scores)) if scores else 0.0
        if previous is not None:
            area += (previous + value) * (delta / 2)
        previous = value
    return area


def causal_effect(means: Mapping[int, NDArray[np.floating]]) -> float:
    """A concept's CaCE summary: the largest total-variation distance
    ``½ Σ_y |E[p(y | do(C = s))] - E[p(y | do(C = s'))]|`` over pairs of its states.

    Parameters
    ----------
    means
        State ``s`` -> the mean task distribution under ``do(C = s)``.
    """
    states = sorted(means)
    return max(
        (
            0.5 * float(np.abs(np.asarray(means[a]) - np.asarray(means[b])).sum())
            for i, a in enumerate(states)
            for b in states[i + 1 :]
        ),
        default=0.0,
    )


def intervention_auc(accuracies: Sequence[float]) -> float:
    """The mean of an intervention curve's task accuracies (PyC's normalised area:
    each point weighs the same)."""
    values = [a for a in accuracies if np.isfinite(a)]
    return float(np.mean(values)) if values else float("nan")
