"""fedfci against FedCDnv on the same site files: power on small sites, and overlap.

Usage: ``nice -n 19 python benchmarks/fedfci_power.py [--quick] [--target power overlap]
[--seeds 0 1 2 3 4] [--networks alarm insurance ecoli70 mixed] [--sizes 10 20 ...]
[--mixed-variables 20] [--overlap 0.85] [--max-seconds 600] [--max-memory-gb 4] [--out DIR]``

Issue 50, targets 2 and 3 (results: docs/results/fedfci.md). Every method reads the
same CSV files with ``--site`` and is scored by its own run against the same
``--truth`` graph file (both runs score with
:func:`~fedstruct.graphs.metrics.graph_metrics` after
:func:`~fedstruct.runs.sites.aligned`), one run at a time, each in a child process
(:func:`~fedstruct.runs.contract.execute`, every method's default settings but
``constant_columns=exclude`` for fedfci, FedCDnv's default: a variable constant over
the pooled rows, such as insurance's ``Theft`` in 3,500 rows, otherwise stops the run).

**Power** (target 2): per network and seed, ten sites drawn by fedfci's own sampler
(:class:`~fedstruct.methods.fedfci.sources.SampledSites`: every variable observed,
``n_k`` uniform in [200, 500]); ``mixed`` is its random conditional-Gaussian model
(``--mixed-variables`` variables, half categorical). The integer columns are declared
categorical (``kinds``), as the sampler's own runs read them. The truth is the DAG's
PAG (no latent variable). Methods: fedfci, FedCDnv (TPSS) and FedCDnv-vote, all with
``ci_test=auto`` (fedfci chooses from the pooled kinds and rows, FedCDnv per site from
its own), and the ceiling: one-process FCI on the sites' rows concatenated, with the test
fedfci chose (``pooled`` records whether fedfci's graph equals it).

**Overlap** (target 3): per ``|V|`` of the ``fedcdnv-synthetic`` recipe (FedCDnv's
Figure 5: synthetic Erdős–Rényi networks, 6 clients, 15 % latent, each client observing
85 % of the rest: ``--overlap`` δ, ``n_k`` uniform in [100, 2000]) and seed, FedCDnv's
own federation (:class:`~fedstruct.methods.fedcdnv.sources.VariableSubsetTask`):
its clients' rows as site files, its truth (the PAG over the observed variables) as the graph file.
Methods: fedfci, FedCDnv and FedCDnv-vote, beside FedCDnv's centralised reference (FCI
on as many fresh rows, every observed variable measured). For the pairs that fewer than
two sites measure together (fedfci's ``min_sites``: undecided, left out of its graph)
it also counts the true adjacencies among them and FedCDnv's edges there.

Each run is a child process, stopped past ``--max-seconds`` or ``--max-memory-gb``
(resident) and reported as not finished; the tables average over the seeds where every
run finished and name the others. Writes ``results.json`` (every run's scores) and
``tables.md`` into ``--out``; a run already finished in its folder is read back, not
run again (its wall time from the seed folder's ``wall.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.discovery import fci, make_ci_test
from fedstruct.errors import FedstructWarning
from fedstruct.graphs import Graph, dag_to_pag, read_graph
from fedstruct.graphs.io import write_graph
from fedstruct.graphs.metrics import graph_metrics
from fedstruct.methods.fedcdnv.run import central_reference
from fedstruct.methods.fedcdnv.settings import FedCDnvRun
from fedstruct.methods.fedcdnv.sources import VariableSubsetTask
from fedstruct.methods.fedfci.settings import FedFCIRun
from fedstruct.methods.fedfci.sources import SampledSites
from fedstruct.runs.contract import read_outcome
from fedstruct.runs.sites import aligned

#: The compared runs: label -> (method, settings beyond the files).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "fedfci": ("fedfci", {"constant_columns": "exclude"}),
    "FedCDnv": ("fedcdnv", {}),
    "FedCDnv-vote": ("fedcdnv", {"strategy": "vote"}),
}
SCORES = ("precision_edge", "recall_edge", "f1_edge", "f1_arrowhead")
NETWORKS = ("alarm", "insurance", "ecoli70", "mixed")
SIZES = (10, 20, 30, 40, 50, 60, 80, 100)  # the fedcdnv-synthetic recipe's |V|
#: FedCDnv's default δ, the share of the observed variables each client observes.
DELTA = 0.85
#: fedfci's min_sites: a pair fewer sites measure together is undecided.
MIN_SITES = 2


def write_sites(frames: Sequence[tuple[str, pd.DataFrame]], truth: Graph, folder: Path) -> tuple:
    """Each site's rows as ``folder/<site>.csv`` and the truth as ``folder/truth.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in frames:
        paths.append(str(folder / f"{name}.csv"))
        rows.to_csv(paths[-1], index=False)
    return paths, str(write_graph(truth, folder / "truth.json"))


