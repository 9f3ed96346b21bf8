"""Speed of the data generators and of DAG projection (goals once asserted in unit tests).

Usage: ``python benchmarks/sampling.py [--repeats R]``

Median wall time of ``R`` runs (after one warm-up) of

1. forward sampling of 10,000 rows from the bundled alarm network (goal: 0.1 s);
2. sampling 50,000 rows from a 30-variable mixed SCM, ER-1 (goal: 2 s);
3. ``break_cycles`` on a 100-node graph with 20 % of the pairs joined in random
   directions and random strengths (goal: 3 s);
4. reading and sampling 10,000 rows from the largest bundled networks, diabetes, pigs,
   link and munin (issue 51; goal for munin's rows: 2 s).

Timings depend on the machine; the unit tests check only what these produce.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_time

from fedstruct.data import load_network
from fedstruct.data.bif import bundled_bif_path, read_bif
from fedstruct.data.mixed import MixedSCM
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.projection import break_cycles
from fedstruct.graphs.random import erdos_renyi_dag


def cyclic_graph(n: int = 100, density: float = 0.2, seed: int = 3) -> tuple[Graph, np.ndarray]:
    """A directed graph with many cycles and random edge strengths."""
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < density, 1)
    flip = rng.random((n, n)) < 0.5
    adjacency = (upper & ~flip) | (upper & flip).T
    graph = Graph.from_dag_matrix([f"V{i}" for i in range(n)], adjacency)
    return graph, rng.random((n, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    alarm = load_network("alarm")
    scm = MixedSCM.random(erdos_renyi_dag(30, seed=0, edges_per_node=1.0), seed=0)
    graph, strength = cyclic_graph()
    cases = [
        ("alarm: 10,000 rows", lambda: alarm.sample(10_000, seed=1), 0.1),
        ("mixed SCM: 50,000 rows x 30", lambda: scm.sample(50_000, seed=1), 2.0),
        ("break_cycles: 100 nodes", lambda: break_cycles(graph, strength), 3.0),
    ]
    for name in ("diabetes", "pigs", "link", "munin"):
        path = bundled_bif_path(name)
        cases.append((f"{name}: read", lambda path=path: read_bif(path), 5.0))
        network = load_network(name)
        cases.append((f"{name}: 10,000 rows", lambda n=network: n.sample(10_000, seed=1), 2.0))
    print(f"{'case':32s} {'median s':>9s} {'goal s':>7s}")
    for name, fn, goal in cases:
        print(f"{name:32s} {median_time(fn, args.repeats, warmup=True):9.4f} {goal:7.1f}")


if __name__ == "__main__":
    main()
