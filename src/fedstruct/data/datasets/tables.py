"""Real tables that ship with scikit-learn, split into sites as hospitals would hold them.

* :func:`breast_cancer_sites` — the Wisconsin diagnostic breast-cancer data (569
  tumours, 30 continuous measurements and the ``diagnosis``, ``malignant`` or
  ``benign``), ``sklearn.datasets.load_breast_cancer``;
* :func:`diabetes_sites` — the diabetes data of Efron et al. (2004) (442 patients:
  age, sex, BMI, blood pressure, six blood serum measurements and ``progression``,
  a quantitative measure of disease progression one year later), in its original
  units (``load_diabetes(scaled=False)``);
* :func:`breast_cancer_concepts` — the breast-cancer table as a concept table for
  F-CMs: four measurements cut at their medians into 0/1 concepts, the other 26
  measurements as inputs, the ``diagnosis`` as the task;
* :func:`anes96_sites` — statsmodels' 1996 American National Election Study (944
  respondents: party identification, 7-point ideology placements, vote, age, income,
  ...), split into three sites by education (``statsmodels.datasets.anes96``).

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
    "ANES96_SITES",
    "CONCEPT_CUTS",
    "SITE_SHARES",
    "SIZE_LEVELS",
    "anes96_sites",
    "breast_cancer_concepts",
    "breast_cancer_hospitals",
    "breast_cancer_sites",
    "diabetes_sites",
    "split_sites",
]

#: The default sites' shares of the rows: four hospitals of different sizes.
SITE_SHARES = (0.40, 0.25, 0.20, 0.15)
#: The levels of :func:`breast_cancer_hospitals`' categorical ``tumour_size``.
SIZE_LEVELS = ("small", "medium", "large")

#: anes96's sites: name -> the range of ``educ`` codes (1-7) its respondents have.
ANES96_SITES = {"educ-low": (1, 3), "educ-mid": (4, 5), "educ-high": (6, 7)}

#: Breast-cancer measurement -> the 0/1 concept made by cutting it at its median.
CONCEPT_CUTS = {
    "mean radius": "radius_high",
    "mean concave points": "concave_points_high",
    "mean texture": "texture_high",
    "worst smoothness": "smoothness_high",
}


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
    return [_with_holes(rows, "diagnosis", missing, rng) for rows in sites]


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


def breast_cancer_concepts() -> pd.DataFrame:
    """The breast-cancer table as F-CMs' concept table (module docstring): the 26
    measurements not cut (spaces in their names as ``_``), the concepts of
    :data:`CONCEPT_CUTS` (1 above the median) and ``diagnosis`` (``benign`` or
    ``malignant``)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    measured = data.data
    frame = measured.drop(columns=list(CONCEPT_CUTS))
    frame = frame.rename(columns=lambda c: c.replace(" ", "_"))
    for column, concept in CONCEPT_CUTS.items():
        frame[concept] = (measured[column] > measured[column].median()).astype(int)
    frame["diagnosis"] = np.where(data.target == 1, "benign", "malignant")
    return frame


def anes96_sites(*, seed: int = 0, missing: float = 0.0) -> dict[str, pd.DataFrame]:
    """anes96 at the three sites of :data:`ANES96_SITES` (by ``educ``; ``educ`` and
    the derived ``logpopul`` left out), integer codes as the survey has them
    (``vote`` 1 = Dole, 0 = Clinton); with ``missing``, that share of every other
    column's values is missing completely at random (drawn with ``seed``).

    Raises
    ------
    ConfigError
        If ``missing`` is outside ``[0, 1)``.
    """
    from statsmodels.datasets import anes96  # not statsmodels.api: seconds to import

    data = anes96.load_pandas().data.drop(columns=["logpopul"]).astype(int)
    rows = _with_holes(data, "vote", missing, np.random.default_rng(seed))
    rows = rows.astype("Int64" if missing else int)  # whole numbers, written as such
    return {
        name: rows[data.educ.between(low, high)].drop(columns=["educ"]).reset_index(drop=True)
        for name, (low, high) in ANES96_SITES.items()
    }


def _with_holes(
    rows: pd.DataFrame, target: str, missing: float, rng: np.random.Generator
) -> pd.DataFrame:
    """``rows`` with a ``missing`` share of every column's values but ``target``'s set
    missing, completely at random (numbers become floats, NaN where missing; text
    columns keep their text); ``rows`` as they are when ``missing`` is 0 (no draw).

    Raises
    ------
    ConfigError
        If ``missing`` is outside ``[0, 1)``.
    """
    if not 0 <= missing < 1:
        raise ConfigError(f"missing must be a share in [0, 1); got {missing}")
    if not missing:
        return rows
    features = [c for c in rows.columns if c != target]
    holes = rng.random((len(rows), len(features))) < missing
    return rows.assign(**{c: _numeric(rows[c]).mask(holes[:, j]) for j, c in enumerate(features)})


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
    rows = _with_holes(rows, target, missing, rng)
    cuts = [0, *np.round(np.cumsum(share)[:-1] * len(rows)).astype(int), len(rows)]
    return [
        rows.iloc[start:stop].reset_index(drop=True) for start, stop in itertools.pairwise(cuts)
    ]


def _numeric(column: pd.Series) -> pd.Series:
    """A numeric column as floats (which hold NaN); another as it is."""
    return column.astype(np.float64) if pd.api.types.is_numeric_dtype(column) else column