def run_methods(
    paths: list[str], truth: str, folder: Path, extra: dict[str, Any], limits: Limits
) -> dict[str, dict[str, float]]:
    """Every method of :data:`METHODS` on the files, each in its own process
    (:func:`run_watched`); each run's metrics and wall time (``wall_s``, kept in
    ``folder/wall.json`` for a run read back later), or ``dnf`` (why it was stopped)."""
    walls_file = folder / "wall.json"
    walls = json.loads(walls_file.read_text()) if walls_file.is_file() else {}
    out = {}
    for label, (method, settings) in METHODS.items():
        layers = [{"sites": paths, "truth": truth, **extra, **settings}]
        start = time.perf_counter()
        stopped = run_watched(method, layers, folder / label, limits)
        if stopped is not None:
            walls[label] = time.perf_counter() - start
            out[label] = {"dnf": stopped, "wall_s": walls[label]}
            print(f"    {label:<13} stopped: {stopped}", flush=True)
            continue
        metrics = dict(read_outcome(folder / label).metrics)
        walls.setdefault(label, time.perf_counter() - start)
        metrics["wall_s"] = walls[label]
        print(f"    {label:<13} {_brief(metrics)} ({metrics['wall_s']:.1f} s)", flush=True)
        out[label] = metrics
    walls_file.write_text(json.dumps(walls, indent=1) + "\n")
    return out


@dataclass(frozen=True)
class Limits:
    """What one run may take before it is stopped: wall seconds and resident memory."""

    seconds: float
    memory_gb: float


#: The child's program: one run (a finished one in its folder is read back).
CHILD = (
    "import json, sys, warnings; from pathlib import Path; "
    "from fedstruct.errors import FedstructWarning; "
    "from fedstruct.runs.contract import execute; "
    "warnings.filterwarnings('ignore', category=FedstructWarning); "
    "execute(sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3]), reuse=True)"
)


def run_watched(method: str, layers: list[dict], folder: Path, limits: Limits) -> str | None:
    """Run ``method`` in a child process, stopped (by its id) past ``limits``: ``None``
    when it finished, else why it was stopped (a run whose search explodes must not
    take the shared machine's memory)."""
    command = [sys.executable, "-c", CHILD, method, json.dumps(layers), str(folder)]
    child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    start = time.perf_counter()
    while True:
        try:
            _, errors = child.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.perf_counter() - start
        memory = _resident_gb(child.pid)
        if elapsed > limits.seconds or memory > limits.memory_gb:
            child.kill()
            child.communicate()
            return (
                f"stopped after {elapsed:.0f} s at {memory:.1f} GB resident "
                f"(limits {limits.seconds:.0f} s, {limits.memory_gb:g} GB)"
            )
    if child.returncode != 0:
        raise RuntimeError(f"{method} run in {folder} failed:\n{errors[-3000:]}")
    return None


