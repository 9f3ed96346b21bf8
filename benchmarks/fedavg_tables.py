"""FedAvg on real tables against scikit-learn on the pooled rows (issue 31, targets:
docs/benchmarks.md).

Each case writes the sites' CSV files (:mod:`fedstruct.data.datasets.tables`: four
hospitals of 40/25/20/15 % of the rows), runs ``fedstruct run fedavg`` on them exactly
as the CLI does (every site holds out 20 % of its rows: ``test_fraction=0.2``), and
fits the scikit-learn reference on the pooled training rows of every site; both are
scored on the same held-out rows (each site's, recomputed with
:func:`fedstruct.fl.holdout_split`, the split the sites draw).

* ``breast-cancer``: held-out accuracy of FedAvg (default model: one hidden layer of
  32) against ``StandardScaler + LogisticRegression`` (target: within 2 points);
* ``diabetes``: held-out RMSE of FedAvg's regression (``hidden=0``: a linear model,
  40 rounds) against ``LinearRegression`` (target: within 10 %);
* ``--missing 0.05`` blanks 5 % of every feature's values at random: FedAvg imputes
  them from federated statistics with missing indicators, the reference uses
  ``SimpleImputer(mean, add_indicator=True)`` on the pooled rows.

Usage: ``python benchmarks/fedavg_tables.py [--seeds 0 1 2] [--missing 0.05]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fedstruct.data.datasets.tables import breast_cancer_sites, diabetes_sites
from fedstruct.fl import holdout_split
from fedstruct.runs.contract import execute

TEST_FRACTION = 0.2
CASES = {
    "breast-cancer": (breast_cancer_sites, "diagnosis", {}),
    "diabetes": (diabetes_sites, "progression", {"hidden": 0, "rounds": 40}),
}


def pooled_split(sites: list[pd.DataFrame], seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every site's training rows and held-out rows, pooled (the sites' own split)."""
    train, test = [], []
    for k, rows in enumerate(sites):
        kept, held = holdout_split(len(rows), TEST_FRACTION, seed, f"hospital-{k + 1}")
        train.append(rows.iloc[kept])
        test.append(rows.iloc[held])
    return pd.concat(train), pd.concat(test)


def reference(case: str, train: pd.DataFrame, test: pd.DataFrame, target: str) -> float:
    """The scikit-learn model on the pooled training rows, scored on the held-out rows
    (accuracy, or RMSE)."""
    x_train, x_test = train.drop(columns=target), test.drop(columns=target)
    steps = [SimpleImputer(add_indicator=True)] if train.isna().any().any() else []
    if case == "breast-cancer":
        model = make_pipeline(*steps, StandardScaler(), LogisticRegression(max_iter=5000))
        model.fit(x_train, train[target])
        return float(np.mean(model.predict(x_test) == test[target].to_numpy()))
    model = make_pipeline(*steps, LinearRegression())
    model.fit(x_train, train[target])
    error = model.predict(x_test) - test[target].to_numpy()
    return float(np.sqrt(np.mean(error**2)))


def fedavg(
    sites: list[pd.DataFrame], target: str, seed: int, extra: dict, folder: Path
) -> dict[str, float]:
    """``fedstruct run fedavg`` on the sites' CSV files; its metrics."""
    paths = []
    for k, rows in enumerate(sites):
        path = folder / f"hospital-{k + 1}.csv"
        rows.to_csv(path, index=False)
        paths.append(str(path))
    settings = {"sites": paths, "target": target, "test_fraction": TEST_FRACTION,
                "seed": seed, **extra}  # fmt: skip
    execute("fedavg", [settings], folder / "run")
    return json.loads((folder / "run" / "metrics.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--missing", type=float, default=0.0)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    for case in args.cases:
        make, target, extra = CASES[case]
        for seed in args.seeds:
            sites = make(seed=seed, missing=args.missing)
            with tempfile.TemporaryDirectory() as tmp:
                metrics = fedavg(sites, target, seed, extra, Path(tmp))
            pooled = reference(case, *pooled_split(sites, seed), target)
            if case == "breast-cancer":
                ours = metrics["test_accuracy"]
                print(f"{case} seed {seed} missing {args.missing}: FedAvg accuracy "
                      f"{ours:.4f}, pooled LogisticRegression {pooled:.4f}, "
                      f"difference {100 * (ours - pooled):+.2f} points")  # fmt: skip
            else:
                ours = metrics["test_rmse"]
                print(f"{case} seed {seed} missing {args.missing}: FedAvg RMSE {ours:.2f} "
                      f"(R2 {metrics['test_r2']:.3f}), pooled LinearRegression {pooled:.2f}, "
                      f"ratio {ours / pooled:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
