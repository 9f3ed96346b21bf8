"""What tiered knowledge buys the FedCDnv federation: F1, SHD and CI tests.

Usage: ``python benchmarks/knowledge_fedcdnv.py [--networks alarm hepar2] [--tiers 3]
[--seeds 0 1 2] [--out DIR]``

Each run is ``fedstruct run fedcdnv --network NET --seed S --quiet`` (the default
federation: 6 clients over overlapping variable sets, 15 % latent variables, 100-2000
rows per client, G², TPSS), once without and once with ``--knowledge FILE``, FILE
holding the network's topological order, restricted to the run's observed variables
(the names of the run without knowledge's graph.json: the latent ones are drawn from
the seed and may not be named), cut into ``tiers`` tiers of (nearly) equal size
(nothing else). Reported from each run's metrics.json: ``f1_orientation`` (FedCDnv's
convention, both marks equal, against the true PAG over the observed variables),
``f1_arrowhead``, ``f1_edge``, ``shd`` and ``tests`` (the CI tests of every client),
and ``reach-F1``: the same orientation F1 of graph.json against the true PAG *with the
run's knowledge applied*
(:func:`~fedstruct.discovery.knowledge_truth.reachable_graph`, the latent variables
being those in no client); then the means over the seeds. ``--reuse`` reads the runs
already in ``--out`` instead of running them again.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.knowledge_truth import reachable_graph
from fedstruct.graphs.io import read_graph
from fedstruct.graphs.metrics import orientation_scores

KEYS = ("f1_orientation", "f1_arrowhead", "f1_edge", "shd", "tests")
COLUMNS = (*KEYS, "reach-F1")


def tiers_file(network: str, k: int, observed: list[str], path: Path) -> Path:
    """Write the network's topological order over ``observed``, cut into ``k`` tiers, as
    a knowledge file."""
    order = [n for n in load_network(network).graph.topological_order() if n in set(observed)]
    tiers = [list(part) for part in np.array_split(np.array(order, dtype=object), k)]
    path.write_text(json.dumps({"tiers": tiers}))
    return path


def reach_f1(network: str, knowledge: Path | None, out: Path) -> float:
    """Orientation F1 of the run's graph.json against the true PAG with the knowledge."""
    graph = read_graph(out / "graph.json")
    dag = load_network(network).graph
    latent = [n for n in dag.names if n not in set(graph.names)]
    told = None if knowledge is None else Knowledge.read(knowledge)
    return orientation_scores(reachable_graph(dag, latent, told, "fci"), graph, "edge").f1


def run(
    network: str, seed: int, knowledge: Path | None, out: Path, reuse: bool
) -> dict[str, float]:
    """One ``fedstruct run fedcdnv`` (or, with ``reuse``, the one in ``out``); its
    :data:`COLUMNS`."""
    if not (reuse and (out / "metrics.json").is_file()):
        run_cli(network, seed, knowledge, out)
    metrics = json.loads((out / "metrics.json").read_text())
    return {key: float(metrics[key]) for key in KEYS} | {
        "reach-F1": reach_f1(network, knowledge, out)
    }


def run_cli(network: str, seed: int, knowledge: Path | None, out: Path) -> None:
    """``fedstruct run fedcdnv`` into ``out``."""
    command = [sys.executable, "-m", "fedstruct.cli", "run", "fedcdnv", "--network", network,
               "--seed", str(seed), "--quiet", "--overwrite", "--out", str(out)]  # fmt: skip
    if knowledge is not None:
        command += ["--knowledge", str(knowledge)]
    subprocess.run(command, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "hepar2"])
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("knowledge-fedcdnv-runs"))
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("network  seed knowledge  " + "  ".join(f"{k:>14s}" for k in COLUMNS))
    table: dict[tuple[str, str], list[list[float]]] = {}
    for network in args.networks:
        for seed in args.seeds:
            knowledge = args.out / f"{network}-{seed}-tiers.json"
            for label in ("none", "tiers"):
                folder = args.out / f"{network}-{label}-{seed}"
                if label == "tiers":
                    names = json.loads(
                        (args.out / f"{network}-none-{seed}" / "graph.json").read_text()
                    )
                    tiers_file(network, args.tiers, names["names"], knowledge)
                got = run(
                    network, seed, knowledge if label == "tiers" else None, folder, args.reuse
                )
                values = [got[k] for k in COLUMNS]
                table.setdefault((network, label), []).append(values)
                shown = "  ".join(f"{v:14.3f}" for v in values)
                print(f"{network:8s} {seed:4d} {label:9s}  {shown}", flush=True)
    print("\nmeans over the seeds")
    for (network, label), values in table.items():
        shown = "  ".join(f"{v:14.3f}" for v in np.mean(values, axis=0))
        print(f"{network:8s} mean {label:9s}  {shown}")


if __name__ == "__main__":
    main()
