"""Time our FCI against causal-learn's on the same data, and a federation's local FCI runs.

Usage: ``python benchmarks/fci.py [--repeats R] [--networks alarm child barley] [--seed S]``

1. Single site: ``load_network(name).sample(2000, seed=S)`` (constant columns dropped),
   G², alpha = 0.05. Our ``fci`` with the test causal-learn runs (no small-sample rule,
   adjusted degrees of freedom: the same p-values) against ``causallearn``'s ``fci``
   (``independence_test_method="gsq"``, ``depth=-1``, ``max_path_length=-1``). Median
   wall time of ``R`` runs each, their ratio, the number of tests, and whether the
   skeletons after the adjacency search agree (ours vs causal-learn's ``fas``). Our
   default small-sample rule ("toolbox") is timed too.
2. Federation: six clients, 15 % of alarm's variables latent, each client observing
   85 % of the rest, ``n_k`` uniform in [100, 2000] (FedCDnv §4.1 defaults); the CPU
   time of the six local FCI runs (default settings), median of ``R``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time

import numpy as np
import pandas as pd
from timing import median_time

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.fci import fci
from fedstruct.methods.fedcdnv import variable_subset_clients, variable_subsets


def causal_learn_fci(values: np.ndarray) -> None:
    from causallearn.search.ConstraintBased.FCI import fci as cl_fci

    with contextlib.redirect_stdout(io.StringIO()):  # its rules print edges
        cl_fci(values, independence_test_method="gsq", alpha=0.05, depth=-1,
               max_path_length=-1, verbose=False, show_progress=False)  # fmt: skip


def causal_learn_skeleton(values: np.ndarray, names: list[str]) -> tuple[np.ndarray, int]:
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.utils.cit import CIT
    from causallearn.utils.FAS import fas

    nodes = [GraphNode(n) for n in names]
    for k, node in enumerate(nodes):
        node.add_attribute("id", k)
    cit = CIT(values, "gsq")
    graph, _, _ = fas(values, nodes, cit, alpha=0.05, show_progress=False)
    return graph.graph != 0, len(cit.pvalue_cache) - 3  # 3 metadata keys


def single_site(name: str, seed: int, repeats: int) -> None:
    net = load_network(name)
    data = net.sample(2000, seed=seed)
    data = data.loc[:, data.nunique() > 1]
    values = data.to_numpy()
    result = fci(make_ci_test(data, "g2", small_sample="none"))
    skeleton, cl_fas_tests = causal_learn_skeleton(values, list(data.columns))
    same = bool(np.array_equal(skeleton, result.skeleton))
    ours = median_time(lambda: fci(make_ci_test(data, "g2", small_sample="none")), repeats)
    default = median_time(lambda: fci(make_ci_test(data, "g2")), repeats)
    theirs = median_time(lambda: causal_learn_fci(values), repeats)
    phases = ", ".join(f"{k} {v}" for k, v in result.tests_by_phase.items())
    print(
        f"{name:<8} d={data.shape[1]:>2} | ours {ours * 1e3:7.1f} ms ({result.n_tests} tests: "
        f"{phases}; {ours / result.n_tests * 1e6:.0f} us/test) | causal-learn "
        f"{theirs * 1e3:7.1f} ms (FAS alone {cl_fas_tests} tests) | ratio {theirs / ours:5.1f} "
        f"| skeletons agree: {same} | ours with the toolbox rule {default * 1e3:.1f} ms"
    )


def federation(seed: int, repeats: int) -> None:
    net = load_network("alarm")
    split = variable_subsets(net.names, 6, seed=seed, overlap=0.85, latent=0.15)
    clients = variable_subset_clients(net, split, seed=seed, n_range=(100, 2000))
    cards = dict(net.cardinalities)
    frames: list[pd.DataFrame] = []
    for client in clients:
        rows = client.rows
        frames.append(rows.loc[:, rows.nunique() > 1])  # constant columns carry no test

    def run_all(rule: str) -> list[int]:
        return [
            fci(make_ci_test(f, "g2", cardinalities=cards, small_sample=rule)).n_tests
            for f in frames
        ]

    for rule in ("toolbox", "none"):
        tests = run_all(rule)
        cpu = median_time(lambda r=rule: run_all(r), repeats, clock=time.process_time)
        wall = median_time(lambda r=rule: run_all(r), repeats)
        sizes = [len(f) for f in frames]
        dims = [f.shape[1] for f in frames]
        print(
            f"federation (6 clients, rule {rule!r}): CPU {cpu * 1e3:.0f} ms, wall "
            f"{wall * 1e3:.0f} ms for the six local FCI runs; n_k {sizes}; variables {dims}; "
            f"tests {tests}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per timing (median)")
    parser.add_argument("--networks", nargs="+", default=["alarm", "child", "barley"])
    parser.add_argument("--seed", type=int, default=1, help="seed of the samples")
    args = parser.parse_args()
    for name in args.networks:
        single_site(name, args.seed, args.repeats)
    federation(args.seed, args.repeats)


if __name__ == "__main__":
    main()
