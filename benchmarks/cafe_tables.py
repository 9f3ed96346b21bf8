"""The pooled reference for CAFE on the breast-cancer-skew example (docs/your-data.md,
"Mixed tables, method by method", CAFE; docs/benchmarks.md).

The example's four hospitals (``python examples/make_examples.py breast-cancer-skew``:
a Dirichlet(0.5) label skew, a categorical ``tumour_size``, 3 % of the values missing)
each hold out 20 % of their rows (``test_fraction=0.2``, the split the sites draw with
the run's seed: :func:`fedstruct.fl.holdout_split`). This fits, on every site's
training rows pooled, ``SimpleImputer(mean, add_indicator=True) + StandardScaler +
LogisticRegression`` over ``tumour_size`` one-hot and the measurements, and scores it
on the held-out rows, beside the majority class's share of the training rows: the
ceiling and the floor that the federated runs' ``accuracy`` and ``majority_accuracy``
are read against.

Usage: ``python benchmarks/cafe_tables.py [--seeds 0 1 2]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from fedavg_tables import pooled_split
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "breast-cancer-skew"
TARGET = "diagnosis"


def features(rows: pd.DataFrame) -> pd.DataFrame:
    """The measurements and ``tumour_size`` one-hot (a missing size: every column 0
    and its own indicator)."""
    sizes = pd.get_dummies(rows["tumour_size"], prefix="size", dummy_na=True, dtype=float)
    return pd.concat([rows.drop(columns=["tumour_size", TARGET]), sizes], axis=1)


def pooled_accuracy(sites: list[pd.DataFrame], seed: int) -> tuple[float, float]:
    """The pooled logistic regression's held-out accuracy, and the majority class's
    share of the training rows."""
    train, test = pooled_split(sites, seed)
    x_train, x_test = features(train).align(features(test), join="left", axis=1, fill_value=0)
    model = make_pipeline(SimpleImputer(add_indicator=True), StandardScaler(),
                          LogisticRegression(max_iter=5000))  # fmt: skip
    model.fit(x_train, train[TARGET])
    accuracy = float(np.mean(model.predict(x_test) == test[TARGET].to_numpy()))
    return accuracy, float(train[TARGET].value_counts(normalize=True).iloc[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    sites = [pd.read_csv(EXAMPLE / f"hospital-{k}.csv") for k in range(1, 5)]
    for seed in args.seeds:
        accuracy, majority = pooled_accuracy(sites, seed)
        print(f"seed {seed}: pooled LogisticRegression accuracy {accuracy:.4f}, "
              f"majority class {majority:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
