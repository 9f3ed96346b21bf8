"""Reading a 60-node run's artifact set: ``fedstruct.load`` and every graph file.

A FedCDnv run on hepar2 (70 variables; 6 clients over overlapping variable sets, as
its benchmark draws them) is saved once; then, in this process, the time to load the
fitted estimator from ``model.json`` + ``model.safetensors`` and to read its graphs
in every format (JSON, DOT, GraphML, edges CSV; FedG and FeddG). Median of several
repeats; the goal is under 0.5 s (docs/benchmarks.md).

Run: ``.venv/bin/python benchmarks/artifacts.py [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fedstruct.graphs.io import read_graph_with_weights
from fedstruct.runs import execute
from fedstruct.runs.artifacts import graph_files, load

SETTINGS = {"network": "hepar2", "clients": 6, "max_samples": 2000, "min_samples": 2000}


def read_all(folder: Path) -> int:
    """Load the run and read every graph file; the number of edges read."""
    model = load(folder)
    edges = 0
    for stem in model.learned_graphs():
        for name in graph_files(stem).values():
            edges += read_graph_with_weights(folder / name).graph.n_edges
    return edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "run"
        execute("fedcdnv", [SETTINGS], folder)
        model = load(folder)
        read_all(folder)  # warm the imports
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            edges = read_all(folder)
            times.append(time.perf_counter() - start)
        size = sum(p.stat().st_size for p in folder.iterdir() if p.suffix != ".pkl")
        print(
            f"hepar2 FedCDnv artifacts: {model.graph_.n_nodes} variables, "
            f"{model.graph_.n_edges} + {model.definite_graph_.n_edges} edges, "
            f"{size / 1e3:.0f} kB; load + read every graph file ({edges} edges read): "
            f"median {statistics.median(times):.3f} s over {args.repeats} "
            f"(min {min(times):.3f}, max {max(times):.3f})"
        )


if __name__ == "__main__":
    main()
