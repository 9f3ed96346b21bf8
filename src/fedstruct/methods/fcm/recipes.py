"""Recipes reproducing the F-CMs paper's results (Table 1, Figures 2-6 and 9, Tables 4-8).

Each writes ``results.json``, ``results.md`` and plots into its folder, one sub-folder
per run. ``--quick`` runs asia only, one seed, at most 30 rounds (or epochs), on 4000
rows: minutes on 2 cores. The full recipes follow App. D.3 (200 rounds or epochs,
early stopping with patience 10, 5 seeds). Every recipe that federates gives a share of
the clients a perturbed graph, as the paper's experiments do (App. D.1,
:data:`PERTURBATION`); ``fcm-robustness`` sweeps those shares itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.drawing.plots import plot_bars, plot_curves
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import pair_disagreement
from fedstruct.methods.fcm.config import INTERVENTION_POLICIES
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.methods.fcm.sources import ConceptSource
from fedstruct.runs.compare import Comparison, compare_variants, seed_count, write_results
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = [
    "CONCEPT_MODELS",
    "FREEZING_MODELS",
    "MODELS",
    "NETWORKS",
    "PERTURBATION",
    "REGIME_LABELS",
]

#: Table 1's benchmark networks (SIIM-Pneumothorax needs CXR images we do not ship).
NETWORKS = ("asia", "sachs", "alarm", "insurance", "hailfinder")
#: The instantiations and the opaque baseline (§4.3, App. C).
MODELS = ("opaque", "cbm", "cem", "cgm", "c2bm")
#: The models that predict concepts, so that a concept can be intervened on (§5.2,
#: App. E.2.2's Figures 5-6 compare these four).
CONCEPT_MODELS = ("cbm", "cem", "cgm", "c2bm")
#: Tables 7-8's two representative instantiations (App. E.5.2).
FREEZING_MODELS = ("c2bm", "cem")
#: The training regimes of Table 1, in the paper's order.
REGIME_LABELS = {"central": "Cent.", "local": "Loc.", "sfcm": "S-F-CMs", "fcm": "F-CMs"}
#: Settings of ``--quick`` runs.
QUICK = {"samples": 4000, "rounds": 30, "max_epochs": 30}
#: The clients' graphs of the paper's experiments (App. D.1: "we perturb each G^(k) by
#: modifying a fraction p of its edges for a percentage r of clients", values left open
#: there): r = p = 10%, the values of the reference code's configuration for every
#: network (francescoTheSantis/F-CMs, ``conf/test_<network>.yaml``,
#: ``perc_clients_alterations: 0.1``, ``graph_alteration_prob: 0.1``). ``fedstruct run
#: fcm`` itself keeps the true sub-graphs (both 0).
PERTURBATION = {"perturbed_clients": 0.1, "perturbed_edges": 0.1}


def _common(quick: bool) -> dict[str, Any]:
    """The settings every run of a recipe shares at this size."""
    return paper_protocol(QUICK if quick else {})


def paper_protocol(common: dict[str, Any]) -> dict[str, Any]:
    """``common`` over :data:`PERTURBATION`: the shared settings of a recipe's runs
    (a setting given in ``common`` wins, e.g. ``perturbed_clients=0`` for true graphs)."""
    return {**PERTURBATION, **common}


def _grid(
    networks: tuple[str, ...], models: tuple[str, ...], regimes: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    return {
        f"{n} | {m} | {r}": {"network": n, "model": m, "regime": r}
        for n in networks
        for m in models
        for r in regimes
    }


def _table1(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 1 (and Table 3's concept accuracy): every regime and model per network."""
    networks = ("asia",) if quick else NETWORKS
    models = ("cbm", "c2bm") if quick else MODELS
    return table_one(networks, models, seeds, _common(quick), out)


#: Table 1's columns: accuracy and coverage (the paper's), then the concept metrics
#: (docs/fcm.md, "Concept metrics"; the opaque model has no CaCE nor intervention AUC).
TABLE1_METRICS = ["task_accuracy", "concept_accuracy", "concept_coverage",
                  "cas", "ois", "nis", "cace_mean", "intervention_auc"]  # fmt: skip


