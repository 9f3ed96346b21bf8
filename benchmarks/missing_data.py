"""Test-wise deletion against list-wise deletion (drop-rows) under missing values.

Usage: ``python benchmarks/missing_data.py [--seeds 3] [--alarm-n 5000] [--cg-n 2000]
[--cg-variables 16] [--rates 0.1 0.3] [--learner pc] [--alpha 0.05]``

Issue 31, target "Missing data": on alarm (37 categorical variables, bnlearn) and on
the conditional-Gaussian mixed model
(:class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`, an Erdős–Rényi
DAG with 1.5 edges per node, half of the variables categorical), per seed one sample
of ``n`` rows, learned with ``--learner`` (``ci_test="auto"``: G² on alarm; on the
mixed model the conditional-Gaussian test where the median rows per variable pair
reach ``cg_min_rows`` = 1,500, else the degenerate-Gaussian test: printed per seed) on

- the complete data;
- every value missing completely at random (MCAR) with probability ``rate``:
  ``testwise`` (each test on the rows complete on its variables, the discovery
  default) and ``drop-rows`` (only the rows with no missing value; columns left
  constant are dropped and count as isolated; no row left: the empty graph);
- values missing at random (MAR): a fifth of the variables (chosen at random) are
  always observed; every other variable ``V`` is missing with probability
  ``1.6 · rate`` in the rows where its "driver" (one of the observed fifth, chosen
  at random) is above its median (for a categorical driver: above its median code),
  else ``0.4 · rate`` — on average about ``rate``; the missingness of ``V`` depends on
  an observed variable, not on ``V``.

Reported: the skeleton F1 against the DAG's skeleton, mean over the seeds, and the
margins testwise - complete and testwise - drop-rows (mean and per-seed minimum).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from mixed_model import mixed_model, skeleton_f1

from fedstruct.data import load_network
from fedstruct.discovery import choose_ci_test, fci, pc
from fedstruct.discovery.kinds import median_pair_rows
from fedstruct.graphs import Graph

LEARNERS = {"pc": pc, "fci": fci}


def with_holes(frame: pd.DataFrame, holes: np.ndarray) -> pd.DataFrame:
    """``frame`` with the entries ``holes`` marks missing: ``-1`` codes, NaN numbers."""
    out = frame.copy()
    for k, col in enumerate(frame.columns):
        if frame[col].dtype.kind == "i":
            out[col] = np.where(holes[:, k], -1, frame[col].to_numpy())
        else:
            out[col] = np.where(holes[:, k], np.nan, frame[col].to_numpy())
    return out


def mcar(frame: pd.DataFrame, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Every entry missing with probability ``rate``, independently."""
    return rng.random(frame.shape) < rate


