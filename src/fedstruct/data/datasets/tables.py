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
random. :func:`breast_cancer_hospitals` instead gives every hospital its own mix of
the classes (a Dirichlet label skew, as CAFE's clients have), with a categorical
column and missing values: a mixed, incomplete, class-imbalanced federation. Nothing
is downloaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedstruct.errors import ConfigError

__all__ = [
    "SITE_SHARES",
    "SIZE_LEVELS",
    "breast_cancer_hospitals",
    "breast_cancer_sites",
    "diabetes_sites",
    "split_sites",
]

#: The default sites' shares of the rows: four hospitals of different sizes.
SITE_SHARES = (0.40, 0.25, 0.20, 0.15)
#: The levels of :func:`breast_cancer_hospitals`' categorical ``tumour_size``.
SIZE_LEVELS = ("small", "medium", "large")


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


def breast_cancer_hospitals(
    n_sites: int = 4, *, alpha: float = 0.5, seed: int = 0, missing: float = 0.03
) -> list[pd.DataFrame]:
    """The breast-cancer table at ``n_sites`` hospitals with their own class mixes,
    a categorical column and missing values.

    * ``tumour_size``, categorical: ``small``, ``medium`` or ``large`` by the
      tertiles of ``mean area`` over the 569 tumours, which it replaces (a grade a
      pathologist records rather than the measurement);
    * the rows split by a Dirichlet label skew (each class's tumours cut over the
      hospitals by proportions drawn from ``Dir(alpha)``, at least 40 tumours each:
      :func:`~fedstruct.data.partition.label_skew`, ``scheme="class"``): hospitals of
      different sizes whose shares of malignant tumours differ widely, as a referral
      centre's and a screening clinic's do;
    * a ``missing`` share of every feature's values (not the ``diagnosis``) missing
      completely at random, ``tumour_size`` included.
    """
    from sklearn.datasets import load_breast_cancer

    from fedstruct.data.partition import label_skew

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.drop(columns="target")
    area = frame.pop("mean area").to_numpy()
    tertiles = np.quantile(area, [1 / 3, 2 / 3])
    frame.insert(0, "tumour_size", np.asarray(SIZE_LEVELS)[np.searchsorted(tertiles, area)])
    frame["diagnosis"] = np.asarray(data.target_names)[data.target.to_numpy()]
    split = label_skew(data.target.to_numpy(), n_sites, alpha=alpha, seed=seed,
                       min_per_client=40, scheme="class")  # fmt: skip
    rng = np.random.default_rng(seed)
    sites = [frame.iloc[np.sort(idx)].reset_index(drop=True) for idx in split.clients]
    return [_with_holes(rows, "diagnosis", missing, rng) if missing else rows for rows in sites]


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
        rows = _with_holes(rows, target, missing, rng)
    cuts = [0, *np.round(np.cumsum(share)[:-1] * len(rows)).astype(int), len(rows)]
    return [
        rows.iloc[start:stop].reset_index(drop=True) for start, stop in itertools.pairwise(cuts)
    ]


def _with_holes(
    rows: pd.DataFrame, target: str, missing: float, rng: np.random.Generator
) -> pd.DataFrame:
    """``rows`` with a ``missing`` share of every column's values but ``target``'s set
    missing, completely at random (numbers become floats, NaN where missing; text
    columns keep their text)."""
    features = [c for c in rows.columns if c != target]
    holes = rng.random((len(rows), len(features))) < missing
    return rows.assign(**{c: _numeric(rows[c]).mask(holes[:, j]) for j, c in enumerate(features)})


def _numeric(column: pd.Series) -> pd.Series:
    """A numeric column as floats (which hold NaN); another as it is."""
    return column.astype(np.float64) if pd.api.types.is_numeric_dtype(column) else column
