"""The mixed-data CI test ("dg") against Fisher-z on codes and G² on binned data.

Usage: ``python benchmarks/mixed_ci.py [--seeds 5] [--variables 16] [--sizes 2000 10000]
[--learners pc fci] [--bins 4] [--timing-n 10000] [--timing-variables 20] [--repeats 3]``

1. Quality (issue 31, "Mixed-data test correctness"): per seed, an Erdős–Rényi DAG
   (1.5 edges per node) over ``--variables`` variables, half of them categorical
   (alternately binary and 3-category), the rest real, with the mechanisms of
   :class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`; ``n`` rows for
   each size. Each learner (alpha = 0.05) runs with ``"dg"``, with ``"fisherz"`` on the
   same frame (categorical codes read as numbers) and with ``"g2"`` on a copy whose real
   columns are cut into ``--bins`` equal-frequency bins. Reported: the skeleton F1
   against the DAG's skeleton, mean over the seeds (and the per-seed minimum of the
   margin dg - best other).
2. Speed (issue 31, "Speed"): FCI with "dg" and with "fisherz" on one data set of
   ``--timing-n`` rows and ``--timing-variables`` variables, median wall time of
   ``--repeats`` runs each (alternated in one process, after one untimed run each),
   the ratio and the tests run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.discovery import fci, pc
from fedstruct.graphs.random import erdos_renyi_dag

LEARNERS = {"pc": pc, "fci": fci}
TESTS = ("dg", "fisherz", "g2-binned")


def mixed_model(seed: int, d: int) -> ConditionalGaussianSCM:
    """Half of the variables categorical (binary and 3-category alternately), half real."""
    dag = erdos_renyi_dag(d, seed=seed, edges_per_node=1.5)
    chosen = np.random.default_rng(seed).permutation(d)[: d // 2].tolist()
    kinds = dict.fromkeys(dag.names, "real")
    for rank, k in enumerate(chosen):
        kinds[dag.names[k]] = "binary" if rank % 2 else "categorical"
    return ConditionalGaussianSCM(dag, kinds, seed=seed)


def binned(frame: pd.DataFrame, bins: int) -> pd.DataFrame:
    """Real columns cut into ``bins`` equal-frequency bins (codes 0..bins-1)."""
    out = frame.copy()
    for col in frame.columns:
        if frame[col].dtype.kind == "f":
            out[col] = pd.qcut(frame[col], bins, labels=False).astype(np.int64)
    return out


def skeleton_f1(marks: np.ndarray, model: ConditionalGaussianSCM) -> float:
    names = list(model.dag.names)
    truth = np.zeros(marks.shape, dtype=bool)
    for child in names:
        for parent in model.dag.parents(child):
            a, b = names.index(child), names.index(parent)
            truth[a, b] = truth[b, a] = True
    learned = marks != 0
    tp = (learned & truth).sum() / 2
    wrong = (learned ^ truth).sum() / 2
    return float(2 * tp / (2 * tp + wrong)) if tp + wrong else 1.0


def quality(args: argparse.Namespace) -> None:
    print(f"skeleton F1, mean over seeds 0..{args.seeds - 1}, {args.variables} variables")
    print("learner       n      dg  fisherz  g2-binned   min margin  (dg - best other)")
    for name in args.learners:
        for n in args.sizes:
            scores = {t: [] for t in TESTS}
            for seed in range(args.seeds):
                model = mixed_model(seed, args.variables)
                frame = model.sample(n, seed=1000 + seed).frame
                for test, data, ci in (
                    ("dg", frame, "dg"),
                    ("fisherz", frame, "fisherz"),
                    ("g2-binned", binned(frame, args.bins), "g2"),
                ):
                    result = LEARNERS[name](data, test=ci)
                    scores[test].append(skeleton_f1(np.asarray(result.graph.marks), model))
            mean = {t: float(np.mean(v)) for t, v in scores.items()}
            margin = min(
                scores["dg"][s] - max(scores["fisherz"][s], scores["g2-binned"][s])
                for s in range(args.seeds)
            )
            print(
                f"{name:5s} {n:9,d}  {mean['dg']:.3f}  {mean['fisherz']:.3f}    "
                f"{mean['g2-binned']:.3f}      {margin:+.3f}",
                flush=True,
            )


def speed(args: argparse.Namespace) -> None:
    model = mixed_model(0, args.timing_variables)
    frame = model.sample(args.timing_n, seed=1000).frame
    times: dict[str, list[float]] = {"dg": [], "fisherz": []}
    tests = {}
    for test in times:  # one untimed run each first (first-call costs)
        fci(frame, test=test)
    for _ in range(args.repeats):
        for test in times:
            start = time.perf_counter()
            result = fci(frame, test=test)
            times[test].append(time.perf_counter() - start)
            tests[test] = result.n_tests
    med = {t: float(np.median(v)) for t, v in times.items()}
    print(
        f"FCI, n = {args.timing_n:,}, {args.timing_variables} variables, median of "
        f"{args.repeats}: dg {med['dg']:.2f} s ({tests['dg']} tests), fisherz "
        f"{med['fisherz']:.2f} s ({tests['fisherz']} tests), ratio {med['dg'] / med['fisherz']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--variables", type=int, default=16)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--learners", nargs="+", choices=sorted(LEARNERS), default=["pc", "fci"])
    parser.add_argument("--bins", type=int, default=4)
    parser.add_argument("--timing-n", type=int, default=10_000)
    parser.add_argument("--timing-variables", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    quality(args)
    speed(args)


if __name__ == "__main__":
    main()
