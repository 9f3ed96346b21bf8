"""Time DAG -> MAG -> PAG (fedstruct.graphs.pag) on Hailfinder-size graphs.

Usage: ``python benchmarks/pag.py [--repeats R] [--graphs G]``

Random DAGs with Hailfinder's size (56 nodes, 66 edges) and 15 % latent variables,
then every bundled network with 15 % latent variables. Prints the median wall time
of ``dag_to_mag``, ``mag_to_pag`` and ``dag_to_pag`` over repeated runs.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from timing import median_time

from fedstruct.data import load_network, network_names
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.pag import dag_to_mag, dag_to_pag, mag_to_pag

N_NODES, N_EDGES, LATENT_SHARE = 56, 66, 0.15


def random_dag(seed: int, n_nodes: int = N_NODES, n_edges: int = N_EDGES) -> Graph:
    """A DAG with exactly ``n_edges`` edges drawn uniformly over a random node order."""
    rng = np.random.default_rng(seed)
    rows, cols = np.tril_indices(n_nodes, -1)
    pick = rng.choice(rows.size, size=n_edges, replace=False)
    matrix = np.zeros((n_nodes, n_nodes), dtype=bool)
    matrix[cols[pick], rows[pick]] = True  # earlier -> later in the random order
    perm = rng.permutation(n_nodes)
    return Graph.from_dag_matrix([f"X{i}" for i in range(n_nodes)], matrix[np.ix_(perm, perm)])


def pick_latent(dag: Graph, seed: int, share: float = LATENT_SHARE) -> list[str]:
    """``round(share * n)`` latent variables chosen uniformly at random."""
    rng = np.random.default_rng(seed)
    k = round(share * dag.n_nodes)
    return sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))


def report(label: str, dag: Graph, latent: list[str], repeats: int) -> None:
    mag = dag_to_mag(dag, latent)
    pag = mag_to_pag(mag)
    t_mag = median_time(lambda: dag_to_mag(dag, latent), repeats)
    t_pag = median_time(lambda: mag_to_pag(mag, validate=False), repeats)
    t_all = median_time(lambda: dag_to_pag(dag, latent), repeats)
    circles = int((pag.marks == 3).sum())
    print(
        f"{label:<28} nodes {dag.n_nodes:>3} edges {dag.n_edges:>3} latent {len(latent):>2} | "
        f"MAG edges {mag.n_edges:>3} (<-> {int(mag.bidirected().sum()) // 2:>2}) "
        f"PAG circles {circles:>3} | dag_to_mag {t_mag * 1e3:7.1f} ms  "
        f"mag_to_pag {t_pag * 1e3:7.1f} ms  dag_to_pag {t_all * 1e3:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per graph (median shown)")
    parser.add_argument("--graphs", type=int, default=5, help="random graphs")
    args = parser.parse_args()
    all_times = []
    for seed in range(args.graphs):
        dag = random_dag(seed)
        latent = pick_latent(dag, seed + 1000)
        report(f"random seed {seed}", dag, latent, args.repeats)
        all_times.append(median_time(lambda d=dag, la=latent: dag_to_pag(d, la), args.repeats))
    print(f"median dag_to_pag over random graphs: {statistics.median(all_times) * 1e3:.1f} ms")
    for seed in range(2):
        dag = random_dag(seed, 100, 150)
        report(f"random 100/150 seed {seed}", dag, pick_latent(dag, seed + 1000), args.repeats)
    for name in network_names():
        dag = load_network(name).graph
        report(f"{name} (15% latent)", dag, pick_latent(dag, 0), args.repeats)


if __name__ == "__main__":
    main()
