"""Plots of runs and recipes (matplotlib, written as PNG files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["plot_curves", "plot_history"]


def plot_history(
    history: Sequence[Mapping[str, float]], metrics: Sequence[str], path: Path, title: str
) -> Path | None:
    """One panel per metric against the round; metrics absent from the history are skipped.

    Returns
    -------
    Path or None
        The file written, or ``None`` if no metric had values.
    """
    present = [m for m in metrics if any(m in h for h in history)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], present, strict=True):
        points = [(h["round"], h[metric]) for h in history if metric in h]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3)
        ax.set_xlabel("round")
        ax.set_title(metric.replace("_", " "))
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_curves(
    curves: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> Path:
    """Several labelled ``(x, y)`` curves on one axis (e.g. accuracy per round per variant)."""
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for label, points in curves.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
