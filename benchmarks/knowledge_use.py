"""What tiered knowledge buys PC and FCI on sampled data: orientation F1 and CI tests.

Usage: ``python benchmarks/knowledge_use.py [--network alarm] [--rows 10000] [--tiers 3]
[--seeds 0]``

``load_network(network).sample(rows, seed)``, G² at alpha = 0.05, default settings
(FCI: ``pds_depth="auto"``). The knowledge: the network's topological order cut into
``tiers`` tiers of (nearly) equal size, nothing else. Each learner runs without it,
with it, and with it and ``prune_sets=True`` (conditioning only on possible ancestors),
each on a fresh CI test (no shared cache). Reported per learner: the CI tests,
orientation F1 against the true DAG (an oriented edge counts when both marks equal the
DAG's; FCI's ``o->`` is not ``-->``), arrowhead F1, tail F1, skeleton F1, and the CPU
seconds (``time.process_time``; the machine is shared, so CPU time, not wall).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.fci import fci
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.pc import pc
from fedstruct.graphs.metrics import edge_scores, orientation_scores


def tiers_of(order: tuple[str, ...], k: int) -> list[list[str]]:
    """``order`` cut into ``k`` consecutive tiers of (nearly) equal size."""
    return [list(part) for part in np.array_split(np.array(order, dtype=object), k)]


def _label(knowledge: Knowledge | None, prune: bool) -> str:
    return "no" if knowledge is None else ("pruned" if prune else "yes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="alarm")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    net = load_network(args.network)
    dag = net.graph
    knowledge = Knowledge(tiers=tiers_of(dag.topological_order(), args.tiers))
    print(f"{args.network}, {args.rows} rows, {args.tiers} tiers from the true order")
    print("seed learner knowledge  tests  orient-F1  arrow-F1  tail-F1  skel-F1  cpu-s")
    for seed in args.seeds:
        data = net.sample(args.rows, seed=seed)
        for learner in (pc, fci):
            for told, prune in ((None, False), (knowledge, False), (knowledge, True)):
                start = time.process_time()
                result = learner(
                    make_ci_test(data, "g2"), alpha=0.05, knowledge=told, prune_sets=prune
                )
                cpu = time.process_time() - start
                graph = result.graph.restrict(dag.names)
                scores = [
                    orientation_scores(dag, graph, "edge").f1,
                    orientation_scores(dag, graph, "arrowhead").f1,
                    orientation_scores(dag, graph, "tail").f1,
                    edge_scores(dag, graph).f1,
                ]
                shown = "  ".join(f"{s:8.3f}" for s in scores)
                print(
                    f"{seed:4d} {learner.__name__:7s} {_label(told, prune):9s} "
                    f"{result.n_tests:6d}  {shown}  {cpu:5.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
