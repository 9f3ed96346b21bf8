"""FedCDnv's two readings of the paper, side by side on the same federations (issue 34).

- ``definite_from``: FeddG and the definite pairs read from G0's status matrix
  (``"g0"``, Algorithm 1, line 17) or from one rebuilt on FedG (``"fedg"``).
- ``weight_count``: eq. (3)'s count, the non-stable clients (``"non_stable"``, the text
  after eq. 3) or every observer (``"observers"``).

Each federation (network, |V|, δ, seed) is fitted once: the clients' work (local FCI,
C-Update, p-values) does not depend on either choice, so the server's aggregation is
repeated for each of the four combinations on the same round-2 reports, and each is
scored as ``fedstruct run fedcdnv`` scores FedG (Table 2's FDRs, edge and orientation
F1, FeddG's edges and definite pairs). The means over seeds are printed as a markdown
table.

Run: ``PYTHONPATH=src python benchmarks/fedcdnv_readings.py --variables 10 20 30 --seeds 5``
(``--network alarm`` for a bundled network; ``--overlap 0.6``; ``--out FILE.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.graphs import Graph
from fedstruct.methods.fedcdnv import FedCDnv, FedCDnvConfig, graph_scores
from fedstruct.methods.fedcdnv.aggregate import WEIGHT_COUNTS, aggregate
from fedstruct.methods.fedcdnv.config import DEFINITE_FROM
from fedstruct.methods.fedcdnv.server import FedCDnvServer, definite_graph, feddg_status
from fedstruct.methods.fedcdnv.settings import FedCDnvRun
from fedstruct.methods.fedcdnv.sources import VariableSubsetTask
from fedstruct.methods.fedcdnv.theory import definite_pairs
from fedstruct.runs.settings import subset

METRICS = ("f1_edge", "f1_orientation", "f1_arrowhead", "fdr_c", "fdr_dc", "fdr_nc", "fdr_dnc")
COUNTS = ("definite_causal", "definite_noncausal", "feddg_edges")


class ProbeServer(FedCDnvServer):
    """The FedCDnv server that also keeps FedG and FeddG's status for every
    combination of ``weight_count`` and ``definite_from`` (no knowledge)."""

    def _finish(self, state, reports, together) -> None:  # type: ignore[no-untyped-def]
        self.variants: dict[tuple[str, str], tuple[Graph, np.ndarray]] = {}
        for count in WEIGHT_COUNTS:
            fed = aggregate(
                reports, state.names, self.config.strategy, stat=state.stat0, weight_count=count
            ).graph
            for reading in DEFINITE_FROM:
                stat = feddg_status(reading, state.stat0, fed, together)
                self.variants[(count, reading)] = (fed, stat)
        super()._finish(state, reports, together)


class ProbeFedCDnv(FedCDnv):
    """FedCDnv with :class:`ProbeServer` (the last fit's server stays readable)."""

    def make_server(self) -> ProbeServer:
        self.probe = ProbeServer(self.config_)
        return self.probe


def one_federation(settings: FedCDnvRun) -> dict[str, dict[str, float]]:
    """Scores of the four combinations on one federation."""
    task = VariableSubsetTask(settings)
    model = ProbeFedCDnv(seed=settings.seed, **dataclasses.asdict(subset(settings, FedCDnvConfig)))
    model.fit(list(task.clients()))
    mine = model.probe.variants[(settings.weight_count, settings.definite_from)]
    assert mine[0] == model.graph_, "the probe's FedG must be the run's"
    truth = task.truth
    out = {}
    for (count, reading), (fed, stat) in model.probe.variants.items():
        causal, noncausal = definite_pairs(stat, fed.names, fed)
        scores = graph_scores(truth, fed.expand(truth.names), [*causal, *noncausal])
        row = {m: scores.get(m, float("nan")) for m in METRICS}
        row["definite_causal"] = float(len(causal))
        row["definite_noncausal"] = float(len(noncausal))
        row["feddg_edges"] = float(definite_graph(fed, stat).n_edges)
        out[f"{count}/{reading}"] = row
    return out


def sweep(
    network: str, sizes: Sequence[int], overlap: float, seeds: Sequence[int]
) -> dict[str, Any]:
    """Every (size, seed): the four combinations' scores, and their means per size."""
    results: dict[str, Any] = {}
    for size in sizes:
        runs = []
        for seed in seeds:
            start = time.perf_counter()
            settings = FedCDnvRun(network=network, variables=size, overlap=overlap, seed=seed)
            runs.append(one_federation(settings))
            print(f"  {network} |V|={size} seed {seed}: {time.perf_counter() - start:.1f} s")
        label = str(size) if network == "synthetic" else network
        results[label] = {
            combo: {k: float(np.nanmean([r[combo][k] for r in runs])) for k in runs[0][combo]}
            for combo in runs[0]
        }
    return results


def markdown(results: dict[str, Any]) -> str:
    """One row per (size, combination)."""
    keys = [*METRICS, *COUNTS]
    lines = ["| |V| | weight_count/definite_from | " + " | ".join(keys) + " |"]
    lines.append("|---|---|" + "---|" * len(keys))
    for label, combos in results.items():
        for combo, row in combos.items():
            cells = " | ".join(f"{row[k]:.4f}" if k in METRICS else f"{row[k]:.1f}" for k in keys)
            lines.append(f"| {label} | {combo} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="synthetic")
    parser.add_argument("--variables", type=int, nargs="+", default=[30])
    parser.add_argument("--overlap", type=float, default=0.85)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = sweep(args.network, args.variables, args.overlap, range(args.seeds))
    print(markdown(results))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