def table_one(
    networks: tuple[str, ...],
    models: tuple[str, ...],
    seeds: range,
    common: dict[str, Any],
    out: Path,
) -> RecipeReport:
    """Run every regime of ``models`` on ``networks`` (the paper's client graphs under
    ``common``, :func:`paper_protocol`); plot task accuracy and tabulate
    :data:`TABLE1_METRICS` (the body of ``fcm-table1``, callable on a subset for runs
    by hand)."""
    comparison = compare_variants(
        "fcm", _grid(networks, models, tuple(REGIME_LABELS)), seeds, out,
        common=paper_protocol(common), progress=False,
    )  # fmt: skip
    plot_bars(
        {
            n: {
                f"{REGIME_LABELS[r]} {m}": comparison.mean(f"{n} | {m} | {r}", "task_accuracy")
                for m in models
                for r in REGIME_LABELS
            }
            for n in networks
        },
        out / "task_accuracy.png",
        title="F-CMs Table 1: task accuracy",
        ylabel="task accuracy",
    )
    table = write_results(
        out,
        comparison.rows(TABLE1_METRICS),
        TABLE1_METRICS,
        f"F-CMs Table 1 ({seed_count(seeds)})",
    )
    return RecipeReport(table, out)


def _level_curves(comparison: Comparison, variant: str, prefix: str) -> list[tuple[float, float]]:
    runs = comparison.runs[variant]
    levels = sorted({_by_level(k)[1] for o in runs for k in o.metrics if k.startswith(prefix)})
    return [
        (float(lv), float(np.nanmean([o.metrics.get(f"{prefix}{lv}", np.nan) for o in runs])))
        for lv in levels
    ]


#: Prefix of the points of a run's intervention curve under its policy.
POLICY_CURVE = "intervention_task_accuracy_"


def policy_label(network: str, model: str, policy: str) -> str:
    """The variant of F-CMs under ``policy`` (``graph_level``: the regime's own run)."""
    base = f"{network} | {model} | fcm"
    return base if policy == "graph_level" else f"{base} | {policy}"


def _by_level(metric: str) -> tuple[str, int]:
    """Sort key of a ``NAME_level_L`` metric: by name, then by level as a number
    (``level_2`` before ``level_10``)."""
    name, level = metric.rsplit("_", 1)
    return name, int(level)


