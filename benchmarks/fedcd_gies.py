"""FED-CD Table 1's GIES row, run with the `gies` package on Table 1's own data.

The FED-CD paper's Table 1 (taken from ENCO's baselines) has rows for GIES, IGSP and
DCDI that fedstruct's ``fedcd-table1`` recipe does not run. Of the three, only GIES
has a maintained, installable implementation that runs here: ``gies`` on PyPI (Juan
L. Gamella's Python port of Hauser & Bühlmann's GIES with the Gaussian BIC score,
numpy only). IGSP's packages (``causaldag``, ``graphical-model-learning``) are not on
the registry this machine reaches, and DCDI and SDI (Fig. 5) are research code on
GitHub, not packaged (docs/results/fedcd.md, "Table 1's other baselines").

Three steps, because ``gies`` lives in a benchmark environment, never in fedstruct's
dependencies:

1. ``save`` (fedstruct's environment): for each graph and seed, the rows Table 1's
   recipe gives its runs (25,000 observational rows, 250 per intervened variable, the
   horizontal split over 2 clients) -- each client's rows and all rows ("pooled") --
   as one matrix per environment (observational, then one per intervention target),
   with the true DAG.
2. ``fit`` (the benchmark environment: ``python -m venv V; V/bin/pip install gies``):
   GIES on each saved data set; its I-essential graph's adjacency.
3. ``report`` (fedstruct's environment): the SHD against the true DAG (fedstruct's
   ``shd``: an undirected edge of the I-essential graph differs in its marks from the
   true directed edge, so it costs 1, as a reversed edge), mean ± std over the seeds,
   of three readings of the row: the first client alone (as Table 1's ENCO row); the
   two clients' graphs "aggregated after a single round" (§6.5), read as the edges
   both clients found with the same marks (a majority of two); and GIES on every row.

The categorical variables enter GIES as their integer codes, as ENCO's baselines fed
its categorical graphs to GIES's Gaussian score (a misspecified score: part of what
the row measures).

```
.venv/bin/python benchmarks/fedcd_gies.py save --out DIR [--graphs ER-1 ER-2 ...] [--seeds 0 1 ...]
V/bin/python benchmarks/fedcd_gies.py fit --out DIR
.venv/bin/python benchmarks/fedcd_gies.py report --out DIR
```
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

#: Table 1's data (the ``fedcd-table1`` recipe's ``common`` settings), 2 clients.
TABLE1 = {"samples": 25000, "samples_per_intervention": 250, "clients": 2}
#: The data sets of one graph and seed: each client's rows, and every row.
SCOPES = ("client-1", "client-2", "pooled")


def save(out: Path, graphs: list[str], seeds: list[int]) -> None:
    """Write each graph and seed's environments and true DAG (step 1)."""
    from fedstruct.methods.fedcd.recipes import GRAPHS
    from fedstruct.methods.fedcd.settings import FedCDRun
    from fedstruct.methods.fedcd.sources import InterventionTask
    from fedstruct.runs.settings import apply_settings

    out.mkdir(parents=True, exist_ok=True)
    for graph in graphs:
        for seed in seeds:
            settings = apply_settings(
                FedCDRun(), {**GRAPHS[graph], **TABLE1, "seed": seed}, method="fedcd"
            )
            task = InterventionTask(settings)
            clients = task.clients()
            names = list(task.truth.names)
            parts = [clients[k] for k in range(len(clients))]
            arrays: dict[str, np.ndarray] = {"truth": task.truth.directed().astype(np.int8)}
            scopes = (("client-1", parts[:1]), ("client-2", parts[1:]), ("pooled", parts))
            for scope, held in scopes:
                rows = np.vstack([_codes(c.rows, names) for c in held])
                regime = np.concatenate([c.intervention for c in held])
                for code in np.unique(regime):
                    arrays[f"{scope}/{int(code)}"] = rows[regime == code]
            np.savez_compressed(out / f"{graph}-{seed}.npz", **arrays)
            (out / f"{graph}-{seed}.json").write_text(json.dumps({"names": names}) + "\n")
            print(f"saved {graph} seed {seed}: {len(names)} variables", flush=True)


