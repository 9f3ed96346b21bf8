"""FED-CD / ENCO speed and memory on 2 cores (targets: docs/benchmarks.md).

1. ENCO, 30 epochs, ER-2 with d = 20 (5,000 observational rows + 200 per variable):
   wall time, SHD, peak resident memory. Target: <= 3 minutes.
2. FED-CD, 2 clients x 10 rounds x 2 epochs on the same data set, split
   horizontally: wall time and SHD. Target: <= 6 minutes; peak memory <= 2 GB.

Usage: ``python benchmarks/fedcd.py [--epochs 30] [--rounds 10]``
"""

from __future__ import annotations

import argparse
import resource
import time

from fedstruct.data.scm import CategoricalSCM
from fedstruct.graphs.metrics import shd
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.methods.fedcd import (
    ENCO,
    Beliefs,
    FedCD,
    InterventionalData,
    final_graph,
    horizontal_interventions,
)


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    dag = erdos_renyi_dag(20, seed=args.seed, edges_per_node=2.0, shuffle=True)
    scm = CategoricalSCM(dag, seed=args.seed)
    sizes = {"n_observational": 5000, "n_per_intervention": 200, "seed": args.seed}
    [whole] = horizontal_interventions(scm, 1, **sizes)
    data = InterventionalData.from_client(whole)

    start = time.perf_counter()
    beliefs = ENCO().fit(data, Beliefs.uniform(20), epochs=args.epochs, seed=args.seed)
    enco_s = time.perf_counter() - start
    enco_shd = shd(dag, final_graph(data.names, beliefs))
    print(f"ENCO {args.epochs} epochs: {enco_s:.1f} s, SHD {enco_shd}, peak {peak_mb():.0f} MB")

    clients = horizontal_interventions(scm, 2, **sizes)
    start = time.perf_counter()
    model = FedCD(rounds=args.rounds, epochs_per_round=2, seed=args.seed).fit(clients)
    fed_s = time.perf_counter() - start
    print(
        f"FED-CD 2 clients x {args.rounds} rounds x 2 epochs: {fed_s:.1f} s, "
        f"SHD {shd(dag, model.graph_)}, peak {peak_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
