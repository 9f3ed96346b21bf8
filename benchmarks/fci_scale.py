"""FCI at real scale: our default against causal-learn's ``fci`` on 70-223 variables.

Usage: ``python benchmarks/fci_scale.py [--networks hepar2 win95pts andes] [--rows 10000]
[--limit 600]``

For each network: ``load_network(name).sample(rows, seed=0)`` (constant columns
dropped), Pearson χ², alpha = 0.05, no small-sample rule (causal-learn has none). Each
run is a child process (CPU time and peak resident memory of that process alone):

- ours: ``fci(data)`` with its defaults (``pds_depth="auto"``), and its adjacency
  search alone;
- causal-learn: ``fci`` (``chisq``, ``depth=-1``, ``max_path_length=-1``) and ``fas``,
  each stopped after ``--limit`` seconds.

Reports CPU seconds, the ratio, each skeleton's edge F1 against the true DAG's
skeleton, whether the two adjacency searches agree, and peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing as mp
import resource
import sys
import time
from queue import Empty

import numpy as np

from fedstruct.data import load_network
from fedstruct.methods.fedcdnv.local.build import make_ci_test
from fedstruct.methods.fedcdnv.local.evidence import Evidence
from fedstruct.methods.fedcdnv.local.fci import fci
from fedstruct.methods.fedcdnv.local.skeleton import adjacency_search


def sample(name: str, rows: int):
    data = load_network(name).sample(rows, seed=0)
    return data.loc[:, data.nunique() > 1]


def _ours(name: str, rows: int, adjacency_only: bool) -> dict:
    data = sample(name, rows)
    test = make_ci_test(data, "chi2", small_sample="none")
    start = time.process_time()
    if adjacency_only:
        skeleton = adjacency_search(Evidence(test, 0.05))
    else:
        skeleton = fci(test, alpha=0.05).graph.marks != 0
    return {"cpu": time.process_time() - start, "skeleton": skeleton.tolist(),
            "tests": test.n_tests}  # fmt: skip


def _theirs(name: str, rows: int, adjacency_only: bool) -> dict:
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.search.ConstraintBased.FCI import fci as cl_fci
    from causallearn.utils.cit import CIT
    from causallearn.utils.FAS import fas

    data = sample(name, rows)
    values = data.to_numpy()
    start = time.process_time()
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
    return {"cpu": time.process_time() - start, "skeleton": (graph.graph != 0).tolist()}


def _child(target, args, queue) -> None:
    out = target(*args)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["hepar2", "win95pts", "andes"])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--limit", type=float, default=600.0, help="seconds per run")
    args = parser.parse_args()
    print("network  vars | ours: FCI s  adj s  F1  MB | causal-learn: FCI s  fas s  F1  MB "
          "| ratio | same adjacency")  # fmt: skip
    for name in args.networks:
        data = sample(name, args.rows)
        dag = load_network(name).graph.restrict(list(data.columns))
        truth = dag.marks != 0
        truth = truth | truth.T
        runs = {
            (who, adj): isolated(fn, (name, args.rows, adj), args.limit)
            for who, fn in (("ours", _ours), ("theirs", _theirs))
            for adj in (False, True)
        }
        cells = []
        for who in ("ours", "theirs"):
            full, adj = runs[(who, False)], runs[(who, True)]
            f1 = edge_f1(np.array(full["skeleton"]), truth) if full else float("nan")
            cells.append(
                f"{full['cpu'] if full else float('nan'):7.1f} "
                f"{adj['cpu'] if adj else float('nan'):6.1f} {f1:.3f} "
                f"{full['peak_mb'] if full else float('nan'):5.0f}"
                + ("" if full else f" (> {args.limit:.0f} s)")
            )
        ours, theirs = runs[("ours", False)], runs[("theirs", False)]
        ratio = theirs["cpu"] / ours["cpu"] if ours and theirs else float("nan")
        a, b = runs[("ours", True)], runs[("theirs", True)]
        same = a is not None and b is not None and a["skeleton"] == b["skeleton"]
        print(f"{name:8s} {data.shape[1]:4d} | {cells[0]} | {cells[1]} | {ratio:5.1f} | {same}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
