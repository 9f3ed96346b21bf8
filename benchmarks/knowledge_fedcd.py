"""What tiered knowledge buys FED-CD: SHD of the final DAG without and with tiers.

Usage: ``python benchmarks/knowledge_fedcd.py [--variables 10] [--tiers 3] [--seeds 0 1]
[--rounds 2] [--model-steps 200] [--graph-steps 40]``

FED-CD's ER setting (``fedstruct run fedcd`` defaults: 2 clients, horizontal split,
10 categories) at a reduced size and ENCO budget; the knowledge is the true DAG's
topological order cut into ``tiers`` tiers of (nearly) equal size (fixing every
later-to-earlier ``γ``: docs/fedcd.md). Reported per seed: SHD and edges without and
with the tiers, and the CPU seconds of each fit (``time.process_time``; the machine is
shared, so CPU time, not wall).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fedstruct.discovery.knowledge import Knowledge
from fedstruct.graphs.metrics import shd
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcd.settings import FedCDRun
from fedstruct.methods.fedcd.sources import InterventionTask


def tiers_of(order: tuple[str, ...], k: int) -> list[list[str]]:
    """``order`` cut into ``k`` consecutive tiers of (nearly) equal size."""
    return [list(part) for part in np.array_split(np.array(order, dtype=object), k)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variables", type=int, default=10)
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model-steps", type=int, default=200)
    parser.add_argument("--graph-steps", type=int, default=40)
    args = parser.parse_args()
    print(f"ER, {args.variables} variables, {args.tiers} tiers from the true order")
    print("seed knowledge  shd  edges  true-edges  cpu-s")
    for seed in args.seeds:
        settings = FedCDRun(
            variables=args.variables, seed=seed, samples=2000, samples_per_intervention=100
        )
        task = InterventionTask(settings)
        truth, clients = task.truth, list(task.clients())
        tiers = Knowledge(tiers=tiers_of(truth.topological_order(), args.tiers))
        for label, told in (("no", None), ("tiers", tiers)):
            start = time.process_time()
            model = FedCD(
                seed=seed, rounds=args.rounds, model_steps=args.model_steps,
                graph_steps=args.graph_steps, knowledge=told,
            ).fit(clients)  # fmt: skip
            cpu = time.process_time() - start
            graph = model.graph_
            print(
                f"{seed:4d} {label:9s} {shd(truth, graph):4d} {graph.n_edges:6d} "
                f"{truth.n_edges:11d} {cpu:6.1f}"
            )


if __name__ == "__main__":
    main()