def _interventions(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figures 2 and 4-6: label and task accuracy after interventions by graph level,
    and F-CMs' task accuracy after ``t`` concepts under every intervention policy
    (:data:`~fedstruct.methods.fcm.config.INTERVENTION_POLICIES`, one curve each).

    Full size: every network and every model that predicts concepts
    (:data:`CONCEPT_MODELS`; the opaque baseline has no concept to intervene on), every
    regime, 3 seeds (§5.2); ``--quick``: C2BM on asia, one seed.
    """
    common = _common(quick)
    networks = ("asia",) if quick else NETWORKS
    models = ("c2bm",) if quick else CONCEPT_MODELS
    return intervention_curves(networks, models, seeds, common, out)


def intervention_curves(
    networks: tuple[str, ...],
    models: tuple[str, ...],
    seeds: range,
    common: dict[str, Any],
    out: Path,
) -> RecipeReport:
    """Run every regime of ``models`` on ``networks`` (the paper's client graphs under
    ``common``, :func:`paper_protocol`); plot and tabulate the accuracy after
    interventions by level (the body of ``fcm-interventions``, callable on a subset for
    runs by hand)."""
    common = paper_protocol(common)
    grid = _grid(networks, models, tuple(REGIME_LABELS))
    grid.update(
        {
            policy_label(n, m, p): {"network": n, "model": m, "regime": "fcm",
                                    "intervention_policy": p}
            for n in networks
            for m in models
            for p in INTERVENTION_POLICIES[1:]
        }
    )  # fmt: skip
    comparison = compare_variants("fcm", grid, seeds, out, common=common, progress=False)
    for n in networks:
        for m in models:
            plot_curves(
                {
                    p: _level_curves(comparison, policy_label(n, m, p), POLICY_CURVE)
                    for p in INTERVENTION_POLICIES
                },
                out / f"policies_{n}_{m}.png",
                title=f"F-CMs task accuracy by intervention policy: {m} on {n}",
                xlabel="concepts intervened on",
                ylabel="task accuracy",
            )
            for metric in ("label_accuracy", "task_accuracy"):
                plot_curves(
                    {
                        REGIME_LABELS[r]: _level_curves(
                            comparison, f"{n} | {m} | {r}", f"{metric}_level_"
                        )
                        for r in REGIME_LABELS
                    },
                    out / f"{metric}_{n}_{m}.png",
                    title=f"{metric.replace('_', ' ')} after interventions: {m} on {n}",
                    xlabel="intervened levels",
                    ylabel=metric.replace("_", " "),
                )
    found = {k for runs in comparison.runs.values() for o in runs for k in o.metrics}
    metrics = ["intervention_auc", *sorted((k for k in found if "_level_" in k), key=_by_level)]
    table = write_results(
        out, comparison.rows(metrics), metrics, f"F-CMs interventions ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


def _convergence(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 3 and Table 4: validation task loss per round; parameters changed."""
    common = _common(quick)
    networks = ("asia",) if quick else ("asia", "hailfinder")
    models = ("c2bm",) if quick else MODELS
    regimes = ("fcm", "sfcm", "sfcm-reinit")
    comparison = compare_variants(
        "fcm", _grid(networks, models, regimes), seeds, out, common=common, progress=False
    )
    for n in networks:
        for m in models:
            curves = comparison.curves("val_task_loss")
            plot_curves(
                {r: curves[f"{n} | {m} | {r}"] for r in regimes},
                out / f"val_task_loss_{n}_{m}.png",
                title=f"Validation task loss: {m} on {n}",
                xlabel="round",
                ylabel="validation task loss",
            )
    metrics = ["params_changed_fraction", "params_growth", "task_accuracy", "rounds_run"]
    table = write_results(
        out, comparison.rows(metrics), metrics, f"F-CMs convergence ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


def _freezing(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Tables 7-8 (App. E.5.2): F-CMs with and without freezing unsupervised modules.

    Full size: every network, C2BM and CEM, 5 seeds; ``--quick``: C2BM on asia, one seed.
    """
    common = _common(quick)
    networks = ("asia",) if quick else NETWORKS
    models = ("c2bm",) if quick else FREEZING_MODELS
    return freezing_table(networks, models, seeds, common, out)


def freezing_label(network: str, model: str, freeze: bool) -> str:
    """The variant name of one cell of Tables 7-8 (``asia | c2bm | freezing yes``)."""
    return f"{network} | {model} | freezing {'yes' if freeze else 'no'}"


def freezing_table(
    networks: tuple[str, ...],
    models: tuple[str, ...],
    seeds: range,
    common: dict[str, Any],
    out: Path,
) -> RecipeReport:
    """F-CMs (regime ``fcm``) with ``freeze_unsupervised`` off ("No") and on ("Yes",
    the default) per network and model, the paper's client graphs under ``common``
    (:func:`paper_protocol`): task and concept accuracy (the body of ``fcm-freezing``,
    callable on a subset for runs by hand)."""
    common = paper_protocol(common)
    variants = {
        freezing_label(n, m, f): {"network": n, "model": m, "regime": "fcm",
                                  "freeze_unsupervised": f}
        for n in networks
        for m in models
        for f in (False, True)
    }  # fmt: skip
    comparison = compare_variants("fcm", variants, seeds, out, common=common, progress=False)
    plot_bars(
        {
            n: {
                f"{m} freezing {'yes' if f else 'no'}": comparison.mean(
                    freezing_label(n, m, f), "task_accuracy"
                )
                for m in models
                for f in (False, True)
            }
            for n in networks
        },
        out / "task_accuracy.png",
        title="F-CMs Tables 7-8: selective freezing",
        ylabel="task accuracy",
    )
    metrics = ["task_accuracy", "concept_accuracy", "rounds_run"]
    table = write_results(
        out, comparison.rows(metrics), metrics, f"F-CMs selective freezing ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


#: Rounds a client plans to train in under DP: about half of a 60-round run (10 of 20
#: clients per round). The budget is spent over these; the noise is calibrated to them.
DP_ROUNDS = 30


def _dp(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 5: DP-SGD at every client, ε accounted over the whole run (``DP_ROUNDS``)."""
    common = _common(quick)
    models = ("cbm",) if quick else MODELS
    epsilons = (10.0, 1.0) if quick else (10.0, 5.0, 1.0)
    variants = {
        f"{m} | eps {e:g}": {"network": "asia", "model": m, "dp_epsilon": e, "dp_rounds": DP_ROUNDS}
        for m in models
        for e in epsilons
    }
    comparison = compare_variants("fcm", variants, seeds, out, common=common, progress=False)
    metrics = ["task_accuracy", "concept_accuracy", "epsilon", "rounds_run"]
    table = write_results(
        out, comparison.rows(metrics), metrics, f"F-CMs with DP-SGD ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


def _clients(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Table 6: the same data spread over K = 10, 20, 50, 100 clients."""
    common = _common(quick)
    models = ("cbm",) if quick else MODELS
    sizes = (10, 20) if quick else (10, 20, 50, 100)
    variants = {
        f"{m} | K={k}": {"network": "asia", "model": m, "clients": k, "initial_clients": k // 2}
        for m in models
        for k in sizes
    }
    comparison = compare_variants("fcm", variants, seeds, out, common=common, progress=False)
    metrics = ["task_accuracy", "concept_accuracy"]
    table = write_results(
        out, comparison.rows(metrics), metrics, f"F-CMs by number of clients ({seed_count(seeds)})"
    )
    return RecipeReport(table, out)


def _robustness(quick: bool, out: Path, seeds: range) -> RecipeReport:
    """Figure 9 (App. E.6): DiffPairs of the aggregated DAG under corrupted client graphs.

    200 clients (100 initial, 100 late). The graph only depends on what the clients
    report, so the recipe applies the server's own aggregation
    (:func:`~fedstruct.methods.fcm.aggregate_graphs`) to the reported graphs: every
    client's for F-CMs (monotone memory), the initial cohort's for S-F-CMs (fixed after
    round 1); Localized is the mean over clients of their own graph's DiffPairs.
    """
    from fedstruct.methods.fcm import aggregate_graphs  # torch: when run, not when listed

    networks = ("asia",) if quick else ("asia", "sachs", "alarm", "insurance")
    shares = (0.0, 0.5, 1.0) if quick else (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    alterations = (0.3, 0.9) if quick else (0.3, 0.6, 0.9)
    rows = []
    curves: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for n in networks:
        for alter in alterations:
            for share in shares:
                values: dict[str, list[float]] = {"F-CMs": [], "S-F-CMs": [], "Loc.": []}
                for seed in seeds:
                    s = FCMRun(network=n, clients=200, initial_clients=100, seed=seed,
                               perturbed_clients=share, perturbed_edges=alter,
                               samples=4000 if quick else 0)  # fmt: skip
                    concepts = ConceptSource(s)
                    data, part = concepts.data, concepts.partition
                    reports = {c.name: (c.graph, float(c.n_rows)) for c in part.clients}
                    early = {c.name: reports[c.name] for c in part.initial}
                    for label, chosen in (("F-CMs", reports), ("S-F-CMs", early)):
                        graph = aggregate_graphs(chosen, data.graph.names, seed)
                        values[label].append(pair_disagreement(data.graph, graph))
                    values["Loc."].append(
                        float(np.mean([_local_pairs(data.graph, c.graph) for c in part.clients]))
                    )
                for label, v in values.items():
                    key = f"{n} | {label} | graph alteration {alter:g}"
                    curves.setdefault(f"{n} {alter:g}", {}).setdefault(label, []).append(
                        (share, float(np.mean(v)))
                    )
                    rows.append({"name": f"{key} | clients altered {share:g}",
                                 "diff_pairs": float(np.mean(v)),
                                 "diff_pairs_std": float(np.std(v))})  # fmt: skip
    for key, series in curves.items():
        plot_curves(
            series,
            out / f"diff_pairs_{key.replace(' ', '_')}.png",
            title=f"DiffPairs, {key.split()[0]}, {float(key.split()[1]):.0%} of edges altered",
            xlabel="share of clients altered",
            ylabel="DiffPairs",
        )
    table = write_results(out, rows, ["diff_pairs"], f"F-CMs robustness ({seed_count(seeds)})")
    return RecipeReport(table, out)


def _local_pairs(truth: Graph, own: Graph | None) -> float:
    """DiffPairs of one client's graph against the truth, over the whole variable set."""
    if own is None:
        return float(pair_disagreement(truth, Graph.empty(truth.names)))
    return float(pair_disagreement(truth, own.expand(truth.names)))


for _recipe in (
    Recipe("fcm-table1", "F-CMs Table 1: task accuracy and coverage, every regime", _table1,
           seed_counts=(1, 5)),
    Recipe("fcm-interventions", "F-CMs Figs. 2, 4-6: accuracy after interventions", _interventions,
           seed_counts=(1, 3)),
    Recipe("fcm-convergence", "F-CMs Figure 3, Table 4: convergence, params changed", _convergence,
           seed_counts=(1, 5)),
    Recipe("fcm-dp", "F-CMs Table 5: DP-SGD with ε over the whole run", _dp, seed_counts=(1, 5)),
    Recipe("fcm-clients", "F-CMs Table 6: 10 to 100 clients", _clients, seed_counts=(1, 5)),
    Recipe("fcm-robustness", "F-CMs Figure 9: DiffPairs, corrupted client graphs", _robustness,
           seed_counts=(1, 3)),
    Recipe("fcm-freezing", "F-CMs Tables 7-8: freezing unsupervised modules", _freezing,
           seed_counts=(1, 5)),
):  # fmt: skip
    register_recipe(_recipe)
