"""Run several variants of a method over seeds, and tabulate and plot them.

Recipes and the demo are built from this: each variant is a set of settings, each
(variant, seed) pair a ``fedstruct run`` into its own folder, and the summary is a
table of means and standard deviations plus a curve per variant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from fedstruct.experiments.plots import plot_curves
from fedstruct.experiments.runs import RunOutcome, execute

__all__ = ["Comparison", "compare_variants", "sweep_label", "write_results"]


@dataclass
class Comparison:
    """Per-variant results: the runs' metrics and histories, by seed."""

    method: str
    runs: dict[str, list[RunOutcome]]

    def summary(self, metrics: Sequence[str]) -> list[dict[str, Any]]:
        """One row per variant: mean and standard deviation of each metric over seeds."""
        rows = []
        for variant, outcomes in self.runs.items():
            row: dict[str, Any] = {"variant": variant, "seeds": len(outcomes)}
            for m in metrics:
                values = [o.metrics[m] for o in outcomes if m in o.metrics]
                if values:
                    row[m] = float(np.mean(values))
                    row[m + "_std"] = float(np.std(values))
            rows.append(row)
        return rows

    def rows(self, metrics: Sequence[str]) -> list[dict[str, Any]]:
        """:meth:`summary` with each row's ``name`` set to its variant (for tables)."""
        return [{"name": r["variant"], **r} for r in self.summary(metrics)]

    def table(self, metrics: Sequence[str], title: str) -> Table:
        """A rich table of :meth:`summary` (mean ± std)."""
        table = Table(title=title)
        table.add_column("variant")
        for m in metrics:
            table.add_column(m.replace("_", " "), justify="right")
        for row in self.summary(metrics):
            cells = []
            for m in metrics:
                if m not in row:
                    cells.append("-")
                elif row["seeds"] > 1:
                    cells.append(f"{row[m]:.3f} ± {row[m + '_std']:.3f}")
                else:
                    cells.append(f"{row[m]:.4g}")
            table.add_row(row["variant"], *cells)
        return table

    def curves(self, metric: str) -> dict[str, list[tuple[float, float]]]:
        """Per variant, the seed-mean of ``metric`` at each round."""
        out = {}
        for variant, outcomes in self.runs.items():
            by_round: dict[float, list[float]] = {}
            for o in outcomes:
                for h in o.history:
                    if metric in h:
                        by_round.setdefault(h["round"], []).append(h[metric])
            out[variant] = [(r, float(np.mean(v))) for r, v in sorted(by_round.items())]
        return out

    def mean(self, variant: str, metric: str) -> float:
        """Seed-mean of ``metric`` for ``variant``."""
        return float(np.mean([o.metrics[metric] for o in self.runs[variant]]))

    def sweep_curves(
        self, labels: Sequence[str], axis: Sequence[float], metric: str
    ) -> dict[str, list[tuple[float, float]]]:
        """Per label, the seed-mean of ``metric`` along a swept setting.

        The variants must be named :func:`sweep_label` ``(label, value)``.
        """
        return {
            label: [(float(x), self.mean(sweep_label(label, x), metric)) for x in axis]
            for label in labels
        }

    def save(self, out: Path, metrics: Sequence[str], curve_metric: str, title: str) -> Path:
        """Write ``results.json`` and a curve plot into ``out``; return the plot's path."""
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(self.summary(metrics), indent=2) + "\n")
        return plot_curves(
            self.curves(curve_metric),
            out / f"{curve_metric}.png",
            title=title,
            xlabel="round",
            ylabel=curve_metric.replace("_", " "),
        )


def write_results(
    out: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str
) -> Table:
    """Write ``results.json`` and ``results.md`` (mean ± std per column) for ``rows``.

    Each row has a ``name`` and, per column, a value and optionally ``<column>_std``.
    Returns the same table for the terminal.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(list(rows), indent=2) + "\n")
    keys = [c for c in columns if any(c in r for r in rows)]
    header = ["", *keys]
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table = Table(title=title)
    for h in header:
        table.add_column(h.replace("_", " "), justify="right" if h else "left")
    for row in rows:
        cells = [_cell(row, k) for k in keys]
        lines.append("| " + " | ".join([str(row["name"]), *cells]) + " |")
        table.add_row(str(row["name"]), *cells)
    (out / "results.md").write_text("\n".join(lines) + "\n")
    return table


def _cell(row: Mapping[str, Any], key: str) -> str:
    if key not in row:
        return "-"
    std = row.get(key + "_std")
    return f"{row[key]:.3f} ± {std:.3f}" if std is not None else f"{row[key]:.3f}"


def compare_variants(
    method: str,
    variants: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    out: Path,
    *,
    common: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> Comparison:
    """Run ``method`` for every variant and seed into ``out/<variant>/seed-<s>``.

    Parameters
    ----------
    method
        A runnable method name.
    variants
        Variant label -> settings that differ from ``common``.
    seeds
        Seeds to repeat each variant with.
    out
        Results folder.
    common
        Settings shared by every variant.
    progress
        Show progress bars.
    """
    runs: dict[str, list[RunOutcome]] = {}
    for label, settings in variants.items():
        folder = out / _slug(label)
        runs[label] = [
            execute(
                method,
                [dict(common or {}), dict(settings), {"seed": seed}],
                folder / f"seed-{seed}",
                progress=progress,
            )
            for seed in seeds
        ]
    return Comparison(method, runs)


def sweep_label(label: str, value: object) -> str:
    """The variant name of ``label`` at one value of a swept setting."""
    return f"{label} @ {value}"


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-")
