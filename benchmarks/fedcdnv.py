"""FedCDnv targets: oracle correctness of local FCI, and the federation's CPU time.

1. With the perfect (oracle) CI test, local FCI must return exactly the true PAG
   (``dag_to_pag``) of every bundled network with 15% of its variables latent.
2. The six-client alarm federation (§4.1 defaults: 15% latent, 85% of the rest per
   client, n_k in [100, 2000]) must take under 3 s of CPU in total: local FCI,
   C-Update, the stability evidence, TPSS and the status matrices.

Run: ``.venv/bin/python benchmarks/fedcdnv.py [--seeds 3] [--latent-seed 4]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fedstruct.data import load_network, network_names
from fedstruct.discovery import OracleTest, fci
from fedstruct.graphs import dag_to_pag
from fedstruct.methods.fedcdnv import FedCDnv, variable_subset_clients, variable_subsets

#: Networks whose possible-D-SEP phase needs a bound with the oracle (see docs/local_learners.md).
PDS_DEPTH = {"water": 3}


def oracle_exactness(latent_seed: int) -> None:
    print(f"oracle FCI vs dag_to_pag, 15% latent (seed {latent_seed}):")
    for name in network_names():
        dag = load_network(name).graph
        rng = np.random.default_rng(latent_seed)
        k = round(0.15 * dag.n_nodes)
        latent = sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))
        start = time.perf_counter()
        result = fci(OracleTest(dag, latent), pds_depth=PDS_DEPTH.get(name))
        elapsed = time.perf_counter() - start
        exact = result.graph == dag_to_pag(dag, latent)
        print(
            f"  {name:<11} {dag.n_nodes:>4} nodes, {k:>2} latent: "
            f"{'exact' if exact else 'DIFFERENT'} in {elapsed:6.2f} s ({result.n_tests} tests)"
        )


def federation_cpu(seeds: int) -> None:
    net = load_network("alarm")
    times = []
    for seed in range(seeds):
        split = variable_subsets(net.names, 6, seed=seed, overlap=0.85, latent=0.15)
        clients = variable_subset_clients(net, split, seed=seed)
        start = time.process_time()
        FedCDnv().fit(clients)
        times.append(time.process_time() - start)
        print(
            f"  seed {seed}: {times[-1]:.2f} s CPU "
            f"(n_k {min(c.n_rows for c in clients)}-{max(c.n_rows for c in clients)})"
        )
    print(f"six-client alarm federation: median {statistics.median(times):.2f} s CPU (goal < 3 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--latent-seed", type=int, default=4)
    args = parser.parse_args()
    oracle_exactness(args.latent_seed)
    federation_cpu(args.seeds)


if __name__ == "__main__":
    main()