def mar(frame: pd.DataFrame, rate: float, rng: np.random.Generator) -> np.ndarray:
    """The MAR mechanism of the module docstring."""
    n, d = frame.shape
    order = rng.permutation(d)
    observed, others = order[: max(1, d // 5)], order[max(1, d // 5) :]
    holes = np.zeros((n, d), dtype=bool)
    for k in others:
        driver = frame.iloc[:, int(rng.choice(observed))].to_numpy()
        high = driver > np.median(driver)
        p = np.where(high, 1.6 * rate, 0.4 * rate)
        holes[:, k] = rng.random(n) < p
    return holes


def drop_rows(frame: pd.DataFrame, holes: np.ndarray) -> pd.DataFrame | None:
    """The rows with no missing value, constant columns dropped; ``None``: too few."""
    rows = frame[~holes.any(axis=1)]
    rows = rows.loc[:, rows.nunique() > 1]
    return rows if len(rows) >= 10 and rows.shape[1] >= 2 else None


def one_seed(
    frame: pd.DataFrame,
    dag: Graph,
    learn: Callable[..., object],
    rates: list[float],
    seed: int,
    alpha: float,
) -> dict[str, float]:
    """Every condition's skeleton F1 on one sample (printing the test ``"auto"`` ran)."""
    picks = [f"complete {choose_ci_test(frame)}"]
    out = {"complete": skeleton_f1(learn(frame, alpha=alpha).graph, dag)}  # type: ignore[attr-defined]
    for mechanism, draw in (("mcar", mcar), ("mar", mar)):
        for rate in rates:
            holes = draw(frame, rate, np.random.default_rng(10_000 + seed))
            holed = with_holes(frame, holes)
            result = learn(holed, alpha=alpha)
            picks.append(
                f"{mechanism}{rate:g} {choose_ci_test(holed)} ({median_pair_rows(holed):.0f})"
            )
            out[f"{mechanism}{rate:g}-testwise"] = skeleton_f1(result.graph, dag)  # type: ignore[attr-defined]
            kept = drop_rows(frame, holes)
            out[f"{mechanism}{rate:g}-droprows"] = (
                0.0 if kept is None else skeleton_f1(learn(kept, alpha=alpha).graph, dag)  # type: ignore[attr-defined]
            )
            out[f"{mechanism}{rate:g}-droprows-n"] = 0.0 if kept is None else float(len(kept))
            if kept is not None:
                picks.append(f"drop-rows {choose_ci_test(kept)}")
    print(f"  seed {seed}, auto ran (median rows per pair): {'; '.join(picks)}", flush=True)
    return out


def report(name: str, rows: list[dict[str, float]], rates: list[float], seconds: float) -> None:
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
    print(f"\n{name}: {len(rows)} seeds, {seconds:.0f} s; skeleton F1 (mean)")
    print(f"  complete data: {mean['complete']:.3f}")
    print("  mechanism rate  testwise  drop-rows (rows kept)  tw-complete (min)  tw-drop (min)")
    for mechanism in ("mcar", "mar"):
        for rate in rates:
            tw = [r[f"{mechanism}{rate:g}-testwise"] for r in rows]
            dr = [r[f"{mechanism}{rate:g}-droprows"] for r in rows]
            full = [r["complete"] for r in rows]
            kept = mean[f"{mechanism}{rate:g}-droprows-n"]
            to_full = [a - b for a, b in zip(tw, full, strict=True)]
            to_drop = [a - b for a, b in zip(tw, dr, strict=True)]
            print(
                f"  {mechanism:9s} {rate:4.2f}  {np.mean(tw):.3f}     {np.mean(dr):.3f} "
                f"({kept:7.0f})       {np.mean(to_full):+.3f} ({min(to_full):+.3f})  "
                f"{np.mean(to_drop):+.3f} ({min(to_drop):+.3f})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--alarm-n", type=int, default=5000)
    parser.add_argument("--cg-n", type=int, default=2000)
    parser.add_argument("--cg-variables", type=int, default=16)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.3])
    parser.add_argument("--learner", choices=sorted(LEARNERS), default="pc")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--only", choices=["alarm", "cg"], default=None)
    args = parser.parse_args()
    learn = LEARNERS[args.learner]
    if args.only in (None, "alarm"):
        start, rows = time.perf_counter(), []
        network = load_network("alarm")
        for seed in range(args.seeds):
            frame = network.sample(args.alarm_n, seed=seed)
            rows.append(one_seed(frame, network.graph, learn, args.rates, seed, args.alpha))
        report(f"alarm, n = {args.alarm_n:,}, {args.learner}", rows, args.rates,
               time.perf_counter() - start)  # fmt: skip
    if args.only in (None, "cg"):
        start, rows = time.perf_counter(), []
        for seed in range(args.seeds):
            model = mixed_model(seed, args.cg_variables)
            frame = model.sample(args.cg_n, seed=1000 + seed).frame
            rows.append(one_seed(frame, model.dag, learn, args.rates, seed, args.alpha))
        report(
            f"conditional Gaussian, {args.cg_variables} variables, n = {args.cg_n:,}, "
            f"{args.learner}",
            rows,
            args.rates,
            time.perf_counter() - start,
        )


if __name__ == "__main__":
    main()
