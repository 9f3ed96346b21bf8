"""The mixed-data CI tests ("cg", "dg") against Fisher-z on codes and G² on binned data.

Usage: ``python benchmarks/mixed_ci.py [--seeds 5] [--variables 16] [--sizes 2000 10000]
[--learners pc fci] [--mixed cg cg-cell dg] [--bins 4] [--timing-n 10000]
[--timing-variables 20] [--repeats 3] [--skip-quality] [--skip-speed]``

1. Quality (issue 31, "Mixed-data test correctness"): per seed, an Erdős–Rényi DAG
   (1.5 edges per node) over ``--variables`` variables, half of them categorical
   (alternately binary and 3-category), the rest real, with the mechanisms of
   :class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`
   (benchmarks/mixed_model.py); ``n`` rows for each size. Each learner (alpha = 0.05)
   runs with each mixed test of ``--mixed`` (``"cg"``: conditional Gaussian with a
   covariance pooled over the cells, ``"cg-cell"``: with one covariance per cell,
   ``"dg"``: degenerate Gaussian), with ``"fisherz"`` on the same frame (categorical codes read
   as numbers) and with ``"g2"`` on a copy whose real columns are cut into ``--bins``
   equal-frequency bins. Reported: the skeleton F1 against the DAG's skeleton, mean
   over the seeds, and per mixed test the per-seed minimum of its margin over the
   better of Fisher-z and binned G².
2. Speed (issue 31, "Speed"): FCI with each mixed test and with "fisherz" on one data
   set of ``--timing-n`` rows and ``--timing-variables`` variables, median wall time of
   ``--repeats`` runs each (alternated in one process, after one untimed run each),
   the ratio to Fisher-z and the tests run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from mixed_model import mixed_model, skeleton_f1

from fedstruct.discovery import ConditionalGaussianTest, fci, pc

LEARNERS = {"pc": pc, "fci": fci}
BASELINES = ("fisherz", "g2-binned")
MIXED = ("cg", "cg-cell", "dg")


def learn(learner: str, frame: pd.DataFrame, test: str) -> object:
    """``learner`` on ``frame`` with ``test`` (``"cg-cell"``: the CG test with a
    covariance per cell, Andrews et al.'s heterogeneous form)."""
    if test == "cg-cell":
        return LEARNERS[learner](ConditionalGaussianTest(frame, covariance="cell"))
    return LEARNERS[learner](frame, test=test)


def binned(frame: pd.DataFrame, bins: int) -> pd.DataFrame:
    """Real columns cut into ``bins`` equal-frequency bins (codes 0..bins-1)."""
    out = frame.copy()
    for col in frame.columns:
        if frame[col].dtype.kind == "f":
            out[col] = pd.qcut(frame[col], bins, labels=False).astype(np.int64)
    return out


def quality(args: argparse.Namespace) -> None:
    tests = (*args.mixed, *BASELINES)
    print(f"skeleton F1, mean over seeds 0..{args.seeds - 1}, {args.variables} variables")
    print(
        "learner       n  "
        + "  ".join(f"{t:>9s}" for t in tests)
        + "  "
        + "  ".join(f"margin {t} (min)" for t in args.mixed)
    )
    for name in args.learners:
        for n in args.sizes:
            scores: dict[str, list[float]] = {t: [] for t in tests}
            for seed in range(args.seeds):
                model = mixed_model(seed, args.variables)
                frame = model.sample(n, seed=1000 + seed).frame
                runs = [(t, frame, t) for t in args.mixed]
                runs += [
                    ("fisherz", frame, "fisherz"),
                    ("g2-binned", binned(frame, args.bins), "g2"),
                ]
                for test, data, ci in runs:
                    result = learn(name, data, ci)
                    scores[test].append(skeleton_f1(result.graph, model.dag))
            mean = {t: float(np.mean(v)) for t, v in scores.items()}
            best_other = [max(scores[b][s] for b in BASELINES) for s in range(args.seeds)]
            margins = [
                min(scores[t][s] - best_other[s] for s in range(args.seeds)) for t in args.mixed
            ]
            print(
                f"{name:5s} {n:9,d}  "
                + "  ".join(f"{mean[t]:9.3f}" for t in tests)
                + "  "
                + "  ".join(f"{m:+15.3f}" for m in margins),
                flush=True,
            )


def speed(args: argparse.Namespace) -> None:
    model = mixed_model(0, args.timing_variables)
    frame = model.sample(args.timing_n, seed=1000).frame
    times: dict[str, list[float]] = {t: [] for t in (*args.mixed, "fisherz")}
    tests = {}
    for test in times:  # one untimed run each first (first-call costs)
        learn("fci", frame, test)
    for _ in range(args.repeats):
        for test in times:
            start = time.perf_counter()
            result = learn("fci", frame, test)
            times[test].append(time.perf_counter() - start)
            tests[test] = result.n_tests
    med = {t: float(np.median(v)) for t, v in times.items()}
    print(
        f"FCI, n = {args.timing_n:,}, {args.timing_variables} variables, median of "
        f"{args.repeats}: "
        + ", ".join(f"{t} {med[t]:.2f} s ({tests[t]} tests)" for t in times)
        + "; ratio to fisherz: "
        + ", ".join(f"{t} {med[t] / med['fisherz']:.2f}" for t in args.mixed)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--variables", type=int, default=16)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--learners", nargs="+", choices=sorted(LEARNERS), default=["pc", "fci"])
    parser.add_argument("--mixed", nargs="+", choices=MIXED, default=list(MIXED))
    parser.add_argument("--bins", type=int, default=4)
    parser.add_argument("--timing-n", type=int, default=10_000)
    parser.add_argument("--timing-variables", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    if not args.skip_quality:
        quality(args)
    if not args.skip_speed:
        speed(args)


if __name__ == "__main__":
    main()
