"""Notears-ADMM (Ng & Zhang 2022) on the federations of FedCDnv's Table 6 and Figure 10.

The FedCDnv paper compares FedCDnv with Notears-ADMM on identical variable sets
(App. D.3: Table 6 on the real Sachs data, Figure 10 on synthetic and benchmark
networks). fedstruct does not implement Notears-ADMM and holds none of its code: this
driver imports the authors' solver, ``notears_admm.linear_admm.notears_linear_admm``,
at run time from a checkout the user gives (``--notears-admm PATH``; github.com/
ignavierng/notears-admm, tested at commit 5c9a274; it needs numpy, scipy and torch,
and python-igraph only for modules this driver does not import).

The clients are exactly those of ``fedstruct reproduce fedcdnv-identical-sachs``
(``--network sachs-cytometry``, the default: 6 clients, ``overlap = 1``, no latent
variable, ``n_k`` uniform in [100, 2000], Hartemink codes) or of
``fedcdnv-identical``'s network rows (``--network child`` etc.: 15 % latent
variables) and synthetic sweeps (``--network synthetic --variables V --clients M``):
the same :class:`VariableSubsetTask` builds them, seed by seed.

Choices (docs/results/fedcdnv.md, "Notears-ADMM on the same federations"):

- ``--values codes``: the integer codes FedCDnv's G² tests see; ``--values raw``
  (Sachs only): the same cells' measurements, log-transformed. The rows are found by
  drawing the same client splits from a table of row positions (the sampler's draws
  depend only on the seed and the table's length); the codes of those positions are
  checked against the clients' own. Each client standardises its columns on its own
  rows (a constant column stays 0).
- ``--rows cut`` (as published: the solver takes an array ``[K, n, d]``, the same ``n``
  at every client): every client keeps its first ``n = min n_k`` rows (its rows are in
  random draw order). ``--rows own``: every client's own ``n_k`` rows. The solver reads
  the data only through each client's covariance ``X_kᵀX_k / n / K`` after centring,
  so client ``k`` hands it a centred ``(d + 1) × d`` matrix whose covariance is its
  own (``--weights rows``: times ``K n_k / N``, so the objective is the pooled least
  squares of all ``N`` rows; ``--weights equal``: unscaled, every client weighs
  ``1 / K`` as in the published solver). The solver itself is called unchanged.
- The estimate is thresholded at ``|w| > --threshold`` (0.3, the authors' example),
  a pair above the threshold in both directions keeps its stronger one, and any
  remaining cycle is broken at its weakest edge (:func:`fedstruct.graphs.break_cycles`).
- Scores: :func:`fedstruct.methods.fedcdnv.graph_scores`, as ``fedstruct run fedcdnv``
  scores FedG (edges against the consensus DAG's skeleton on Sachs, against the
  PAG's on a network; orientations per arrowhead against the Sachs DAG).

Run: ``PYTHONPATH=src python benchmarks/notears_admm_sachs.py --notears-admm PATH
--values codes --rows cut --seeds 10 --out runs.jsonl``; ``--table a.jsonl b.jsonl``
prints the means of earlier runs. Each run is appended to ``--out`` as one JSON line;
runs already there are skipped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.datasets.sachs import RowSampler, load_sachs_data
from fedstruct.graphs import Graph, break_cycles
from fedstruct.methods.fedcdnv import graph_scores
from fedstruct.methods.fedcdnv.settings import SACHS, FedCDnvRun
from fedstruct.methods.fedcdnv.sources import VariableSubsetTask, variable_subset_clients

METRICS = (
    "precision_edge",
    "recall_edge",
    "f1_edge",
    "precision_arrowhead",
    "recall_arrowhead",
    "f1_arrowhead",
    "n_edges_pred",
)
Solver = Callable[..., NDArray[np.float64]]


def load_solver(path: str) -> Solver:
    """``notears_linear_admm`` from the checkout at ``path``, with torch in double
    precision (as the authors' example) and one thread (the machine is shared)."""
    root = Path(path).expanduser()
    if not (root / "notears_admm" / "linear_admm.py").is_file():
        sys.exit(
            f"--notears-admm {path}: no notears_admm/linear_admm.py there; give the folder "
            "of a checkout of github.com/ignavierng/notears-admm"
        )
    sys.path.insert(0, str(root.resolve()))
    try:
        torch = importlib.import_module("torch")
        module = importlib.import_module("notears_admm.linear_admm")
    except ImportError as exc:
        sys.exit(
            f"--notears-admm {path}: cannot import notears_admm.linear_admm ({exc}); "
            "it needs numpy, scipy and torch"
        )
    torch.set_default_dtype(torch.double)
    torch.set_num_threads(1)
    return module.notears_linear_admm


def settings(network: str, seed: int, variables: int = 30, clients: int = 6) -> FedCDnvRun:
    """The run settings of ``fedcdnv-identical-sachs`` / ``fedcdnv-identical``'s
    rows (the strategy does not change the clients): a network's, or with ``network =
    "synthetic"`` the |V| and m sweeps' (``variables``, ``clients``)."""
    return FedCDnvRun(
        network=network, variables=variables, clients=clients, overlap=1.0,
        reference=False, seed=seed,
    )  # fmt: skip


def federation_name(args: argparse.Namespace) -> str:
    """The name a run's records carry: the network's, or the synthetic sweep's point."""
    if args.network == "synthetic":
        return f"synthetic |V|={args.variables} m={args.clients}"
    return args.network


def client_arrays(task: VariableSubsetTask, values: str) -> list[NDArray[np.float64]]:
    """Each client's rows over the observed variables (in ``task.split.observed``
    order), as FedCDnv's clients hold them (``codes``) or as the measurements of the
    same cells, log-transformed (``raw``, Sachs only)."""
    observed = list(task.split.observed)
    codes = [c.rows.loc[:, observed].to_numpy(dtype=np.float64) for c in task.clients()]
    if values == "codes":
        return codes
    if task.settings.network != SACHS:
        sys.exit("--values raw: only the real Sachs data have measurements; use --values codes")
    positions = _row_positions(task)
    table = task.sampler.table.loc[:, observed].to_numpy(dtype=np.float64)
    measured = load_sachs_data(None).loc[:, observed].to_numpy(dtype=np.float64)
    out = []
    for rows, own in zip(positions, codes, strict=True):
        if not np.array_equal(table[rows], own):
            raise RuntimeError("row positions do not reproduce the clients' codes")
        out.append(np.log(measured[rows]))
    return out


def _row_positions(task: VariableSubsetTask) -> list[NDArray[np.int64]]:
    """Which rows of the Sachs table each client drew: the same split, drawn from a
    table whose every column holds the row's position."""
    sampler = task.sampler
    if not isinstance(sampler, RowSampler):
        raise TypeError("row positions exist only for a table of rows")
    n = len(sampler.table)
    index = RowSampler(pd.DataFrame({v: np.arange(n) for v in sampler.names}))
    s = task.settings
    clients = variable_subset_clients(
        index, task.split, seed=s.seed, n_range=(s.min_samples, s.max_samples)
    )
    return [c.rows.iloc[:, 0].to_numpy(dtype=np.int64) for c in clients]


def standardise(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Columns centred and scaled on the client's own rows; a constant column stays 0."""
    centred = x - x.mean(axis=0)
    sd = centred.std(axis=0)
    return centred / np.where(sd > 0, sd, 1.0)


def solver_input(clients: Sequence[NDArray[np.float64]], rows: str, weights: str) -> NDArray:
    """The ``[K, n, d]`` array the solver takes (see the module docstring)."""
    if rows == "cut":
        n = min(len(x) for x in clients)
        return np.stack([standardise(x[:n]) for x in clients])
    d = clients[0].shape[1]
    total = sum(len(x) for x in clients)
    k = len(clients)
    # d orthonormal columns orthogonal to the ones vector: centred, Qᵀ Q = I.
    basis, _ = np.linalg.qr(np.column_stack([np.ones(d + 1), np.eye(d + 1, d)]))
    q = basis[:, 1:]
    out = []
    for x in clients:
        z = standardise(x)
        cov = z.T @ z / len(z)
        if weights == "rows":
            cov = cov * (k * len(z) / total)
        vals, vecs = np.linalg.eigh(cov)
        root = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T
        out.append(np.sqrt(d + 1) * q @ root)  # Zᵀ Z / (d + 1) = cov
    return np.stack(out)


def estimate_graph(weights: NDArray[np.float64], names: Sequence[str], threshold: float) -> Graph:
    """Threshold, keep the stronger direction of a two-way pair, break cycles."""
    strength = np.abs(weights)
    keep = strength > threshold
    np.fill_diagonal(keep, False)
    keep &= ~(keep.T & (strength.T > strength))
    keep &= ~(keep.T & np.triu(np.ones_like(keep), 1))  # an exact tie keeps j -> i (i < j)
    return break_cycles(Graph.from_dag_matrix(names, keep), strength).dag


def run_once(solver: Solver, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """One seed: build the clients, solve, score."""
    task = VariableSubsetTask(settings(args.network, seed, args.variables, args.clients))
    clients = client_arrays(task, args.values)
    xs = solver_input(clients, args.rows, args.weights)
    cpu, wall = time.process_time(), time.perf_counter()
    weights = solver(xs, lambda1=args.lambda1, max_iter=args.max_iter)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    truth = task.truth
    graph = estimate_graph(weights, task.split.observed, args.threshold).expand(truth.names)
    scores = graph_scores(truth, graph)
    return {
        "network": federation_name(args),
        "values": args.values,
        "rows": args.rows,
        "weights": args.weights if args.rows == "own" else "equal",
        "lambda1": args.lambda1,
        "threshold": args.threshold,
        "seed": seed,
        "n_k": [len(x) for x in clients],
        "solver_rows": int(xs.shape[1]),
        "cpu_s": round(cpu, 1),
        "wall_s": round(wall, 1),
        "edges": [str(e) for e in graph.edges()],
        **{m: scores[m] for m in METRICS},
    }


def variant(record: dict[str, Any]) -> tuple:
    """The settings a run belongs to (everything but the seed)."""
    return tuple(
        record[k] for k in ("network", "values", "rows", "weights", "lambda1", "threshold")
    )


def read_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Every run recorded in ``paths`` (JSON lines)."""
    runs = []
    for path in paths:
        if path.exists():
            runs += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return runs


def table(runs: Sequence[dict[str, Any]]) -> str:
    """Markdown: mean ± standard deviation over seeds per variant."""
    head = "| network | values | rows | weights | seeds | CPU s/run | " + " | ".join(METRICS) + " |"
    lines = [head, "|" + "---|" * (6 + len(METRICS))]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(variant(r), []).append(r)
    for key, group in groups.items():
        cells = [*map(str, key[:4]), str(len(group))]
        cells.append(f"{statistics.median(r['cpu_s'] for r in group):.0f}")
        for m in METRICS:
            vals = [float(r[m]) for r in group]
            cells.append(f"{np.mean(vals):.3f} ± {np.std(vals):.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notears-admm", help="folder of a notears-admm checkout")
    parser.add_argument(
        "--network", default=SACHS,
        help="sachs-cytometry, a bundled network, or synthetic (with --variables, --clients)",
    )  # fmt: skip
    parser.add_argument("--variables", type=int, default=30, help="|V| of a synthetic run")
    parser.add_argument("--clients", type=int, default=6, help="m of a synthetic run")
    parser.add_argument("--values", choices=("codes", "raw"), default="codes")
    parser.add_argument("--rows", choices=("cut", "own"), default="cut")
    parser.add_argument("--weights", choices=("rows", "equal"), default="rows")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--lambda1", type=float, default=0.01)
    parser.add_argument("--threshold", type=float, default=0.3)
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--out", type=Path, help="JSON lines file to append each run to")
    parser.add_argument("--table", type=Path, nargs="+", help="print the means of these runs")
    args = parser.parse_args()
    if args.table:
        print(table(read_runs(args.table)))
        return
    if not args.notears_admm:
        sys.exit("give --notears-admm PATH (a notears-admm checkout) or --table FILES")
    solver = load_solver(args.notears_admm)
    done = {(variant(r), r["seed"]) for r in read_runs([args.out] if args.out else [])}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        weights = args.weights if args.rows == "own" else "equal"
        key = (federation_name(args), args.values, args.rows, weights, args.lambda1, args.threshold)
        if (key, seed) in done:
            continue
        record = run_once(solver, args, seed)
        print(json.dumps({k: v for k, v in record.items() if k != "edges"}), flush=True)
        if args.out:
            with args.out.open("a") as handle:
                handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
