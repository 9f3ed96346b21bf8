"""FedNGM on real survey and clinical tables (issue 31, item 6; docs/benchmarks.md).

anes96 (statsmodels' 1996 American National Election Study, 944 rows, bundled) is
split into three sites by education (``educ`` 1-3, 4-5, 6-7; ``educ`` and the derived
``logpopul`` left out) and written as integer CSVs, so the sites' kinds are inferred
as a user's would be: ``TVnews``, ``selfLR``, ``ClinLR``, ``DoleLR`` and ``PID``
ordinal (3 to 10 whole-number levels), ``vote`` categorical (two), ``popul``, ``age``
and ``income`` continuous; ``--ordinal`` declares the 7-point scales and ``TVnews``
ordinal (what is inferred since issue 31), ``--categorical`` categorical (what was
inferred before). ``fedstruct run fedngm --site ...`` runs on them (each site keeps
20 % of its rows out), then:

* ``query --target vote --given PID=0`` and ``PID=6`` against the pooled data's
  empirical P(vote | PID) (target: within 0.1);
* 500 ``sample``d rows: P(vote = Dole | PID) per PID level, against the data's;
* held-out vote accuracy of the global model on the rows the sites kept out, against
  a scikit-learn LogisticRegression trained on the pooled training rows
  (categorical columns one-hot, continuous ones standardised; target: within 3
  points), and each site's own model on its rows;
* ``global_own_ratio_<site>`` from metrics.json.

``--missing F``: a share ``F`` of every column's values (``vote`` included) blanked
completely at random in the site files (MCAR, seeded); the accuracies are scored on
the complete versions of the held-out rows, and a second pooled logistic regression
is trained on the incomplete pooled rows with each gap at its column's mean and a
missing-indicator column (``accuracy_pooled_lr_imputed``). ``sampled_dole``: P(Dole)
in 3,000 ``sample``d rows against the pooled data's (the distillation sample size,
``--set distillation_samples=N``, moves it).

``--table breast-cancer``: scikit-learn's breast-cancer data (30 measurements and the
diagnosis) split at random into four hospitals: the diagnosis's neighbours in the
merged graph and its held-out accuracy against pooled logistic regression.

Usage: ``python benchmarks/fedngm_anes96.py [--set KEY=VALUE ...] [--ordinal | --categorical]
[--table anes96|breast-cancer] [--seed S] [--missing F]`` (``--set min_batches=1``: the behaviour
before the fix).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ORDINAL = ("TVnews", "selfLR", "ClinLR", "DoleLR", "PID")


def anes_sites(folder: Path) -> dict[str, pd.DataFrame]:
    """anes96 split by education, one integer CSV per site in ``folder`` (the files
    of ``examples/anes96/``)."""
    from fedstruct.data.datasets.tables import anes96_sites

    sites = anes96_sites()
    for name, rows in sites.items():
        rows.to_csv(folder / f"{name}.csv", index=False)
    return sites


def blank_at_random(sites: dict[str, pd.DataFrame], share: float, folder: Path, seed: int):
    """Each site's file rewritten with ``share`` of its values missing completely at
    random (every column); the complete rows are returned unchanged."""
    rng = np.random.default_rng([seed, 31])
    for name, rows in sites.items():
        holes = rows.astype("float64").mask(rng.random(rows.shape) < share)
        holes.to_csv(folder / f"{name}.csv", index=False)


def cancer_sites(folder: Path, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Breast cancer split at random into four hospitals (``diagnosis``: 1 benign)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
    site = np.random.default_rng(seed).integers(4, size=len(data))
    sites = {}
    for k in range(4):
        rows = data[site == k].reset_index(drop=True)
        rows.to_csv(folder / f"hospital-{k + 1}.csv", index=False)
        sites[f"hospital-{k + 1}"] = rows
    return sites


def cli(*args: str) -> subprocess.CompletedProcess:
    """``fedstruct ARGS`` in a new process (as a user runs it)."""
    return subprocess.run(
        [sys.executable, "-m", "fedstruct.cli", *args], capture_output=True, text=True, check=True
    )


def split_rows(n_rows: int, seed: int, name: str):
    """The rows a site keeps for training (the run's held-out split)."""
    from fedstruct.fl import holdout_split

    return holdout_split(n_rows, 0.2, seed, name)[0]


def split(sites: dict[str, pd.DataFrame], seed: int) -> tuple[pd.DataFrame, dict]:
    """The pooled training rows and each site's held-out rows, as the run split them."""
    from fedstruct.fl import holdout_split

    train, test = [], {}
    for name, rows in sites.items():
        kept, held = holdout_split(len(rows), 0.2, seed, name)
        train.append(rows.iloc[kept])
        test[name] = rows.iloc[held]
    return pd.concat(train), test


def pooled_logistic(train: pd.DataFrame, target: str, categorical: list[str]):
    """LogisticRegression on the pooled rows (categorical one-hot, others standardised)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    features = [c for c in train.columns if c != target]
    columns = ColumnTransformer(
        [
            (
                "c",
                OneHotEncoder(handle_unknown="ignore"),
                [c for c in features if c in categorical],
            ),
            ("n", StandardScaler(), [c for c in features if c not in categorical]),
        ]
    )
    model = make_pipeline(columns, LogisticRegression(max_iter=5000))
    return model.fit(train[features], train[target])


def pooled_logistic_imputed(train: pd.DataFrame, target: str, categorical: list[str]):
    """:func:`pooled_logistic` on incomplete rows: each gap at its column's mean (the
    mode for a categorical column) plus a missing-indicator column; rows whose target
    is missing are left out."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    train = train[train[target].notna()]
    features = [c for c in train.columns if c != target]
    cats = [c for c in features if c in categorical]
    nums = [c for c in features if c not in categorical]
    columns = ColumnTransformer(
        [
            ("c", make_pipeline(SimpleImputer(strategy="most_frequent", add_indicator=True),
                                OneHotEncoder(handle_unknown="ignore")), cats),
            ("n", make_pipeline(SimpleImputer(add_indicator=True), StandardScaler()), nums),
        ]
    )  # fmt: skip
    model = make_pipeline(columns, LogisticRegression(max_iter=5000))
    return model.fit(train[features], train[target].astype(int))