def _resident_gb(pid: int) -> float:
    """The process's resident memory (``VmRSS``), in GB; 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) / 2**20


def _brief(metrics: dict[str, float]) -> str:
    return " ".join(f"{k}={metrics[k]:.3f}" for k in SCORES if k in metrics)


def chosen_test(metrics: dict[str, float]) -> str:
    """The CI test fedfci chose (its ``ci_test_<name>`` metric), else ``"auto"``."""
    names = (k.removeprefix("ci_test_") for k in metrics if k.startswith("ci_test_"))
    return next(names, "auto")


def power(args: argparse.Namespace, out: Path, limits: Limits) -> list[dict[str, Any]]:
    """Target 2: every network and seed (module docstring)."""
    records = []
    for network, seed in itertools.product(args.networks, args.seeds):
        print(f"power: {network}, seed {seed}", flush=True)
        settings = FedFCIRun(
            network=network,
            seed=seed,
            clients=args.clients,
            min_samples=args.rows[0],
            max_samples=args.rows[1],
            variables=args.mixed_variables,
        )
        source = SampledSites(settings)
        frames = [(c.name, c.rows) for c in source.clients()]
        folder = out / "power" / network / f"seed-{seed}"
        truth = dag_to_pag(source.dag)
        paths, truth_path = write_sites(frames, truth, folder / "sites")
        kinds = {
            col: "categorical" if dtype.kind in "iu" else "continuous"
            for col, dtype in frames[0][1].dtypes.items()
        }
        runs = run_methods(paths, truth_path, folder, {"seed": seed, "kinds": kinds}, limits)
        test = chosen_test(runs["fedfci"])  # "auto" when fedfci did not finish
        start = time.perf_counter()
        ceiling = pooled_fci(pd.concat([f for _, f in frames], ignore_index=True), test, kinds)
        t, g = aligned(truth, ceiling)
        runs["pooled FCI"] = {**graph_metrics(t, g), "wall_s": time.perf_counter() - start}
        if "dnf" not in runs["fedfci"]:
            fed = read_graph(folder / "fedfci" / "graph.json")
            runs["fedfci"]["pooled_agreement"] = float(fed.expand(t.names) == g)
        print(f"    {'pooled FCI':<13} {_brief(runs['pooled FCI'])} ({test})", flush=True)
        rows = [len(f) for _, f in frames]
        records.append({"network": network, "seed": seed, "test": test, "rows": rows, "runs": runs})
    return records


def pooled_fci(rows: pd.DataFrame, test: str, kinds: dict[str, str]) -> Graph:
    """FCI in one process on the concatenated rows (columns constant there left out, as
    fedfci's ``constant_columns=exclude``), with its defaults and the given test."""
    rows = rows.loc[:, rows.nunique() > 1]
    ci = make_ci_test(rows, test, kinds={c: kinds[c] for c in rows.columns})
    return fci(ci, workers=1).graph


def overlap(args: argparse.Namespace, out: Path, limits: Limits) -> list[dict[str, Any]]:
    """Target 3: every ``|V|`` and seed (module docstring)."""
    records = []
    for size, seed in itertools.product(args.sizes, args.seeds):
        print(f"overlap: |V| = {size}, seed {seed}", flush=True)
        settings = FedCDnvRun(network="synthetic", variables=size, seed=seed, overlap=args.overlap)
        task = VariableSubsetTask(settings)
        frames = [(c.name, c.rows) for c in task.clients()]
        delta = "" if args.overlap == DELTA else f"-delta{args.overlap:g}"
        folder = out / "overlap" / f"v{size}{delta}" / f"seed-{seed}"
        paths, truth_path = write_sites(frames, task.truth, folder / "sites")
        runs = run_methods(paths, truth_path, folder, {"seed": seed}, limits)
        start = time.perf_counter()
        central = central_reference(settings, task.clients(), task)
        runs["centralised FCI"] = {
            **graph_metrics(task.truth, central),
            "wall_s": time.perf_counter() - start,
        }
        print(f"    {'centralised':<13} {_brief(runs['centralised FCI'])}", flush=True)
        uncovered = pairs_below(task.split.clients, task.truth.names, MIN_SITES)
        undecided = runs["fedfci"].get("undecided_pairs")
        if undecided is not None and undecided != len(uncovered):
            print(f"    fedfci: {undecided:g} undecided pairs, {len(uncovered)} uncovered")
        fedcdnv = read_graph(folder / "FedCDnv" / "graph.json")
        records.append(
            {
                "variables": size,
                "seed": seed,
                "observed": len(task.truth.names),
                "pairs": len(task.truth.names) * (len(task.truth.names) - 1) // 2,
                "uncovered": len(uncovered),
                "uncovered_true": sum(task.truth.is_adjacent(a, b) for a, b in uncovered),
                "fedcdnv_there": sum(_adjacent(fedcdnv, a, b) for a, b in uncovered),
                "fedcdnv_there_true": sum(
                    _adjacent(fedcdnv, a, b) and task.truth.is_adjacent(a, b) for a, b in uncovered
                ),
                "runs": runs,
            }
        )
    return records


def pairs_below(
    sites: Sequence[Sequence[str]], names: Sequence[str], count: int
) -> list[tuple[str, str]]:
    """The pairs of ``names`` that fewer than ``count`` sites measure together."""
    return [
        (a, b)
        for a, b in itertools.combinations(names, 2)
        if sum(a in s and b in s for s in map(set, sites)) < count
    ]


def _adjacent(graph: Graph, a: str, b: str) -> bool:
    return a in graph and b in graph and graph.is_adjacent(a, b)


def mean_std(values: Sequence[float]) -> str:
    """``mean ± std`` (population std, as the FedCDnv recipes report)."""
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}"


