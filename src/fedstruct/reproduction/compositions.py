"""Compositions: a graph discovered across the federation feeds a structured model.

Two recipes (issue 21). Each runs FedCDnv on the very clients of a structured model's
federation, on their own columns only (non-identical variable sets, the setting
FedCDnv is made for; a column constant at a client is treated as unobserved there),
then runs the model on the same clients (the seed fixes them) under several graphs:

``discover-then-fcm``, on F-CMs' concept federation (App. D.1: each client supervises
a few concepts, some the task). The discovery sees the clients' concept and task
columns (no inputs). F-CMs (the settings' model, C2BM) then runs with

* ``true graph``: the benchmark's DAG, given (``--graph``);
* ``client sub-graphs``: the paper's setting, each client proposing its true
  sub-graph and the server voting;
* ``discovered``: FedCDnv's PAG, given (one DAG of its class, bidirected edges
  dropped: :func:`~fedstruct.graphs.pag.dag_member`), and ``discovered, oriented``:
  the same with the bidirected edges oriented (``bidirected = orient``);
* ``local graphs``: each client proposing what it learns alone (its FCI PAG on its
  own columns, ``client_graphs = fci``) and the server voting;
* ``no graph``: the flat CBM.

Columns: task accuracy, concept accuracy, task accuracy after intervening on the
concepts of levels 1 and 2 (``task_accuracy_level_k``).

``discover-then-fedngm``, on FedNGM's synthetic federation (a mixed-type SCM with a
known graph; clients over-represent sub-populations and keep private variables).
The discovery sees each client's training rows with the Fisher-z test (categorical
codes read as numbers: an approximation for the mixed columns), once on all of each
client's columns and once on the common ones only (the clients' private variables
then act as latent variables of the common ones, as they do for FedNGM). FedNGM then
runs with the ``true graph``, the ``discovered`` and the ``discovered on common``
graphs given (their moral graphs, ``graph_rule = moral``), its own ``graphical
lasso`` graphs merged (the paper), and the ``complete graph`` (no structure).
Columns: the worst ratio of the global model's error to a client's own on the
client's rows, the global model's public-test error per target kind, its samples'
covariance error, the mean stitching gain.

Both tables add the discovered graph's SHD to the truth over the variables it covers
(``discovered_shd``): to the true DAG's PAG (F-CMs' networks), or, between
dependency graphs, to the true conditional-independence graph (FedNGM's synthetic
data keep that one). :data:`QUICK` sizes finish in about a minute each. The
discoveries run first, then every model run, one per available CPU at a time
(``--jobs``, :func:`~fedstruct.runs.compare.execute_all`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.data.checks import integer_at_least
from fedstruct.data.client import ClientData
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import write_graph
from fedstruct.graphs.metrics import shd
from fedstruct.graphs.pag import dag_to_pag
from fedstruct.graphs.undirected import dependency_graph, undirected
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.methods.fcm.sources import ConceptSource
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedngm.settings import FedNGMRun
from fedstruct.methods.fedngm.sources import SubpopulationSource
from fedstruct.runs.compare import (
    Comparison,
    available_cpus,
    count_done,
    execute_all,
    variant_folder,
    write_results,
)
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["FCM_GRAPHS", "FEDNGM_GRAPHS", "QUICK", "discover", "discovery_clients"]

#: Per recipe, the settings of ``--quick`` runs (one case, one seed).
QUICK: dict[str, dict[str, Any]] = {
    "fcm": {"samples": 4000, "rounds": 20, "max_epochs": 20},
    "fedngm": {"variables": 12, "samples": 6000, "epochs": 15, "fidelity_samples": 1000},
}
#: F-CMs' graphs (module docstring); ``{truth}`` and ``{found}`` name the case's files.
FCM_GRAPHS: dict[str, dict[str, str]] = {
    "true graph": {"graph": "{truth}"},
    "client sub-graphs": {},
    "discovered": {"graph": "{found}"},
    "discovered, oriented": {"graph": "{found}", "bidirected": "orient"},
    "local graphs": {"client_graphs": "fci"},
    "no graph": {"model": "cbm"},
}
#: FedNGM's graphs (module docstring); ``{complete}``: the complete graph's file.
FEDNGM_GRAPHS: dict[str, dict[str, str]] = {
    "true graph": {"graph": "{truth}"},
    "discovered": {"graph": "{found}"},
    "discovered on common": {"graph": "{found_common}"},
    "graphical lasso": {},
    "complete graph": {"graph": "{complete}"},
}
_FCM_METRICS = ["task_accuracy", "concept_accuracy", "task_accuracy_level_1",
                "task_accuracy_level_2"]  # fmt: skip
_FEDNGM_METRICS = ["worst_own_ratio", "continuous_global_public_mae",
                   "binary_global_public_auc", "fidelity_global", "stitch_gain"]  # fmt: skip


def discovery_clients(
    clients: Sequence[ClientData], columns: str = "supervised"
) -> list[ClientData]:
    """What the discovery sees of each client: its ``supervised`` columns (F-CMs:
    concepts and task, no inputs) or ``all`` of them (FedNGM)."""
    return [
        ClientData(c.name, c.rows[list(c.supervised)].reset_index(drop=True))
        if columns == "supervised"
        else ClientData(c.name, c.rows.reset_index(drop=True))
        for c in clients
    ]


def discover(
    clients: Sequence[ClientData], truth: Graph, folder: Path, *, seed: int, ci_test: str = "g2"
) -> dict[str, Any]:
    """Run FedCDnv on ``clients``; write the truth, the discovered PAG and the complete
    graph over the truth's variables as graph.json files into ``folder``.

    Returns
    -------
    dict
        ``truth``, ``found``, ``complete`` (the files) and ``shd`` over the variables
        the discovery saw: to the PAG of a DAG truth with the others latent, else (an
        undirected truth) between the discovered PAG's dependency graph and the truth.
    """
    found = FedCDnv(seed=seed, ci_test=ci_test, constant_columns="exclude").fit(clients)
    folder.mkdir(parents=True, exist_ok=True)
    files = {"truth": folder / "truth.json", "found": folder / "graph.json",
             "complete": folder / "complete.json"}  # fmt: skip
    write_graph(truth, files["truth"])
    write_graph(found.graph_, files["found"])
    n = len(truth.names)
    write_graph(undirected(truth.names, ~np.eye(n, dtype=bool)), files["complete"])
    names = [v for v in truth.names if v in found.graph_.names]
    if truth.is_dag():  # the PAG of the truth's marginal over the variables seen
        unseen = [v for v in truth.names if v not in names]
        distance = shd(dag_to_pag(truth, unseen), found.graph_.restrict(names))
    else:
        distance = shd(truth.restrict(names), dependency_graph(found.graph_).restrict(names))
    return {**files, "shd": float(distance)}


def _fcm_case(settings: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    concepts = ConceptSource(FCMRun(**settings))
    return discover(discovery_clients(concepts.partition.clients), concepts.truth, folder,
                    seed=int(settings["seed"]))  # fmt: skip


def _fedngm_case(settings: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    source = SubpopulationSource(FedNGMRun(**settings))
    fed, seed, truth = source.federation, int(settings["seed"]), source.truth
    seen = discovery_clients(fed.clients, "all")
    found = discover(seen, truth, folder / "all", seed=seed, ci_test="fisherz")
    common = [ClientData(c.name, c.rows[list(fed.common)]) for c in seen]
    on_common = discover(common, truth, folder / "common", seed=seed, ci_test="fisherz")
    return {**found, "found_common": on_common["found"]}


def _compose(
    method: str,
    cases: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    graphs: Mapping[str, Mapping[str, str]],
    discover_case: Callable[[Mapping[str, Any], Path], dict[str, Any]],
    out: Path,
    jobs: int | None,
) -> Comparison:
    """For every case and seed: the discovery, then ``method`` under every graph
    (all the method's runs ``jobs`` at a time; default: one per available CPU)."""
    jobs = available_cpus() if jobs is None else integer_at_least(jobs, "jobs")
    planned = []  # (label, discovered SHD, settings layers, folder) of every run
    with count_done("discoveries", len(cases) * len(seeds)) as discovered:
        for case, settings in cases.items():
            for seed in seeds:
                folder = out / case / f"discovery-{seed}"
                found = discover_case({**settings, "seed": seed}, folder)
                discovered()
                for graph, changes in graphs.items():
                    label = f"{case}: {graph}"
                    given = {k: v.format(**found) for k, v in changes.items()}
                    layers = [dict(settings), given, {"seed": seed}]
                    planned.append(
                        (label, found["shd"], layers, variant_folder(out / case, label, seed))
                    )
    outcomes = execute_all(method, [(layers, folder) for _, _, layers, folder in planned],
                           jobs=jobs)  # fmt: skip
    comparison = Comparison(method, {})
    for (label, distance, _, _), outcome in zip(planned, outcomes, strict=True):
        outcome.metrics["discovered_shd"] = distance
        comparison.runs.setdefault(label, []).append(outcome)
    return comparison


def _title(what: str, seeds: Sequence[int]) -> str:
    return f"{what} ({len(seeds)} seed{'s' * (len(seeds) > 1)})"


def _discover_then_fcm(
    quick: bool, out: Path, seeds: range, jobs: int | None = None
) -> RecipeReport:
    """F-CMs on discovered graphs (module docstring): asia, sachs, alarm, insurance."""
    networks = ("asia",) if quick else ("asia", "sachs", "alarm", "insurance")
    extra = QUICK["fcm"] if quick else {}
    cases = {n: {"network": n, **extra} for n in networks}
    comparison = _compose("fcm", cases, seeds, FCM_GRAPHS, _fcm_case, out, jobs)
    metrics = [*_FCM_METRICS, "discovered_shd"]
    table = write_results(out, comparison.rows(metrics), metrics,
                          _title("F-CMs on discovered graphs", seeds))  # fmt: skip
    return RecipeReport(table, out)


def _discover_then_fedngm(
    quick: bool, out: Path, seeds: range, jobs: int | None = None
) -> RecipeReport:
    """FedNGM on discovered graphs (module docstring): the synthetic federation."""
    cases = {"synthetic": {"dataset": "synthetic", **(QUICK["fedngm"] if quick else {})}}
    comparison = _compose("fedngm", cases, seeds, FEDNGM_GRAPHS, _fedngm_case, out, jobs)
    for outcomes in comparison.runs.values():
        for outcome in outcomes:
            gains = [v for k, v in outcome.metrics.items()
                     if k.startswith("stitch_gain_client-") and k.count("_") == 2]  # fmt: skip
            outcome.metrics["stitch_gain"] = float(np.mean(gains)) if gains else float("nan")
    metrics = [*_FEDNGM_METRICS, "discovered_shd"]
    table = write_results(out, comparison.rows(metrics), metrics,
                          _title("FedNGM on discovered graphs", seeds))  # fmt: skip
    return RecipeReport(table, out)


for _recipe in (
    Recipe(
        "discover-then-fcm",
        "FedCDnv's graph feeds F-CMs: true, client, discovered, local and no graph",
        _discover_then_fcm,
        options=("jobs",),
        seed_counts=(1, 3),
    ),
    Recipe(
        "discover-then-fedngm",
        "FedCDnv's graph feeds FedNGM: true, discovered, graphical-lasso, complete graph",
        _discover_then_fedngm,
        options=("jobs",),
        seed_counts=(1, 3),
    ),
):
    register_recipe(_recipe)
