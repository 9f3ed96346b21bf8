"""Recipes for the FED-CD paper's figures that :mod:`.recipes` does not cover.

Figures 1, 2 (as the paper's sweep), 4 (both data sizes), 6a/6b, 7 (10 clients) and
9-11 (structured graphs), plus the sweep of proximity's temperature and distance on
Figure 2's setting (issue 34). The paper gives its figures' x-values in words only;
the values below are this library's choice (docs/results/fedcd.md). Its data sizes
(§9.5): 10,000 observational rows and 2,000 interventional ones (100 per variable of
a 20-node graph), the global data set split among the clients.

``--quick`` runs each design on a 6-node graph with a few hundred rows and a few ENCO
steps (:data:`TINY`): seconds per run, to check what a recipe writes; its numbers mean
nothing. The full designs take hours on 2 cores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedstruct.drawing.plots import plot_curves
from fedstruct.runs.compare import (
    Comparison,
    compare_variants,
    seed_count,
    sweep_label,
    write_results,
)
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["STRUCTURED", "TINY"]

#: ``--quick``: a 6-node graph, few rows, few ENCO steps, 2 rounds of 1 epoch.
TINY: dict[str, Any] = {
    "variables": 6,
    "samples": 300,
    "model_steps": 20,
    "graph_steps": 4,
    "rounds": 2,
    "epochs_per_round": 1,
}
#: The structured families of Figures 9-11 (§9.6; ENCO's generator, d = 20).
STRUCTURED = ("chain", "bidiag", "collider", "jungle", "full")
ER2 = {"network": "er", "edges_per_node": 2.0}
#: §9.5: 10,000 observational rows in the global data set.
OBSERVATIONAL = 10000
#: ENCO alone on the first client's data and on the pooled data, beside FED-CD.
THREE = {"shd": "FED-CD", "single_client_shd": "single client", "centralized_shd": "centralized"}
WITH_REFERENCES = {"alone": "first", "centralized": True}


def _design(quick: bool, full: Mapping[str, Any]) -> dict[str, Any]:
    return {**full, **TINY} if quick else dict(full)


def _graphs(quick: bool, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    chosen = names[:2] if quick else names
    return {g: ER2 if g == "ER-2" else {"network": g} for g in chosen}


def _sweep_table(
    comparison: Comparison,
    out: Path,
    metrics: Mapping[str, str],
    axis: Mapping[str, Sequence[float]],
    xlabel: str,
    title: str,
) -> RecipeReport:
    """Plot each label's metrics along its axis (one PNG per label) and write the table.

    ``axis`` maps each label (a graph, a legend entry) to the values it was swept over;
    the variants are named :func:`sweep_label` ``(label, value)``.
    """
    for label, values in axis.items():
        curves = {
            name: [(float(x), comparison.mean(sweep_label(label, x), m)) for x in values]
            for m, name in metrics.items()
        }
        plot_curves(
            curves,
            out / f"shd-{_slug(label)}.png",
            title=f"{title}: {label}",
            xlabel=xlabel,
            ylabel="SHD",
        )
    runs = next(iter(comparison.runs.values()))  # a variant's runs: one per seed
    table = write_results(out, comparison.rows(list(metrics)), list(metrics),
                          f"{title} ({seed_count(runs)})")  # fmt: skip
    return RecipeReport(table, out)


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-")


def horizontal_sweep(
    quick: bool, out: Path, graphs: Sequence[str], seeds: Sequence[int], title: str
) -> RecipeReport:
    """Figures 1 and 10: 2 clients, horizontal split, interventional rows per variable
    each client holds on the x-axis; FED-CD (proximity), one client alone, centralized.
    """
    per_client = (10, 20) if quick else (25, 50, 100, 200)
    common = _design(quick, {"clients": 2, "samples": OBSERVATIONAL, **WITH_REFERENCES})
    variants = {
        sweep_label(g, x): {**settings, "samples_per_intervention": 2 * x}
        for g, settings in _graphs(quick, graphs).items()
        for x in per_client
    }
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    axis = {g: per_client for g in _graphs(quick, graphs)}
    return _sweep_table(comparison, out, THREE, axis, "interventional rows per variable "
                        "per client", title)  # fmt: skip


def _fig1(quick: bool, out: Path, seeds: range) -> RecipeReport:
    return horizontal_sweep(quick, out, ["ER-2"], seeds, "FED-CD Figure 1")


def _fig10(quick: bool, out: Path, seeds: range) -> RecipeReport:
    return horizontal_sweep(quick, out, STRUCTURED, seeds, "FED-CD Figure 10")


def vertical_sweep(quick: bool, out: Path, seeds: Sequence[int]) -> RecipeReport:
    """Figure 2: 5 clients with disjoint, covering intervened-variable sets; proximity
    vs voting along the total number of interventional rows (all clients together)."""
    per_variable = (10, 20) if quick else (25, 50, 100, 200)
    d = TINY["variables"] if quick else 20
    common = _design(quick, {**ER2, "clients": 5, "split": "vertical", "samples": OBSERVATIONAL,
                             "alone": "none"})  # fmt: skip
    variants = {
        sweep_label(agg, d * x): {"aggregation": agg, "samples_per_intervention": x}
        for agg in ("proximity", "vote")
        for x in per_variable
    }
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    curves = comparison.sweep_curves(["proximity", "vote"], [d * x for x in per_variable], "shd")
    plot_curves(curves, out / "shd.png", title="FED-CD Figure 2: proximity vs voting",
                xlabel="interventional rows (total)", ylabel="SHD")  # fmt: skip
    table = write_results(out, comparison.rows(["shd"]), ["shd"],
                          f"FED-CD Figure 2 ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


#: Proximity's settings swept on Figure 2's setting (issue 34): β and the distance.
TEMPERATURES = (0.03, 0.1, 0.3)
DISTANCES = ("outgoing", "undirected")


def proximity_sweep(quick: bool, out: Path, seeds: Sequence[int]) -> RecipeReport:
    """Voting and proximity at every ``temperature`` (β) and ``distance`` on Figure 2's
    setting (the :func:`.recipes._vertical` design: 50 interventional rows per variable)."""
    common = _design(quick, {**ER2, "clients": 5, "split": "vertical", "samples": OBSERVATIONAL,
                             "samples_per_intervention": 50, "alone": "none"})  # fmt: skip
    variants: dict[str, dict[str, Any]] = {"vote": {"aggregation": "vote"}}
    for distance in DISTANCES:
        for beta in TEMPERATURES[-1:] if quick else TEMPERATURES:
            variants[f"proximity | {distance} | beta={beta}"] = {
                "aggregation": "proximity",
                "distance": distance,
                "temperature": beta,
            }
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    table = write_results(out, comparison.rows(["shd"]), ["shd"],
                          f"FED-CD proximity's β and distance ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


def rounds_by_size(
    quick: bool, out: Path, graphs: Sequence[str], seeds: Sequence[int], title: str
) -> RecipeReport:
    """Figures 4 and 9: SHD after every round, 2 clients, horizontal split, at the
    paper's two data sizes (§9.5: 10k + 100 per variable; Table 1's 25k + 250)."""
    sizes = {"10k+2k": (OBSERVATIONAL, 100), "25k+5k": (25000, 250)}
    common = _design(quick, {"clients": 2, "rounds": 10, **WITH_REFERENCES})
    variants = {}
    for g, settings in _graphs(quick, graphs).items():
        for size, (n_obs, n_int) in sizes.items():
            rows = {"samples": n_obs, "samples_per_intervention": n_int}
            if quick:
                rows = {"samples": n_obs // 50, "samples_per_intervention": n_int // 10}
            variants[f"{g} | {size}"] = {**settings, **rows}
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    plot_curves(comparison.curves("shd"), out / "shd.png", title=f"{title}: SHD per round",
                xlabel="round", ylabel="SHD")  # fmt: skip
    table = write_results(out, comparison.rows(list(THREE)), list(THREE),
                          f"{title} ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


def _fig4(quick: bool, out: Path, seeds: range) -> RecipeReport:
    return rounds_by_size(quick, out, ["ER-2"], seeds, "FED-CD Figure 4")


def _fig9(quick: bool, out: Path, seeds: range) -> RecipeReport:
    return rounds_by_size(quick, out, STRUCTURED, seeds, "FED-CD Figure 9")


def clients_sweep(quick: bool, out: Path, seeds: Sequence[int], grow: bool) -> RecipeReport:
    """Figure 6: SHD against the number of clients (horizontal split, proximity).

    ``grow = False`` (6a): the global data set is fixed, each client's share shrinks;
    ``grow = True`` (6b): each client brings the same rows (half of the 2-client
    design's), so the global data set grows with the clients. The legend ("Int.") is
    the interventional rows of the global data set (6a) or of each client (6b).
    """
    clients = (2, 3) if quick else (2, 4, 6, 8, 10)
    per_variable = (20,) if quick else (50, 100)
    d = TINY["variables"] if quick else 20
    common = _design(quick, {**ER2, "alone": "none"})
    obs = common.pop("samples") if quick else OBSERVATIONAL
    variants = {}
    for x in per_variable:
        for k in clients:
            n_obs, n_int = (k * obs // 2, k * x // 2) if grow else (obs, x)
            variants[sweep_label(f"Int. {d * x}", k)] = {
                "clients": k, "samples": n_obs, "samples_per_intervention": n_int
            }  # fmt: skip
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    labels = [f"Int. {d * x}" for x in per_variable]
    name = "6b (data grow with the clients)" if grow else "6a (global data fixed)"
    plot_curves(comparison.sweep_curves(labels, clients, "shd"), out / "shd.png",
                title=f"FED-CD Figure {name}", xlabel="clients", ylabel="SHD")  # fmt: skip
    table = write_results(out, comparison.rows(["shd"]), ["shd"],
                          f"FED-CD Figure {name} ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


def entropy_rounds(quick: bool, out: Path, seeds: Sequence[int]) -> RecipeReport:
    """Figure 7: average edge entropy of the 10 clients' graphs after every round."""
    common = _design(quick, {**ER2, "clients": 10, "rounds": 10, "samples": OBSERVATIONAL,
                             "samples_per_intervention": 100, "alone": "none"})  # fmt: skip
    if quick:
        common["samples_per_intervention"] = 10
    variants = {"proximity": {"aggregation": "proximity"}, "vote": {"aggregation": "vote"}}
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    plot_curves(comparison.curves("edge_entropy"), out / "edge_entropy.png",
                title="FED-CD Figure 7: 10 clients", xlabel="round",
                ylabel="average edge entropy (bits)")  # fmt: skip
    metrics = ["shd", "edge_entropy"]
    table = write_results(out, comparison.rows(metrics), metrics,
                          f"FED-CD Figure 7 ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


def structured_vertical(quick: bool, out: Path, seeds: Sequence[int]) -> RecipeReport:
    """Figure 11 (Figure 3 on structured graphs): 2 clients with 10-10 and 16-4 splits of
    the intervened variables, FED-CD (proximity) and each client alone."""
    splits = {"10-10": "3,3", "16-4": "5,1"} if quick else {"10-10": "10,10", "16-4": "16,4"}
    common = _design(quick, {"clients": 2, "split": "vertical", "samples": OBSERVATIONAL,
                             "samples_per_intervention": 100, "alone": "all"})  # fmt: skip
    if quick:
        common["samples_per_intervention"] = 20
    variants = {
        f"{g} | {split}": {**settings, "targets_per_client": blocks}
        for g, settings in _graphs(quick, STRUCTURED).items()
        for split, blocks in splits.items()
    }
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    metrics = ["shd", "alone_shd_client-1", "alone_shd_client-2"]
    table = write_results(out, comparison.rows(metrics), metrics,
                          f"FED-CD Figure 11 ({seed_count(seeds)})")  # fmt: skip
    return RecipeReport(table, out)


#: Every figure recipe's seeds: one with ``--quick``, 10 at full size (the paper's).
FIGURE_SEEDS = (1, 10)

for _recipe in (
    Recipe("fedcd-fig1", "FED-CD Figure 1: horizontal split, SHD vs interventional rows",
           _fig1, seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig2", "FED-CD Figure 2: proximity vs voting vs interventional rows (vertical)",
           lambda quick, out, seeds: vertical_sweep(quick, out, seeds),
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-proximity", "FED-CD proximity's β and distance vs voting, Figure 2's setting",
           lambda quick, out, seeds: proximity_sweep(quick, out, seeds),
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig4", "FED-CD Figure 4: SHD per round at both data sizes", _fig4,
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig6a", "FED-CD Figure 6a: number of clients, global data fixed",
           lambda quick, out, seeds: clients_sweep(quick, out, seeds, grow=False),
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig6b", "FED-CD Figure 6b: number of clients, data growing with them",
           lambda quick, out, seeds: clients_sweep(quick, out, seeds, grow=True),
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig7", "FED-CD Figure 7: edge entropy per round, 10 clients",
           lambda quick, out, seeds: entropy_rounds(quick, out, seeds), seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig9", "FED-CD Figure 9: Figure 4 on structured graphs", _fig9,
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig10", "FED-CD Figure 10: Figure 1 on structured graphs", _fig10,
           seed_counts=FIGURE_SEEDS),
    Recipe("fedcd-fig11", "FED-CD Figure 11: Figure 3 on structured graphs",
           lambda quick, out, seeds: structured_vertical(quick, out, seeds),
           seed_counts=FIGURE_SEEDS),
):  # fmt: skip
    register_recipe(_recipe)
