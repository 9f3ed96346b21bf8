"""Run several variants of a method over seeds, and tabulate and plot them.

Recipes and the demo are built from this: each variant is a set of settings, each
(variant, seed) pair a ``fedstruct run`` into its own folder, and the summary is a
table of means and standard deviations plus a curve per variant.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from fedstruct.data.checks import integer_at_least
from fedstruct.drawing.plots import plot_curves
from fedstruct.fl.progress import show_progress
from fedstruct.fl.threads import THREADS_ENV, usable_cores
from fedstruct.runs.contract import RunOutcome, execute

__all__ = [
    "Comparison",
    "compare_variants",
    "count_done",
    "execute_all",
    "seed_count",
    "sweep_label",
    "variant_folder",
    "write_results",
]


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


def seed_count(seeds: Sized) -> str:
    """``"1 seed"`` or ``"N seeds"``: how many seeds (or runs, one per seed) a recipe's
    table reports."""
    n = len(seeds)
    return f"{n} seed{'s' * (n != 1)}"


def write_results(
    out: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str
) -> Table:
    """Write ``results.json`` and ``results.md`` (mean ± std per column) for ``rows``.

    Each row has a ``name`` and, per column, a value and optionally ``<column>_std``.
    A name of several parts joined by ``" | "`` (``"asia | c2bm | fcm"``) takes one
    label column per part in ``results.md``. Returns the same table for the terminal.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(list(rows), indent=2) + "\n")
    keys = [c for c in columns if any(c in r for r in rows)]
    labels = [str(row["name"]).split(" | ") for row in rows]
    width = max((len(parts) for parts in labels), default=1)
    header = [""] * width + keys
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table = Table(title=title)
    for h in ["", *keys]:
        table.add_column(h.replace("_", " "), justify="right" if h else "left")
    for row, parts in zip(rows, labels, strict=True):
        cells = [_cell(row, k) for k in keys]
        padded = [*parts, *[""] * (width - len(parts))]
        lines.append("| " + " | ".join([*padded, *cells]) + " |")
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
    jobs: int = 1,
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
        Show progress: each run's rounds (one run at a time), or the runs done.
    jobs
        Runs at a time (:func:`execute_all`).
    """
    runs = [
        (label, [dict(common or {}), dict(settings), {"seed": seed}],
         variant_folder(out, label, seed))
        for label, settings in variants.items()
        for seed in seeds
    ]  # fmt: skip
    outcomes = execute_all(method, [(layers, folder) for _, layers, folder in runs],
                           jobs=jobs, progress=progress)  # fmt: skip
    by_variant: dict[str, list[RunOutcome]] = {label: [] for label in variants}
    for (label, _, _), outcome in zip(runs, outcomes, strict=True):
        by_variant[label].append(outcome)
    return Comparison(method, by_variant)


def available_cpus() -> int:
    """CPUs this process may run on (the default number of jobs of a recipe that
    runs several at a time)."""
    return usable_cores()


def execute_all(
    method: str,
    runs: Sequence[tuple[Sequence[Mapping[str, Any]], Path]],
    *,
    jobs: int = 1,
    progress: bool = True,
) -> list[RunOutcome]:
    """:func:`~fedstruct.runs.contract.execute` every ``(layers, folder)`` run, in order.

    A folder that already holds the same run is picked up where it stopped (``reuse``:
    a finished run is read back, an interrupted one resumes from its checkpoint), so a
    long recipe run again with the same ``--out`` goes on from its last saved round.

    Parameters
    ----------
    method
        A runnable method name.
    runs
        Each run's settings layers and results folder.
    jobs
        Runs at a time, each in its own process on one CPU thread (torch's thread
        pool gains little on small models: two one-thread F-CMs runs side by side
        took as long as one two-thread run, docs/cli.md). Their outcomes
        carry no fitted model (its files are in the run's folder).
    progress
        Show progress: each run's rounds (one run at a time), or the runs done.

    Raises
    ------
    ConfigError
        If ``jobs`` is not a positive integer.
    """
    jobs = integer_at_least(jobs, "jobs")
    if jobs == 1:
        return [
            execute(method, layers, folder, progress=progress, reuse=True)
            for layers, folder in runs
        ]
    with (
        count_done(f"{method} runs, {jobs} at a time", len(runs), enabled=progress) as done,
        ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        started = [pool.submit(_run_alone, method, layers, folder) for layers, folder in runs]
        for _ in as_completed(started):
            done()
        return [run.result() for run in started]


@contextmanager
def count_done(label: str, total: int, *, enabled: bool = True) -> Iterator[Callable[[], None]]:
    """A progress bar of ``total`` pieces of work (on stderr); yields the function to
    call when one is done. Recipes whose work is not a federated run's rounds (runs in
    worker processes, discoveries, the robustness harness's fits) show their progress
    with it (plain lines when stderr is not a terminal:
    :func:`~fedstruct.fl.progress.show_progress`)."""
    with show_progress(label, total, enabled=enabled) as bar:
        yield bar.advance


def _run_alone(method: str, layers: Sequence[Mapping[str, Any]], folder: Path) -> RunOutcome:
    """One run of :func:`execute_all` in a worker process, on one CPU thread (torch's
    and every learner's: ``FEDSTRUCT_THREADS=1`` in the worker, whatever the parent
    set; :mod:`fedstruct.fl.threads`)."""
    import torch

    os.environ[THREADS_ENV] = "1"
    torch.set_num_threads(1)
    return replace(execute(method, layers, folder, progress=False, reuse=True), model=None)


def variant_folder(out: Path, label: str, seed: int) -> Path:
    """Where :func:`compare_variants` writes variant ``label``'s run with ``seed``."""
    return out / _slug(label) / f"seed-{seed}"


def sweep_label(label: str, value: object) -> str:
    """The variant name of ``label`` at one value of a swept setting."""
    return f"{label} @ {value}"


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-")
