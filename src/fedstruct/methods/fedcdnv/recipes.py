"""Recipes reproducing the FedCDnv paper's results (Table 1, Figures 5-6, Table 2,
and Appendix D: Figure 9's client counts, Figure 10 and Table 6, Figures 11-12).

Each writes ``results.json``, ``results.md`` (the table as markdown) and plots into
its folder, one sub-folder per run. ``--quick`` keeps the design at a size that runs
in a few minutes on 2 cores (the Appendix D recipes: under a minute).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.drawing.plots import plot_bars, plot_curves
from fedstruct.runs.compare import (
    Comparison,
    compare_variants,
    seed_count,
    sweep_label,
    write_results,
)
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

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
#: Table 4's test values (App. D.1); the default of each is the paper's (§4.1).
CLIENTS = [2, 4, 6, 8, 10, 15, 20, 30]
SIZES = [10, 20, 30, 40, 50, 60, 80, 100]
NETWORKS = ["child", "insurance", "alarm", "barley", "child3", "alarm3"]
LOWER = [0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009]  # α - θ1
UPPER = [0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15, 0.1]  # α + θ2
OVERLAPS = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6]  # δ
LATENTS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35]  # λ
MAX_SAMPLES = [200, 500, 1000, 2000, 3000, 5000]  # n_s: n_k uniform in [100, n_s]
#: FedCDnv's default significance level and interval widths (Table 4: [0.001, 0.5]).
ALPHA, THETA1, THETA2 = 0.05, 0.049, 0.45


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


def _sachs(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 1: real Sachs data, 6 clients observing 9 of 11 proteins each."""
    common = {"network": "sachs-cytometry", "clients": 6}
    variants = {k: {**v, "reference": k == "FedCDnv"} for k, v in METHODS.items()}
    comparison = compare_variants("fedcdnv", variants, seeds, out, common=common, progress=False)
    metrics = [*EDGE, *ARROW, *ORIENT]
    rows = [*comparison.rows(metrics), _central_row(comparison, "FedCDnv", metrics)]
    table = write_results(
        out, rows, metrics, f"FedCDnv Table 1: real Sachs data ({seed_count(seeds)})"
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


def _synthetic(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 5: F1 of edges and orientations against the number of variables |V|."""
    sizes = [10, 20, 30] if quick else [10, 20, 30, 40, 50, 60, 80, 100]
    comparison = _sweep(out, "variables", sizes, seeds, {"network": "synthetic"}, METHODS)
    for metric in ("f1_edge", "f1_orientation", "f1_arrowhead"):
        plot_curves(
            comparison.sweep_curves(list(METHODS), sizes, metric),
            out / f"{metric}.png",
            title=f"FedCDnv Figure 5: {metric.replace('_', ' ')}",
            xlabel="|V| (variables of the DAG)",
            ylabel=metric.replace("_", " "),
        )
    return _f1_report(comparison, out, f"FedCDnv Figure 5: synthetic data ({seed_count(seeds)})")


def _f1_report(comparison: Comparison, out: Path, title: str) -> RecipeReport:
    """The table of edge, orientation and arrowhead F1 per method (Figures 5 and 6)."""
    f1 = ["f1_edge", "f1_orientation", "f1_arrowhead"]
    return RecipeReport(write_results(out, comparison.rows(f1), f1, title), out)


def _benchmarks(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 6: the benchmark networks."""
    networks = (
        ["child", "alarm"]
        if quick
        else ["child", "insurance", "alarm", "barley", "child3", "alarm3"]
    )
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
    return _f1_report(
        comparison, out, f"FedCDnv Figure 6: benchmark networks ({seed_count(seeds)})"
    )


def _fdr(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 2: FDR of the returned and of the definite (non-)causal relationships."""
    sizes = [10, 20, 30] if quick else [10, 20, 30, 40, 50, 60, 80, 100, 120, 150]
    comparison = _sweep(
        out, "variables", sizes, seeds, {"network": "synthetic"}, {"FedCDnv": METHODS["FedCDnv"]}
    )
    rows = comparison.rows(FDRS)
    table = write_results(out, rows, FDRS, f"FedCDnv Table 2: FDR by |V| ({seed_count(seeds)})")
    return RecipeReport(table, out)


def _axis_sweep(
    out: Path,
    axis: str,
    values: Sequence[Any],
    settings_of: Callable[[Any], dict[str, Any]],
    seeds: Sequence[int],
    common: dict[str, Any],
    methods: dict[str, dict[str, Any]],
) -> tuple[Comparison, list[dict[str, Any]]]:
    """Every method at every value of one swept setting, into ``out/<axis>``; the
    rows are named ``"<axis>: <method> @ <value>"``."""
    variants = {
        sweep_label(label, v): {**settings, **settings_of(v)}
        for label, settings in methods.items()
        for v in values
    }
    shared = {**common, "reference": False}
    comparison = compare_variants(
        "fedcdnv", variants, seeds, out / axis, common=shared, progress=False
    )
    rows = [
        {**r, "name": f"{axis}: {r['name']}"} for r in comparison.rows([*EDGE, *ORIENT, *ARROW])
    ]
    return comparison, rows


def _plot_axis(
    comparison: Comparison,
    methods: Sequence[str],
    values: Sequence[float],
    out: Path,
    figure: str,
    xlabel: str,
) -> None:
    """Edge and orientation F1 (both conventions) along a swept setting."""
    for metric in ("f1_edge", "f1_orientation", "f1_arrowhead"):
        plot_curves(
            comparison.sweep_curves(list(methods), values, metric),
            out / f"{metric}.png",
            title=f"FedCDnv {figure}: {metric.replace('_', ' ')}",
            xlabel=xlabel,
            ylabel=metric.replace("_", " "),
        )


def _appendix_report(out: Path, rows: list[dict[str, Any]], title: str) -> RecipeReport:
    """The table of every swept row: edge, orientation and arrowhead P/R/F1."""
    return RecipeReport(write_results(out, rows, [*EDGE, *ORIENT, *ARROW], title), out)


def _clients(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 9, rows 3-4: precision and recall against the number of clients
    (synthetic data, |V| = 30, Table 4's other defaults)."""
    counts = [2, 4] if quick else CLIENTS
    common = {"network": "synthetic", "variables": 20 if quick else 30}
    comparison, rows = _axis_sweep(
        out, "clients", counts, lambda m: {"clients": m}, seeds, common, METHODS
    )
    _plot_axis(comparison, list(METHODS), counts, out / "clients", "Figure 9", "clients m")
    return _appendix_report(
        out, rows, f"FedCDnv Figure 9 (rows 3-4): number of clients ({seed_count(seeds)})"
    )


#: Figure 10 and Table 6 compare the two strategies that need no variable-set difference.
IDENTICAL_METHODS = {k: METHODS[k] for k in ("FedCDnv", "FedCDnv-vote")}


def _identical(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 10: identical variable sets (δ = 1), skeletons against |V|, against the
    number of clients (|V| = 30) and on the benchmark networks."""
    common = {"overlap": 1.0}
    synthetic = {**common, "network": "synthetic"}
    rows: list[dict[str, Any]] = []
    sizes = [10] if quick else SIZES
    by_size, part = _axis_sweep(
        out, "variables", sizes, lambda v: {"variables": v}, seeds, synthetic, IDENTICAL_METHODS
    )
    rows += part
    _plot_axis(by_size, list(IDENTICAL_METHODS), sizes, out / "variables", "Figure 10", "|V|")
    counts = [2] if quick else CLIENTS
    synthetic_m = {**synthetic, "variables": 10 if quick else 30}
    by_clients, part = _axis_sweep(
        out, "clients", counts, lambda m: {"clients": m}, seeds, synthetic_m, IDENTICAL_METHODS
    )
    rows += part
    _plot_axis(by_clients, list(IDENTICAL_METHODS), counts, out / "clients", "Figure 10", "m")
    networks = ["child"] if quick else NETWORKS
    _, part = _axis_sweep(
        out, "network", networks, lambda n: {"network": n}, seeds, common, IDENTICAL_METHODS
    )
    rows += part
    return _appendix_report(
        out, rows, f"FedCDnv Figure 10: identical variable sets ({seed_count(seeds)})"
    )


def _identical_sachs(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 6: the real Sachs data with every client observing all 11 proteins."""
    common = {"network": "sachs-cytometry", "clients": 6, "overlap": 1.0, "reference": False}
    comparison = compare_variants(
        "fedcdnv", IDENTICAL_METHODS, seeds, out, common=common, progress=False
    )
    metrics = [*EDGE, *ARROW, *ORIENT]
    table = write_results(
        out,
        comparison.rows(metrics),
        metrics,
        f"FedCDnv Table 6: Sachs, identical variable sets ({seed_count(seeds)})",
    )
    return RecipeReport(table, out)


def _interval(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 11: FedCDnv against the interval ``[α - θ1, α + θ2]`` of non-stable
    p-values: ``α - θ1`` swept with ``α + θ2 = 0.5``, then ``α + θ2`` with
    ``α - θ1 = 0.001`` (α = 0.05; synthetic data, |V| = 30)."""
    common = {"network": "synthetic", "variables": 20 if quick else 30}
    fedcdnv = {"FedCDnv": METHODS["FedCDnv"]}
    lower = [0.001, 0.009] if quick else LOWER
    upper = [0.5, 0.1] if quick else UPPER
    by_lower, rows = _axis_sweep(
        out,
        "alpha-theta1",
        lower,
        lambda low: {"theta1": round(ALPHA - low, 9), "theta2": THETA2},
        seeds,
        common,
        fedcdnv,
    )
    _plot_axis(by_lower, list(fedcdnv), lower, out / "alpha-theta1", "Figure 11", "α - θ1")
    by_upper, part = _axis_sweep(
        out,
        "alpha+theta2",
        upper,
        lambda high: {"theta1": THETA1, "theta2": round(high - ALPHA, 9)},
        seeds,
        common,
        fedcdnv,
    )
    _plot_axis(by_upper, list(fedcdnv), upper, out / "alpha+theta2", "Figure 11", "α + θ2")
    return _appendix_report(
        out, rows + part, f"FedCDnv Figure 11: the interval [α-θ1, α+θ2] ({seed_count(seeds)})"
    )


def _parameters(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 12: FedCDnv against δ (overlap), λ (latent ratio) and ``n_s`` (``n_k``
    uniform in ``[100, n_s]``), each with the others at Table 4's defaults."""
    common = {"network": "synthetic", "variables": 20 if quick else 30}
    fedcdnv = {"FedCDnv": METHODS["FedCDnv"]}
    axes: list[tuple[str, list[float], str, str]] = [
        ("overlap", [0.95, 0.6] if quick else OVERLAPS, "overlap", "δ"),
        ("latent_ratio", [0.05, 0.35] if quick else LATENTS, "latent_ratio", "λ"),
        ("max_samples", [200, 500] if quick else MAX_SAMPLES, "max_samples", "n_s"),
    ]
    rows: list[dict[str, Any]] = []
    for axis, values, field_name, xlabel in axes:
        comparison, part = _axis_sweep(
            out, axis, values, lambda v, f=field_name: {f: v}, seeds, common, fedcdnv
        )
        _plot_axis(comparison, list(fedcdnv), values, out / axis, "Figure 12", xlabel)
        rows += part
    return _appendix_report(out, rows, f"FedCDnv Figure 12: δ, λ and n_s ({seed_count(seeds)})")


for _recipe in (
    Recipe(
        "fedcdnv-sachs",
        "FedCDnv Table 1: real Sachs data, FedCDnv vs FedCDnv-vote vs FCI-base (+ centralised FCI)",
        _sachs,
        seed_counts=(3, 10),
    ),
    Recipe(
        "fedcdnv-synthetic",
        "FedCDnv Figure 5: F1 of edges/orientations vs |V| on synthetic data",
        _synthetic,
        seed_counts=(2, 5),
    ),
    Recipe(
        "fedcdnv-benchmarks",
        "FedCDnv Figure 6: child, insurance, alarm, barley, child3, alarm3",
        _benchmarks,
        seed_counts=(2, 5),
    ),
    Recipe(
        "fedcdnv-fdr",
        "FedCDnv Table 2: FDR of returned and definite (non-)causal relations vs |V|",
        _fdr,
        seed_counts=(3, 5),
    ),
    Recipe(
        "fedcdnv-clients",
        "FedCDnv Figure 9 (rows 3-4): precision/recall of edges and orientations vs 2-30 clients",
        _clients,
        seed_counts=(1, 5),
    ),
    Recipe(
        "fedcdnv-identical",
        "FedCDnv Figure 10: identical variable sets (overlap 1) vs |V|, clients, networks",
        _identical,
        seed_counts=(1, 5),
    ),
    Recipe(
        "fedcdnv-identical-sachs",
        "FedCDnv Table 6: real Sachs data, every client observing all 11 proteins",
        _identical_sachs,
        seed_counts=(1, 10),
    ),
    Recipe(
        "fedcdnv-interval",
        "FedCDnv Figure 11: the non-stable interval [alpha - theta1, alpha + theta2]",
        _interval,
        seed_counts=(1, 5),
    ),
    Recipe(
        "fedcdnv-parameters",
        "FedCDnv Figure 12: overlap delta, latent ratio lambda, sample size n_s",
        _parameters,
        seed_counts=(1, 5),
    ),
):
    register_recipe(_recipe)
