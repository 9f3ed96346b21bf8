"""FedCDnv on a six-site mixed federation of ~50 variables: how long, how good.

Usage: ``python benchmarks/fedcdnv_mixed.py [--seeds 0 1 2] [--variables 50] [--sites 6]
[--overlap 0.85] [--rows 2000 4000] [--missing 0.05] [--profile]``

Issue 31, target "Speed": "FedCDnv on a 6-site mixed federation of ~50 variables
finishes in minutes (say how many)". Per seed:

- the model of benchmarks/mixed_ci.py: an Erdős–Rényi DAG (1.5 edges per node) over
  ``--variables`` variables, half of them categorical (binary and 3-category
  alternately), half real, sampled from
  :class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`;
- FedCDnv's setting of non-identical variable sets (§4.1,
  :func:`~fedstruct.methods.fedcdnv.variable_subsets`): each of the ``--sites``
  sites observes ``round(overlap * d)`` of the variables, every variable observed
  somewhere and every two sites sharing one; no latent variable, so the truth is
  the DAG's PAG over every variable;
- each site's own sample of ``n_k`` rows, ``n_k`` uniform in ``--rows``, each value then
  missing completely at random with probability ``--missing`` (NaN, code ``-1``);
- FedCDnv with its defaults: ``ci_test="auto"`` (each site's columns are mixed: the
  degenerate-Gaussian test), test-wise deletion of missing values, FCI, TPSS.

Reported per seed: wall time and CPU time of ``FedCDnv().fit`` (this process, every
thread, plus any worker process of FCI's possible-D-SEP phase), CI tests per round,
the skeleton F1 (adjacency precision/recall) and SHD of FedG against the true PAG.
``--profile`` prints where the CPU time went (cProfile, top functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import statistics
import time
from typing import Any

import numpy as np
import pandas as pd
from mixed_ci import mixed_model

from fedstruct.data import ClientData
from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.graphs import dag_to_pag
from fedstruct.methods.fedcdnv import FedCDnv, variable_subset_clients, variable_subsets


class FrameSampler:
    """The model's rows as a plain frame (what ``variable_subset_clients`` draws)."""

    def __init__(self, model: ConditionalGaussianSCM):
        self.model = model

    def sample(self, n: int, *, seed: Any) -> pd.DataFrame:
        return self.model.sample(n, seed=seed).frame


def with_missing(client: ClientData, rate: float, seed: int) -> ClientData:
    """``client`` with each value missing completely at random with probability
    ``rate`` (a real column NaN, a categorical one code ``-1``)."""
    rng = np.random.default_rng([seed, sum(client.name.encode())])
    rows = client.rows.copy()
    for col in rows.columns:
        gone = rng.random(len(rows)) < rate
        rows.loc[gone, col] = -1 if rows[col].dtype.kind in "iu" else np.nan
    return ClientData(client.name, rows, missing_values=True)


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its finished children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def one_seed(seed: int, args: argparse.Namespace) -> dict[str, float]:
    model = mixed_model(seed, args.variables)
    split = variable_subsets(model.dag.names, args.sites, seed=seed, overlap=args.overlap)
    clients = variable_subset_clients(
        FrameSampler(model), split, seed=seed, n_range=(args.rows[0], args.rows[1])
    ).map(lambda c: with_missing(c, args.missing, seed))
    built = list(clients)  # sampled before the clock starts
    truth = dag_to_pag(model.dag, [])
    profiler = cProfile.Profile() if args.profile else None
    wall, cpu = time.perf_counter(), cpu_seconds()
    if profiler is not None:
        profiler.enable()
    learned = FedCDnv().fit(built)
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    scores = learned.evaluate(truth)
    tests = [h.get("tests", 0.0) for h in learned.history_]
    categorical = sum(kind != "real" for kind in model.kinds.values())
    print(
        f"seed {seed}: {args.variables} variables ({categorical} categorical), "
        f"{truth.n_edges} true edges; sites observe {[len(c) for c in split.clients]} "
        f"variables, rows {[c.n_rows for c in built]}, {args.missing:.0%} missing"
    )
    print(
        f"  wall {wall:.1f} s, CPU {cpu:.1f} s; CI tests {sum(tests):,.0f} "
        f"(per round {[int(t) for t in tests]}); ci_test "
        f"{sorted({str(e.get('ci_test')) for e in learned.site_tests_.values()})}"
    )
    print(
        f"  skeleton F1 {scores['f1_edge']:.3f} (precision {scores['precision_edge']:.3f}, "
        f"recall {scores['recall_edge']:.3f}), SHD {scores['shd']:.0f}, "
        f"FedG edges {learned.graph_.n_edges}"
    )
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return {"wall": wall, "cpu": cpu, "tests": sum(tests), "f1": scores["f1_edge"],
            "shd": scores["shd"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variables", type=int, default=50)
    parser.add_argument("--sites", type=int, default=6)
    parser.add_argument("--overlap", type=float, default=0.85)
    parser.add_argument("--rows", type=int, nargs=2, default=(2000, 4000))
    parser.add_argument("--missing", type=float, default=0.05)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    runs = [one_seed(seed, args) for seed in args.seeds]
    if len(runs) > 1:
        print(
            "median over seeds: "
            + ", ".join(f"{k} {statistics.median(r[k] for r in runs):.3g}" for k in runs[0])
        )


if __name__ == "__main__":
    main()