def accuracy(est, rows: pd.DataFrame, target: str, model=None) -> float:
    """Accuracy of ``model`` (default: the global one) on ``rows``' ``target``."""
    coded = est.model_rows(rows)
    ngm = est.model_ if model is None else model
    pred = ngm.predict_proba(coded.drop(columns=target), target).argmax(axis=1)
    return float((pred == coded[target].to_numpy()).mean())


def main() -> None:
    from fedstruct.fl.artifact import load
    from fedstruct.results import use

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", choices=["anes96", "breast-cancer"], default="anes96")
    parser.add_argument("--set", action="append", default=[], dest="settings")
    parser.add_argument("--ordinal", action="store_true")
    parser.add_argument("--categorical", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--missing", type=float, default=0.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        anes = args.table == "anes96"
        sites = anes_sites(folder) if anes else cancer_sites(folder)
        if args.missing:
            blank_at_random(sites, args.missing, folder, args.seed)
        target = "vote" if anes else "diagnosis"
        run = folder / "run"
        options = [f"--set={s}" for s in args.settings]
        if args.ordinal:
            options += [f"--set=kinds.{c}=ordinal" for c in ORDINAL]
        if args.categorical:
            options += [f"--set=kinds.{c}=categorical" for c in ORDINAL]
        start = time.perf_counter()
        cli("run", "fedngm", *(f"--site={folder / n}.csv" for n in sites), "--quiet",
            f"--seed={args.seed}", *options, f"--out={run}")  # fmt: skip
        wall = time.perf_counter() - start
        est = load(run)
        metrics = json.loads((run / "metrics.json").read_text())
        train, held = split(sites, args.seed)
        test = pd.concat(held.values())
        categorical = [v for v in est.schema_.names if est.schema_.spec(v).is_categorical]
        lr = pooled_logistic(train, target, categorical)
        features = [c for c in train.columns if c != target]
        out = {
            "wall_s": round(wall, 1),
            "distillation_samples": next(
                r["global_samples"]
                for r in json.loads((run / "history.json").read_text())
                if "global_samples" in r
            ),
            "edges": metrics["edges"],
            f"{target}_neighbours": list(est.model_.neighbours(target)),
            "accuracy_global": accuracy(est, test, target),
            "accuracy_pooled_lr": float((lr.predict(test[features]) == test[target]).mean()),
            **{
                f"accuracy_own_{k}": accuracy(est, held[k], target, m)
                for k, m in est.client_models_.items()
            },
            **{k: v for k, v in metrics.items() if k.startswith(("global_own", "worst_own"))},
        }
        if args.missing:
            incomplete = pd.concat(
                pd.read_csv(folder / f"{k}.csv").iloc[split_rows(len(r), args.seed, k)]
                for k, r in sites.items()
            )
            imputed = pooled_logistic_imputed(incomplete, target, categorical)
            out["accuracy_pooled_lr_imputed"] = float(
                (imputed.predict(test[features]) == test[target]).mean()
            )
        if anes:
            pooled = pd.concat(sites.values())
            samples = use.sample(run, 500, seed=1)
            many = use.sample(run, 3000, seed=2).astype({"vote": int})
            out["sampled_dole"] = float(many.vote.mean())
            out["data_dole"] = float(pooled.vote.mean())
            for pid in (0, 6):
                p = use.query(run, {"PID": str(pid)}, "vote").set_index("vote")["probability"]
                out[f"query_dole_pid{pid}"] = float(p["1"])
                out[f"data_dole_pid{pid}"] = float(pooled[pooled.PID == pid].vote.mean())
            by_pid = samples.astype({"vote": int, "PID": int}).groupby("PID").vote.mean()
            out["sampled_dole_by_pid"] = [round(float(v), 3) for v in by_pid]
            out["data_dole_by_pid"] = [
                round(float(v), 3) for v in pooled.groupby("PID").vote.mean()
            ]
    for key, value in out.items():
        print(f"{key}: {round(value, 3) if isinstance(value, float) else value}")


if __name__ == "__main__":
    main()