def finished(cell: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The seeds of ``cell`` where every run finished, and a note naming the others."""
    done = [r for r in cell if not any("dnf" in run for run in r["runs"].values())]
    stopped = [
        f"seed {r['seed']}: {label} {run['dnf']}"
        for r in cell
        for label, run in r["runs"].items()
        if "dnf" in run
    ]
    return done, "; ".join(stopped)


def power_table(records: list[dict[str, Any]]) -> str:
    """One row per network and method: the scores' mean ± std over the seeds where
    every run finished (notes below the table name the others)."""
    lines = [
        "| network | method | P-edge | R-edge | F1-edge | F1-arrowhead | s/run |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for network in dict.fromkeys(r["network"] for r in records):
        cell, note = finished([r for r in records if r["network"] == network])
        if note:
            notes.append(f"{network}: {note}")
        if not cell:
            continue
        for label in [*METHODS, "pooled FCI"]:
            runs = [r["runs"][label] for r in cell]
            name = label
            if label == "fedfci":
                agree = int(sum(r["pooled_agreement"] for r in runs))
                name = f"fedfci (= pooled: {agree}/{len(runs)})"
            elif label == "pooled FCI":
                name = f"pooled FCI ({', '.join(sorted({r['test'] for r in cell}))}): ceiling"
            scores = " | ".join(mean_std([r[k] for r in runs]) for k in SCORES)
            wall = np.mean([r["wall_s"] for r in runs])
            lines.append(f"| {network} ({len(cell)} seeds) | {name} | {scores} | {wall:.1f} |")
    return "\n".join(lines + [f"\nNot finished: {n}" for n in notes])


def overlap_tables(records: list[dict[str, Any]]) -> str:
    """The scores per ``|V|`` and method over the seeds where every run finished, then
    the pairs fewer than two sites measure together (over every seed)."""
    lines = [
        "| \\|V\\| | method | P-edge | R-edge | F1-edge | F1-arrowhead | undecided pairs | s/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    sizes = dict.fromkeys(r["variables"] for r in records)
    for size in sizes:
        cell, note = finished([r for r in records if r["variables"] == size])
        if note:
            notes.append(f"|V| = {size}: {note}")
        for label in [*METHODS, "centralised FCI"] if cell else []:
            runs = [r["runs"][label] for r in cell]
            scores = " | ".join(mean_std([r[k] for r in runs]) for k in SCORES)
            undecided = (
                f"{np.mean([r['undecided_pairs'] for r in runs]):.1f}" if label == "fedfci" else ""
            )
            wall = np.mean([r["wall_s"] for r in runs])
            lines.append(
                f"| {size} ({len(cell)} seeds) | {label} | {scores} | {undecided} | {wall:.1f} |"
            )
    lines += [f"\nNot finished: {n}" for n in notes]
    lines += [
        "",
        "| \\|V\\| | seeds | observed (mean) | pairs (sum over the seeds, so are the "
        "next) | measured together by < 2 sites | true adjacencies among them | FedCDnv's "
        "edges there (true) |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        cell = [r for r in records if r["variables"] == size]

        def total(key: str, cell: list[dict[str, Any]] = cell) -> int:
            return sum(r[key] for r in cell)

        lines.append(
            f"| {size} | {len(cell)} | {np.mean([r['observed'] for r in cell]):.1f} | "
            f"{total('pairs')} | {total('uncovered')} | "
            f"{total('uncovered_true')} | {total('fedcdnv_there')} "
            f"({total('fedcdnv_there_true')}) |"
        )
    return "\n".join(lines)


def machine() -> dict[str, str]:
    """What ran it: cores, CPU, Python, date."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                  if line.startswith("Model name")), platform.processor())  # fmt: skip
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "date": date.today().isoformat(),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny version (about a minute)")
    parser.add_argument("--target", nargs="+", choices=("power", "overlap"),
                        default=["power", "overlap"])  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=None)
    parser.add_argument("--networks", nargs="+", default=None)
    parser.add_argument("--sizes", nargs="+", type=int, default=None, help="overlap's |V|")
    parser.add_argument("--overlap", type=float, default=DELTA, help="overlap's δ")
    parser.add_argument("--clients", type=int, default=10, help="power's sites")
    parser.add_argument("--rows", nargs=2, type=int, default=(200, 500), help="power's n_k range")
    parser.add_argument("--mixed-variables", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("fedfci-power"))
    parser.add_argument("--max-seconds", type=float, default=600.0, help="per run")
    parser.add_argument("--max-memory-gb", type=float, default=4.0, help="per run, resident")
    args = parser.parse_args(argv)
    quick = args.quick
    args.seeds = args.seeds or ([0] if quick else [0, 1, 2, 3, 4])
    args.networks = args.networks or (["alarm", "mixed"] if quick else list(NETWORKS))
    args.sizes = args.sizes or ([10] if quick else list(SIZES))
    if quick:
        args.mixed_variables = min(args.mixed_variables, 10)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    warnings.filterwarnings("ignore", category=FedstructWarning)  # sites' small-sample notes
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results: dict[str, Any] = {"command": " ".join(sys.argv), "machine": machine()}
    tables = []
    limits = Limits(args.max_seconds, args.max_memory_gb)
    if "power" in args.target:
        results["power"] = power(args, args.out, limits)
        tables.append("## Power\n\n" + power_table(results["power"]))
    if "overlap" in args.target:
        results["overlap"] = overlap(args, args.out, limits)
        tables.append("## Overlap\n\n" + overlap_tables(results["overlap"]))
    results["wall_s"] = time.perf_counter() - start
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = "\n\n".join(tables) + f"\n\nwall time {results['wall_s']:.0f} s\n"
    (args.out / "tables.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