def _codes(frame, names: list[str]) -> np.ndarray:
    """The rows' integer codes (a categorical column's codes) as floats, in ``names``'
    order."""
    columns = [frame[n].cat.codes if frame[n].dtype == "category" else frame[n] for n in names]
    return np.column_stack([np.asarray(c, dtype=float) for c in columns])


def fit(out: Path) -> None:
    """GIES on every saved data set not fitted yet (step 2; needs the ``gies`` package)."""
    import gies

    for path in sorted(p for p in out.glob("*.npz") if not p.name.endswith(".gies.npz")):
        if path.with_suffix(".gies.npz").exists():  # fitted by an earlier call
            continue
        saved = np.load(path)
        estimates = {}
        for scope in SCOPES:
            keys = sorted((k for k in saved.files if k.startswith(f"{scope}/")), key=_code)
            data = [saved[k] for k in keys]
            targets = [[] if _code(k) < 0 else [_code(k)] for k in keys]
            start = time.perf_counter()
            estimate, _ = gies.fit_bic(data, targets)
            seconds = time.perf_counter() - start
            estimates[scope] = np.asarray(estimate != 0, dtype=np.int8)
            print(f"{path.stem} {scope}: {seconds:.1f} s", flush=True)
        np.savez_compressed(path.with_suffix(".gies.npz"), **estimates)


def _code(key: str) -> int:
    return int(key.split("/")[1])


def report(out: Path) -> None:
    """The SHD of each estimate against the truth, mean ± std over seeds (step 3)."""
    from fedstruct.graphs.graph import Graph
    from fedstruct.graphs.metrics import shd

    readings = ("client-1", "2 clients, one round", "pooled")
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(out.glob("*.gies.npz")):
        stem = path.name.removesuffix(".gies.npz")
        graph = stem.rsplit("-", 1)[0]
        names = json.loads((out / f"{stem}.json").read_text())["names"]
        truth = Graph.from_dag_matrix(names, np.load(out / f"{stem}.npz")["truth"])
        estimates = np.load(path)
        first, second = estimates["client-1"], estimates["client-2"]
        same = (first == second) & (first.T == second.T)  # the pair's marks, both ways
        agreed = first & same
        graphs = {
            "client-1": estimates["client-1"],
            "2 clients, one round": agreed,
            "pooled": estimates["pooled"],
        }
        for reading, adjacency in graphs.items():
            found.setdefault((graph, reading), []).append(
                shd(truth, _essential_graph(names, adjacency))
            )
    print("| graph | seeds | " + " | ".join(f"GIES, {r}" for r in readings) + " |")
    print("|---|---|" + "---|" * len(readings))
    for graph in dict.fromkeys(g for g, _ in found):
        cells = " | ".join(_mean_std(found[(graph, r)]) for r in readings)
        print(f"| {graph} | {len(found[(graph, readings[0])])} | {cells} |")


def _essential_graph(names: list[str], adjacency: np.ndarray):
    """An I-essential graph from ``gies``' adjacency: ``a[i, j]`` alone is ``i -> j``,
    both ``a[i, j]`` and ``a[j, i]`` an undirected edge ``i --- j``."""
    from fedstruct.graphs.graph import Graph

    edges = []
    for i, j in zip(*np.nonzero(adjacency), strict=True):
        if not adjacency[j, i]:
            edges.append(f"{names[i]} --> {names[j]}")
        elif i < j:
            edges.append(f"{names[i]} --- {names[j]}")
    return Graph.from_edges(names, edges)


def _mean_std(values: list[int]) -> str:
    return f"{statistics.mean(values):.1f} ± {statistics.pstdev(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("save", "fit", "report"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--graphs", nargs="+", default=["ER-1", "ER-2", "ER-4", "ER-6", "sachs"])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    args = parser.parse_args()
    if args.step == "save":
        save(args.out, args.graphs, args.seeds)
    elif args.step == "fit":
        fit(args.out)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
