"""What tiered knowledge buys the FedCDnv federation: F1, SHD and CI tests.

Usage: ``python benchmarks/knowledge_fedcdnv.py [--networks alarm hepar2] [--tiers 3]
[--seeds 0 1 2] [--out DIR]``

Each run is ``fedstruct run fedcdnv --network NET --seed S --quiet`` (the default
federation: 6 clients over overlapping variable sets, 15 % latent variables, 100-2000
rows per client, G², TPSS), once without and once with ``--knowledge FILE``, FILE
holding the network's topological order cut into ``tiers`` tiers of (nearly) equal size
(nothing else). Reported from each run's metrics.json: ``f1_orientation`` (FedCDnv's
convention, both marks equal, against the true PAG over the observed variables),
``f1_arrowhead``, ``f1_edge``, ``shd`` and ``tests`` (the CI tests of every client),
then their means over the seeds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from fedstruct.data import load_network

KEYS = ("f1_orientation", "f1_arrowhead", "f1_edge", "shd", "tests")


def tiers_file(network: str, k: int, folder: Path) -> Path:
    """Write the network's topological order cut into ``k`` tiers as a knowledge file."""
    order = load_network(network).graph.topological_order()
    tiers = [list(part) for part in np.array_split(np.array(order, dtype=object), k)]
    path = folder / f"{network}-{k}-tiers.json"
    path.write_text(json.dumps({"tiers": tiers}))
    return path


def run(network: str, seed: int, knowledge: Path | None, out: Path) -> dict[str, float]:
    """One ``fedstruct run fedcdnv``; its metrics.json's :data:`KEYS`."""
    command = [sys.executable, "-m", "fedstruct.cli", "run", "fedcdnv", "--network", network,
               "--seed", str(seed), "--quiet", "--overwrite", "--out", str(out)]  # fmt: skip
    if knowledge is not None:
        command += ["--knowledge", str(knowledge)]
    subprocess.run(command, check=True, capture_output=True)
    metrics = json.loads((out / "metrics.json").read_text())
    return {key: float(metrics[key]) for key in KEYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm", "hepar2"])
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("knowledge-fedcdnv-runs"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("network  seed knowledge  " + "  ".join(f"{k:>14s}" for k in KEYS))
    table: dict[tuple[str, str], list[list[float]]] = {}
    for network in args.networks:
        knowledge = tiers_file(network, args.tiers, args.out)
        for seed in args.seeds:
            for label, told in (("none", None), ("tiers", knowledge)):
                got = run(network, seed, told, args.out / f"{network}-{label}-{seed}")
                values = [got[k] for k in KEYS]
                table.setdefault((network, label), []).append(values)
                shown = "  ".join(f"{v:14.3f}" for v in values)
                print(f"{network:8s} {seed:4d} {label:9s}  {shown}", flush=True)
    print("\nmeans over the seeds")
    for (network, label), values in table.items():
        shown = "  ".join(f"{v:14.3f}" for v in np.mean(values, axis=0))
        print(f"{network:8s} mean {label:9s}  {shown}")


if __name__ == "__main__":
    main()
