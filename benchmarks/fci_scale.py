"""FCI at real scale: our default against causal-learn's ``fci`` on 70-223 variables.

Usage: ``python benchmarks/fci_scale.py [--networks hepar2 win95pts andes] [--rows 10000]
[--limit 600] [--repeats 1] [--workers N]``

For each network: ``load_network(name).sample(rows, seed=0)`` (constant columns
dropped), Pearson χ², alpha = 0.05, no small-sample rule (causal-learn has none). Each
run is a child process (CPU seconds of that process and of the worker processes it
started, wall seconds, peak resident memory of the largest of them):

- ours: ``fci(data)`` with its defaults (``pds_depth="auto"``) in one process
  (``workers=1`` for the Possible-D-SEP phase) and with ``--workers`` (default: the
  available cores), and its adjacency search alone;
- causal-learn: ``fci`` (``chisq``, ``depth=-1``, ``max_path_length=-1``) and ``fas``,
  each stopped after ``--limit`` seconds.

Reports the medians over ``--repeats`` runs, the ratios (CPU seconds with one worker,
wall seconds with ``--workers``), each skeleton's edge F1 against the true DAG's
skeleton, whether the two adjacency searches agree, and peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing as mp
import resource
import statistics
import sys
import time
from queue import Empty

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.fci import fci
from fedstruct.discovery.pds import available_workers
from fedstruct.discovery.skeleton import adjacency_search


def sample(name: str, rows: int):
    data = load_network(name).sample(rows, seed=0)
    return data.loc[:, data.nunique() > 1]


def _clock() -> tuple[float, float]:
    """CPU seconds of this process and its finished children, and wall seconds."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime, time.perf_counter()


def _ours(name: str, rows: int, adjacency_only: bool, workers: int = 1) -> dict:
    data = sample(name, rows)
    test = make_ci_test(data, "chi2", small_sample="none")
    cpu, wall = _clock()
    if adjacency_only:
        skeleton = adjacency_search(Evidence(test, 0.05))
    else:
        skeleton = fci(test, alpha=0.05, workers=workers).graph.marks != 0
    cpu_end, wall_end = _clock()
    return {"cpu": cpu_end - cpu, "wall": wall_end - wall, "skeleton": skeleton.tolist(),
            "tests": test.n_tests}  # fmt: skip


def _theirs(name: str, rows: int, adjacency_only: bool) -> dict:
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.search.ConstraintBased.FCI import fci as cl_fci
    from causallearn.utils.cit import CIT
    from causallearn.utils.FAS import fas

    data = sample(name, rows)
    values = data.to_numpy()
    cpu, wall = _clock()
    with contextlib.redirect_stdout(io.StringIO()):  # its rules print edges
        if adjacency_only:
            nodes = [GraphNode(str(c)) for c in data.columns]
            for k, node in enumerate(nodes):
                node.add_attribute("id", k)
            graph, _, _ = fas(values, nodes, CIT(values, "chisq"), alpha=0.05,
                              show_progress=False)  # fmt: skip
        else:
            graph, _ = cl_fci(values, independence_test_method="chisq", alpha=0.05, depth=-1,
                              max_path_length=-1, verbose=False, show_progress=False)  # fmt: skip
    cpu_end, wall_end = _clock()
    return {"cpu": cpu_end - cpu, "wall": wall_end - wall,
            "skeleton": (graph.graph != 0).tolist()}  # fmt: skip


def _child(target, args, queue) -> None:
    out = target(*args)
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN))  # fmt: skip
    out["peak_mb"] = peak / 1024
    queue.put(json.dumps(out))


def isolated(target, args: tuple, limit: float) -> dict | None:
    """Run ``target(*args)`` in a child process; ``None`` if it exceeds ``limit`` seconds."""
    queue: mp.Queue = mp.Queue()
    proc = mp.get_context("fork").Process(target=_child, args=(target, args, queue))
    proc.start()
    try:  # read before joining: a child blocks on a large result until it is read
        out = json.loads(queue.get(timeout=limit))
    except Empty:
        out = None
    proc.kill()
    proc.join()
    return out


def edge_f1(skeleton: np.ndarray, truth: np.ndarray) -> float:
    """F1 of the undirected edges of ``skeleton`` against ``truth``."""
    upper = np.triu(np.ones_like(truth, dtype=bool), 1)
    found, real = skeleton & upper, truth & upper
    hits = int((found & real).sum())
    return 2 * hits / max(int(found.sum()) + int(real.sum()), 1)


def _median(runs: list[dict | None], key: str) -> float:
    values = [r[key] for r in runs if r is not None]
    return statistics.median(values) if len(values) == len(runs) else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["hepar2", "win95pts", "andes"])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--limit", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workers", type=int, default=available_workers())
    args = parser.parse_args()
    print(f"median of {args.repeats}; ours: FCI with 1 worker (CPU s, wall s), with "
          f"{args.workers} (CPU s, wall s), adjacency CPU s, F1, MB | causal-learn: FCI CPU s, "
          "wall s, fas CPU s, F1, MB | CPU ratio (1 worker) | wall ratio "
          f"({args.workers} workers) | same adjacency | same skeleton, 1 vs "
          f"{args.workers} workers")  # fmt: skip
    for name in args.networks:
        data = sample(name, args.rows)
        dag = load_network(name).graph.restrict(list(data.columns))
        truth = dag.marks != 0
        truth = truth | truth.T
        plan = {
            "one": (_ours, False, 1), "many": (_ours, False, args.workers),
            "adj": (_ours, True, 1), "cl": (_theirs, False), "fas": (_theirs, True),
        }  # fmt: skip
        runs: dict[str, list] = {key: [] for key in plan}
        for _ in range(args.repeats):
            for key, (fn, *rest) in plan.items():
                runs[key].append(isolated(fn, (name, args.rows, *rest), args.limit))
        one, many, cl = runs["one"][0], runs["many"][0], runs["cl"][0]
        f1 = [edge_f1(np.array(r["skeleton"]), truth) if r else float("nan") for r in (one, cl)]
        mb = [max((r["peak_mb"] for r in runs[k] if r), default=float("nan")) for k in plan]
        a, b = runs["adj"][0], runs["fas"][0]
        same = a is not None and b is not None and a["skeleton"] == b["skeleton"]
        same_workers = one is not None and many is not None and one["skeleton"] == many["skeleton"]
        cpu_one, cpu_cl = _median(runs["one"], "cpu"), _median(runs["cl"], "cpu")
        wall_many, wall_cl = _median(runs["many"], "wall"), _median(runs["cl"], "wall")
        print(
            f"{name:8s} {data.shape[1]:4d} | {cpu_one:6.1f} {_median(runs['one'], 'wall'):6.1f} "
            f"{_median(runs['many'], 'cpu'):6.1f} {wall_many:6.1f} "
            f"{_median(runs['adj'], 'cpu'):6.1f} {f1[0]:.3f} {max(mb[0], mb[1]):5.0f} | "
            f"{cpu_cl:6.1f} {wall_cl:6.1f} {_median(runs['fas'], 'cpu'):6.1f} {f1[1]:.3f} "
            f"{mb[3]:5.0f} | {cpu_cl / cpu_one:5.1f} | {wall_cl / wall_many:5.1f} | {same} | "
            f"{same_workers}"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
