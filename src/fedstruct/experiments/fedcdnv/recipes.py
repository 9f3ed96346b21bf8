"""Recipes reproducing the FedCDnv paper's results (Table 1, Figures 5-6, Table 2).

Each writes ``results.json``, ``results.md`` (the table as markdown) and plots into
its folder, one sub-folder per run. ``--quick`` keeps the design at a size that runs
in a few minutes on 2 cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.experiments.compare import Comparison, compare_variants, sweep_label, write_results
from fedstruct.experiments.plots import plot_bars, plot_curves
from fedstruct.experiments.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["METHODS"]

#: The compared methods (FedCDnv paper §4.1, App. D.1).
METHODS: dict[str, dict[str, Any]] = {
    "FedCDnv": {"strategy": "tpss"},
    "FedCDnv-vote": {"strategy": "vote"},
    "FCI-base": {"strategy": "largest"},
}

EDGE = ["precision_edge", "recall_edge", "f1_edge"]
ARROW = ["precision_arrowhead", "recall_arrowhead", "f1_arrowhead"]
ORIENT = ["precision_orientation", "recall_orientation", "f1_orientation"]
FDRS = ["fdr_c", "fdr_dc", "fdr_nc", "fdr_dnc"]


def _central_row(comparison: Comparison, variant: str, metrics: Sequence[str]) -> dict:
    row: dict[str, Any] = {"name": "centralised FCI (pooled data)"}
    for m in metrics:
        values = [
            o.metrics[f"central_{m}"]
            for o in comparison.runs[variant]
            if f"central_{m}" in o.metrics
        ]
        if values:
            row[m], row[m + "_std"] = float(np.mean(values)), float(np.std(values))
    return row


def _sachs(quick: bool, out: Path) -> RecipeReport:
    """Table 1: real Sachs data, 6 clients observing 9 of 11 proteins each."""
    seeds = range(3 if quick else 10)
    common = {"network": "sachs-cytometry", "clients": 6}
    variants = {k: {**v, "reference": k == "FedCDnv"} for k, v in METHODS.items()}
    comparison = compare_variants("fedcdnv", variants, seeds, out, common=common, progress=False)
    metrics = [*EDGE, *ARROW, *ORIENT]
    rows = [*comparison.rows(metrics), _central_row(comparison, "FedCDnv", metrics)]
    table = write_results(
        out, rows, metrics, f"FedCDnv Table 1: real Sachs data ({len(seeds)} seeds)"
    )
    return RecipeReport(table, out)


def _sweep(
    out: Path,
    axis: str,
    values: Sequence[Any],
    seeds: Sequence[int],
    common: dict[str, Any],
    methods: dict[str, dict[str, Any]],
) -> Comparison:
    variants = {
        sweep_label(label, v): {**settings, axis: v, "reference": False}
        for label, settings in methods.items()
        for v in values
    }
    return compare_variants("fedcdnv", variants, seeds, out, common=common, progress=False)


def _synthetic(quick: bool, out: Path) -> RecipeReport:
    """Figure 5: F1 of edges and orientations against the number of variables |V|."""
    sizes = [10, 20, 30] if quick else [10, 20, 30, 40, 50, 60, 80, 100]
    seeds = range(2 if quick else 5)
    comparison = _sweep(out, "variables", sizes, seeds, {"network": "synthetic"}, METHODS)
    for metric in ("f1_edge", "f1_orientation", "f1_arrowhead"):
        plot_curves(
            comparison.sweep_curves(list(METHODS), sizes, metric),
            out / f"{metric}.png",
            title=f"FedCDnv Figure 5: {metric.replace('_', ' ')}",
            xlabel="|V| (variables of the DAG)",
            ylabel=metric.replace("_", " "),
        )
    return _f1_report(comparison, out, f"FedCDnv Figure 5: synthetic data ({len(seeds)} seeds)")


def _f1_report(comparison: Comparison, out: Path, title: str) -> RecipeReport:
    """The table of edge, orientation and arrowhead F1 per method (Figures 5 and 6)."""
    f1 = ["f1_edge", "f1_orientation", "f1_arrowhead"]
    return RecipeReport(write_results(out, comparison.rows(f1), f1, title), out)


def _benchmarks(quick: bool, out: Path) -> RecipeReport:
    """Figure 6: the benchmark networks."""
    networks = (
        ["child", "alarm"]
        if quick
        else ["child", "insurance", "alarm", "barley", "child3", "alarm3"]
    )
    seeds = range(2 if quick else 5)
    comparison = _sweep(out, "network", networks, seeds, {}, METHODS)
    for metric in ("f1_edge", "f1_orientation", "f1_arrowhead"):
        groups = {
            n: {label: comparison.mean(sweep_label(label, n), metric) for label in METHODS}
            for n in networks
        }
        plot_bars(
            groups,
            out / f"{metric}.png",
            title=f"FedCDnv Figure 6: {metric}",
            ylabel=metric.replace("_", " "),
        )
    return _f1_report(comparison, out, f"FedCDnv Figure 6: benchmark networks ({len(seeds)} seeds)")


def _fdr(quick: bool, out: Path) -> RecipeReport:
    """Table 2: FDR of the returned and of the definite (non-)causal relationships."""
    sizes = [10, 20, 30] if quick else [10, 20, 30, 40, 50, 60, 80, 100, 120, 150]
    seeds = range(3 if quick else 5)
    comparison = _sweep(
        out, "variables", sizes, seeds, {"network": "synthetic"}, {"FedCDnv": METHODS["FedCDnv"]}
    )
    rows = comparison.rows(FDRS)
    table = write_results(out, rows, FDRS, f"FedCDnv Table 2: FDR by |V| ({len(seeds)} seeds)")
    return RecipeReport(table, out)


for _recipe in (
    Recipe(
        "fedcdnv-sachs",
        "FedCDnv Table 1: real Sachs data, FedCDnv vs FedCDnv-vote vs FCI-base (+ centralised FCI)",
        _sachs,
    ),
    Recipe(
        "fedcdnv-synthetic",
        "FedCDnv Figure 5: F1 of edges/orientations vs |V| on synthetic data",
        _synthetic,
    ),
    Recipe(
        "fedcdnv-benchmarks",
        "FedCDnv Figure 6: child, insurance, alarm, barley, child3, alarm3",
        _benchmarks,
    ),
    Recipe(
        "fedcdnv-fdr",
        "FedCDnv Table 2: FDR of returned and definite (non-)causal relations vs |V|",
        _fdr,
    ),
):
    register_recipe(_recipe)
