"""Recipes reproducing the FED-CD paper's results: Table 1, Figures 2-3 at one data
size, Figures 4 and 7 at one size with 2 clients; the other figures (1, 2 as a
sweep, 4 at both sizes, 6a/6b, 7 with 10 clients, 9-11) are in :mod:`.figures`.

Each writes ``results.json``, ``results.md`` and plots into its folder, one
sub-folder per run. ``--quick`` shrinks ENCO's steps and the design so a recipe runs
in minutes on 2 cores; the full recipes take hours (docs/results/fedcd.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedstruct.drawing.plots import plot_bars, plot_curves
from fedstruct.runs.compare import compare_variants, seed_count, write_results
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["GRAPHS"]

#: Table 1's columns: ENCO's ER-n graphs (d = 20) and three bnlearn networks.
GRAPHS: dict[str, dict[str, Any]] = {
    "ER-1": {"network": "er", "edges_per_node": 1.0},
    "ER-2": {"network": "er", "edges_per_node": 2.0},
    "ER-4": {"network": "er", "edges_per_node": 4.0},
    "ER-6": {"network": "er", "edges_per_node": 6.0},
    "sachs": {"network": "sachs"},
    "alarm": {"network": "alarm"},
    "asia": {"network": "asia"},
}

#: ENCO settings of ``--quick`` runs (40% of the steps, 3 rounds of 1 epoch).
QUICK = {"model_steps": 400, "graph_steps": 40, "rounds": 3, "epochs_per_round": 1}


def _table1(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 1: single-client ENCO vs FED-CD with 2 and 4 clients (horizontal split).

    §9.5: the baselining data set has 25,000 observational rows and 5,000
    interventional ones (250 per variable of a 20-node graph), split evenly.
    """
    graphs = {k: GRAPHS[k] for k in (["ER-1", "asia"] if quick else GRAPHS)}
    common = {"samples": 25000, "samples_per_intervention": 250, **(QUICK if quick else {})}
    variants = {}
    for g, settings in graphs.items():
        variants[f"2 clients | {g}"] = {**settings, "clients": 2, "alone": "first"}
        variants[f"4 clients | {g}"] = {**settings, "clients": 4, "alone": "none"}
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    summary = {r["variant"]: r for r in comparison.rows(["shd", "single_client_shd"])}
    rows = []
    for g in graphs:
        two, four = summary[f"2 clients | {g}"], summary[f"4 clients | {g}"]
        for name, row, key in (
            ("ENCO (single client)", two, "single_client_shd"),
            ("FED-CD (2 clients)", two, "shd"),
            ("FED-CD (4 clients)", four, "shd"),
        ):
            rows.append({"name": f"{name} | {g}", "shd": row[key], "shd_std": row[f"{key}_std"]})
    plot_bars(
        {
            g: {
                label: next(r["shd"] for r in rows if r["name"] == f"{label} | {g}")
                for label in ("ENCO (single client)", "FED-CD (2 clients)", "FED-CD (4 clients)")
            }
            for g in graphs
        },
        out / "shd.png",
        title="FED-CD Table 1: SHD",
        ylabel="SHD",
    )
    table = write_results(out, rows, ["shd"], f"FED-CD Table 1 ({seed_count(seeds)})")
    return RecipeReport(table, out)


def _vertical(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figures 2-3: vertical splits, proximity vs voting, and isolated clients.

    Figure 2: 5 clients with disjoint, covering target sets (4 variables each) and few
    interventional rows; Figure 3: 2 clients with 10-10 and 16-4 target splits, each
    client also alone.
    """
    base = {"network": "er", "edges_per_node": 2.0, "split": "vertical",
            "samples": 10000, **(QUICK if quick else {})}  # fmt: skip
    splits = {
        "5 clients": {"clients": 5, "samples_per_intervention": 50, "alone": "none"},
        "10-10": {"clients": 2, "targets_per_client": "10,10", "samples_per_intervention": 100},
        "16-4": {"clients": 2, "targets_per_client": "16,4", "samples_per_intervention": 100},
    }
    variants = {
        f"{agg} | {split}": {
            **settings,
            "aggregation": agg,
            "alone": settings.get("alone", "all") if agg == "proximity" else "none",
        }
        for split, settings in splits.items()
        for agg in ("proximity", "vote")
    }
    comparison = compare_variants("fedcd", variants, seeds, out, common=base, progress=False)
    metrics = ["shd", "alone_shd_client-1", "alone_shd_client-2"]
    groups = {}
    for split in splits:
        groups[split] = {
            agg: comparison.mean(f"{agg} | {split}", "shd") for agg in ("proximity", "vote")
        }
        for client in ("client-1", "client-2"):
            runs = comparison.runs[f"proximity | {split}"]
            if all(f"alone_shd_{client}" in r.metrics for r in runs):
                groups[split][f"{client} alone"] = comparison.mean(
                    f"proximity | {split}", f"alone_shd_{client}"
                )
    plot_bars(
        groups,
        out / "shd.png",
        title="FED-CD Figures 2-3: vertical interventions (ER-2, d = 20)",
        ylabel="SHD",
    )
    rows = comparison.rows(metrics)
    table = write_results(out, rows, metrics, f"FED-CD vertical splits ({seed_count(seeds)})")
    return RecipeReport(table, out)


def _rounds(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figures 4 and 7: SHD and average edge entropy after every round."""
    common = {
        "network": "er",
        "edges_per_node": 2.0,
        "clients": 2,
        "rounds": 10,
        "samples": 10000,
        "samples_per_intervention": 100,
        "alone": "none",
        **(QUICK if quick else {}),
    }
    variants = {"proximity": {"aggregation": "proximity"}, "vote": {"aggregation": "vote"}}
    comparison = compare_variants("fedcd", variants, seeds, out, common=common, progress=False)
    for metric in ("shd", "edge_entropy"):
        plot_curves(
            comparison.curves(metric),
            out / f"{metric}.png",
            title=f"FED-CD per round: {metric.replace('_', ' ')}",
            xlabel="round",
            ylabel=metric.replace("_", " "),
        )
    rows = comparison.rows(["shd", "edge_entropy"])
    table = write_results(
        out, rows, ["shd", "edge_entropy"], f"FED-CD by round ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


for _recipe in (
    Recipe(
        "fedcd-table1",
        "FED-CD Table 1: ENCO vs FED-CD (2, 4 clients), ER-n and networks",
        _table1,
        seed_counts=(1, 10),
    ),
    Recipe(
        "fedcd-vertical",
        "FED-CD Figures 2-3: vertical splits, proximity vs voting",
        _vertical,
        seed_counts=(1, 10),
    ),
    Recipe(
        "fedcd-rounds",
        "FED-CD Figures 4, 7: SHD and edge entropy per round",
        _rounds,
        seed_counts=(1, 5),
    ),
):
    register_recipe(_recipe)

# the figures' recipes register themselves on import
from fedstruct.methods.fedcd import figures  # noqa: E402, F401
