"""Real tables that ship with scikit-learn, split into sites as hospitals would hold them.

* :func:`breast_cancer_sites` — the Wisconsin diagnostic breast-cancer data (569
  tumours, 30 continuous measurements and the ``diagnosis``, ``malignant`` or
  ``benign``), ``sklearn.datasets.load_breast_cancer``;
* :func:`diabetes_sites` — the diabetes data of Efron et al. (2004) (442 patients:
  age, sex, BMI, blood pressure, six blood serum measurements and ``progression``,
  a quantitative measure of disease progression one year later), in its original
  units (``load_diabetes(scaled=False)``).

The split (:func:`split_sites`): the rows shuffled with ``seed`` and cut into sites of
unequal sizes (by default 40 %, 25 %, 20 % and 15 % of the rows, four hospitals of
different sizes), optionally with a share of the feature values missing completely at
random. Nothing is downloaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedstruct.errors import ConfigError

__all__ = ["SITE_SHARES", "breast_cancer_sites", "diabetes_sites", "split_sites"]

#: The default sites' shares of the rows: four hospitals of different sizes.
SITE_SHARES = (0.40, 0.25, 0.20, 0.15)


def breast_cancer_sites(
    shares: Sequence[float] = SITE_SHARES, *, seed: int = 0, missing: float = 0.0
) -> list[pd.DataFrame]:
    """The breast-cancer table at ``len(shares)`` sites (module docstring); the
    ``diagnosis`` column holds ``malignant`` or ``benign``."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.drop(columns="target")
    frame["diagnosis"] = np.asarray(data.target_names)[data.target.to_numpy()]
    return split_sites(frame, "diagnosis", shares, seed=seed, missing=missing)


def diabetes_sites(
    shares: Sequence[float] = SITE_SHARES, *, seed: int = 0, missing: float = 0.0
) -> list[pd.DataFrame]:
    """The diabetes table in its original units at ``len(shares)`` sites (module
    docstring); ``progression`` is the continuous target, ``sex`` coded 1 or 2."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes(as_frame=True, scaled=False)
    frame = data.frame.rename(columns={"target": "progression"})
    frame["sex"] = frame["sex"].astype(np.int64)
    return split_sites(frame, "progression", shares, seed=seed, missing=missing)


def split_sites(
    frame: pd.DataFrame,
    target: str,
    shares: Sequence[float] = SITE_SHARES,
    *,
    seed: int = 0,
    missing: float = 0.0,
) -> list[pd.DataFrame]:
    """``frame``'s rows shuffled with ``seed`` and cut into sites of the given
    ``shares``; a ``missing`` share of every feature's values (not the ``target``'s)
    is then set missing, completely at random.

    Raises
    ------
    ConfigError
        If the shares are not positive and summing to 1, or ``missing`` is outside
        ``[0, 1)``.
    """
    share = np.asarray(shares, dtype=np.float64)
    if share.size == 0 or (share <= 0).any() or not np.isclose(share.sum(), 1.0):
        raise ConfigError(f"site shares must be positive and sum to 1; got {list(shares)}")
    if not 0 <= missing < 1:
        raise ConfigError(f"missing must be a share in [0, 1); got {missing}")
    rng = np.random.default_rng(seed)
    rows = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    if missing:
        features = [c for c in rows.columns if c != target]
        holes = rng.random((len(rows), len(features))) < missing
        values = rows[features].astype(np.float64).mask(holes)
        rows = rows.assign(**{c: values[c] for c in features})
    cuts = [0, *np.round(np.cumsum(share)[:-1] * len(rows)).astype(int), len(rows)]
    return [
        rows.iloc[start:stop].reset_index(drop=True) for start, stop in itertools.pairwise(cuts)
    ]
