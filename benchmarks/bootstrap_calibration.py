"""How often a G² test on a resample rejects independence, by how the resample is counted.

docs/confidence.md, "Which resampling": two 3-level variables, ``n`` rows; for each of
``trials`` samples, one bootstrap resample (``n`` rows with replacement) and one half
subsample. The share of tests at ``alpha`` that reject independence, on the sample, on
the resample counted as new rows (the plain bootstrap), on the resample with its
statistic scaled by its share of distinct rows, on the resample at half a row of
evidence each (fedstruct's default), on the half subsample, and on a fresh sample of
``n/2`` rows. ``--dependence E``: ``Y`` copies ``X`` in a share ``E`` of the rows (the
power); 0: independent (the size, which should be ``alpha``).

Run: ``.venv/bin/python benchmarks/bootstrap_calibration.py [--dependence 0.08]``
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from fedstruct.data.client import RESAMPLE_EVIDENCE
from fedstruct.discovery.build import make_ci_test


def draw(rng: np.random.Generator, n: int, dependence: float) -> np.ndarray:
    """``n`` rows of ``(X, Y)``: ``Y`` is ``X`` in a share ``dependence`` of rows, else
    drawn on its own."""
    x = rng.integers(0, 3, n)
    y = np.where(rng.random(n) < dependence, x, rng.integers(0, 3, n))
    return np.column_stack([x, y])


def rejects(rows: np.ndarray, alpha: float, evidence: float = 1.0) -> bool:
    """Whether G² (every test performed) rejects ``X ⊥ Y`` on ``rows`` at ``alpha``."""
    test = make_ci_test(rows, "g2", small_sample="none", evidence=evidence)
    return test.pvalue(0, 1) <= alpha


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--dependence", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n, alpha = args.rows, args.alpha
    counts = dict.fromkeys(
        ("sample", "plain", "distinct_share", "half_evidence", "half_subsample", "fresh_half"), 0
    )
    for _ in range(args.trials):
        sample = draw(rng, n, args.dependence)
        picked = rng.integers(0, n, n)
        resample = sample[picked]
        distinct = len(np.unique(picked)) / n
        counts["sample"] += rejects(sample, alpha)
        counts["plain"] += rejects(resample, alpha)
        counts["distinct_share"] += rejects(resample, alpha, distinct)
        counts["half_evidence"] += rejects(resample, alpha, RESAMPLE_EVIDENCE)
        counts["half_subsample"] += rejects(sample[rng.choice(n, n // 2, replace=False)], alpha)
        counts["fresh_half"] += rejects(draw(rng, n // 2, args.dependence), alpha)
    shares = {k: round(v / args.trials, 3) for k, v in counts.items()}
    print(json.dumps({**vars(args), "rejected": shares}))


if __name__ == "__main__":
    main()
