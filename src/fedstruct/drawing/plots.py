"""Plots of runs and recipes (matplotlib, written as PNG files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from fedstruct.graphs import Graph

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

__all__ = ["load_pyplot", "plot_bars", "plot_curves", "plot_graph_comparison", "plot_history"]


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the file-only Agg backend, imported at the first plot (a
    process that draws nothing, like a deployment's ClientApp, never loads it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def load_pyplot() -> None:
    """Import pyplot now, on the Agg backend (a warm ServerApp does, before its run)."""
    _pyplot()


def plot_history(
    history: Sequence[Mapping[str, float]],
    metrics: Sequence[str | tuple[str, ...]],
    path: Path,
    title: str,
) -> Path | None:
    """One panel per metric against the round; metrics absent from the history are
    skipped, and so is a metric of a longer history reported in one round only (one
    point is no curve: FedAvg's final federated evaluation on the training rows, which
    metrics.json holds). An entry that is a tuple of metrics draws them in one panel
    with a legend (a training loss beside a held-out one). Rounds, and a panel whose
    values are all whole numbers (a count), get integer ticks.

    Returns
    -------
    Path or None
        The file written, or ``None`` if no metric had values.
    """
    least = max(1, min(2, len(history)))  # the points a metric needs to be drawn

    def drawn(metric: str) -> bool:
        return sum(metric in h for h in history) >= least

    panels = [(m,) if isinstance(m, str) else tuple(m) for m in metrics]
    panels = [p for p in ([m for m in p if drawn(m)] for p in panels) if p]
    if not panels:
        return None
    fig, axes = _pyplot().subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        values: list[float] = []
        for metric in panel:
            points = [(h["round"], float(h[metric])) for h in history if metric in h]
            label = metric.replace("_", " ")
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=label)
            values += [p[1] for p in points]
        ax.set_xlabel("round")
        ax.xaxis.set_major_locator(_integer_ticks())
        if all(v.is_integer() for v in values):  # a count: whole-number ticks
            ax.yaxis.set_major_locator(_integer_ticks())
            if max(values) - min(values) < 2:  # room for more than one whole number
                ax.set_ylim(min(values) - 1, max(values) + 1)
        if len(panel) > 1:
            ax.set_title(_common_title(panel))
            ax.legend(fontsize="small")
        else:
            ax.set_title(panel[0].replace("_", " "))
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def _common_title(metrics: Sequence[str]) -> str:
    """The word the metrics of one panel share (``train_loss``, ``test_loss``: ``loss``)."""
    words = [set(m.split("_")) for m in metrics]
    shared = [w for w in metrics[0].split("_") if all(w in ws for ws in words)]
    return " ".join(shared) or " / ".join(m.replace("_", " ") for m in metrics)


def _save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG (the whole figure, legends outside the axes included)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return path


def _integer_ticks() -> MaxNLocator:
    """A tick locator that puts ticks on whole numbers only."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _legend_outside(ax: Axes) -> None:
    """The legend to the right of the axes, so that it covers no line or bar."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _whole_numbers(values: Sequence[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def plot_curves(
    curves: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> Path:
    """Several labelled ``(x, y)`` curves on one axis (e.g. accuracy per round per variant).

    When every x is a whole number (rounds, counts) the x ticks are whole numbers too.
    The legend sits to the right of the axes.
    """
    fig, ax = _pyplot().subplots(figsize=(6.0, 4.0))
    for label, points in curves.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=label)
    if _whole_numbers([p[0] for points in curves.values() for p in points]):
        ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    return _save(fig, path)


def plot_graph_comparison(truth: Graph, predicted: Graph, path: Path, *, title: str) -> Path:
    """Adjacency matrices side by side: the truth, and the prediction coloured by outcome.

    In the right panel a pair is green when both graphs have it (true positive), red
    when only the prediction has it (false positive) and grey when only the truth has
    it (missed). Both graphs must have the same variables (the prediction's order is
    used).
    """
    names = predicted.names
    t = truth.restrict(names).adjacency()
    p = predicted.adjacency()
    outcome = np.zeros((*t.shape, 3))
    outcome[:] = 1.0
    outcome[t & p] = (0.20, 0.63, 0.17)
    outcome[~t & p] = (0.84, 0.15, 0.16)
    outcome[t & ~p] = (0.65, 0.65, 0.65)
    fig, axes = _pyplot().subplots(1, 2, figsize=(11, 5.2))
    axes[0].imshow(np.where(t, 0.25, 1.0), cmap="gray", vmin=0, vmax=1)
    axes[0].set_title(f"truth ({truth.n_edges} edges)")
    axes[1].imshow(outcome)
    tp, fp, fn = int((t & p).sum()) // 2, int((~t & p).sum()) // 2, int((t & ~p).sum()) // 2
    axes[1].set_title(f"learned: {tp} correct, {fp} extra, {fn} missed")
    for ax in axes:
        ticks = range(len(names))
        fontsize = 7 if len(names) <= 40 else 4
        ax.set_xticks(ticks, names, rotation=90, fontsize=fontsize)
        ax.set_yticks(ticks, names, fontsize=fontsize)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def plot_bars(
    groups: Mapping[str, Mapping[str, float]], path: Path, *, title: str, ylabel: str
) -> Path:
    """Grouped bars: one group per key of ``groups``, one bar per inner key.

    The legend sits to the right of the axes.
    """
    labels = list(groups)
    series = list(dict.fromkeys(k for g in groups.values() for k in g))
    width = 0.8 / max(1, len(series))
    fig, ax = _pyplot().subplots(figsize=(max(6.0, 1.2 * len(labels) * len(series) / 2), 4.0))
    for k, name in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, [groups[g].get(name, np.nan) for g in labels], width, label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    fig.tight_layout()
    return _save(fig, path)
