"""The RAND Health Insurance Experiment table: a real mixed-type table that ships offline.

statsmodels' copy of the RAND Health Insurance Experiment (HIE) data (Cameron &
Trivedi 2005, *Microeconometrics*, ch. 20; bundled as
``statsmodels/datasets/randhie/randhie.csv``, 20,190 person-years, public domain).
Nothing is downloaded: the files are read from the installed package (statsmodels
is a dependency of pgmpy, which fedstruct requires). FedNGM's experiment uses it in
place of the CDC infant-mortality files, which cannot be shipped
(:mod:`fedstruct.methods.fedngm.sources`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.mixed import MixedDataset
from fedstruct.errors import DataError

__all__ = ["HEALTH_ROWS", "PLAN_COINSURANCE", "load_health_insurance"]

#: Rows of the RAND HIE table (one per person and study year).
HEALTH_ROWS = 20_190

#: Coinsurance rate (%) of each plan code, from ``lncoins = log(coinsurance + 1)``.
PLAN_COINSURANCE: tuple[int, ...] = (0, 25, 50, 95, 100)

_HEALTH_KINDS = {
    "visits": "ordinal",
    "plan": "categorical",
    "deductible": "binary",
    "lpi": "real",
    "fmde": "real",
    "physlm": "real",
    "disea": "real",
    "health": "categorical",
}
_SHARED = ("mdvis", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp")


def _randhie_dir() -> Path:
    spec = importlib.util.find_spec("statsmodels")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(
            "the RAND HIE table ships with statsmodels, which is not installed; "
            "install it (pip install statsmodels; pgmpy normally brings it)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "randhie"
    if not (folder / "randhie.csv").is_file():
        raise DataError(f"{folder / 'randhie.csv'} is missing; reinstall statsmodels")
    return folder


def load_health_insurance() -> MixedDataset:
    """The RAND Health Insurance Experiment table as a mixed-type data set.

    The HIE (RAND, 1974–1982) assigned families at random to insurance plans that
    differed in how much of the bill they paid, and followed their use of care for
    three to five years. Each row is one person in one study year (20,190 rows,
    5,912 persons); every column but ``visits`` is fixed per person. Columns:

    ``visits`` (ordinal, float level = count)
        Face-to-face visits to a physician (outpatient) in the year (statsmodels'
        ``mdvis``; 0–77, median 1).
    ``plan`` (categorical, 5 codes)
        The insurance plan, by its coinsurance rate — the share of the bill the
        family pays: 0 = free care (0 %), 1 = 25 %, 2 = 50 %, 3 = 95 %, 4 = 100 %
        (from statsmodels' ``lncoins = log(coinsurance + 1)``; see
        :data:`PLAN_COINSURANCE`). Code 0 includes 4,175 rows on an individual
        deductible plan, for which ``lncoins`` records no coinsurance (the full
        extract's ``logc`` says 95 % for most of them); free care proper is
        ``plan == 0`` and ``deductible == 0`` (6,822 rows).
    ``deductible`` (binary)
        1 if the plan has an individual deductible for outpatient care (``idp``).
    ``lpi`` (real)
        Log of the annual participation incentive, the lump sum paid to a family
        so that joining the experiment could not leave it worse off
        (``log(max(1, payment))``).
    ``fmde`` (real)
        A function of the plan's maximum dollar expenditure (the yearly cap on the
        family's out-of-pocket spending), ``log(max(1, cap / (0.01 · coinsurance)))``
        by statsmodels' description. In the data it is 0 on free care without a
        deductible and on plan 4, and positive on most other rows.
    ``physlm`` (real)
        Physical limitation at enrolment: 1 if the person reported one, 0 if not;
        about 5 % of the rows hold fractions in between (presumably imputed).
    ``disea`` (real)
        Chronic disease index at enrolment. statsmodels describes it as the number of
        chronic diseases, but its 31 distinct values (0–58.6) are not integers, so it
        is treated as continuous.
    ``health`` (categorical, 4 codes)
        Self-rated health at enrolment: 0 excellent, 1 good, 2 fair, 3 poor (from the
        dummies ``hlthg``, ``hlthf``, ``hlthp``; all zero = excellent).

    ``groups`` holds each row's person id (``zper`` of the full extract in
    ``randhie/src/randhie.csv``, whose rows match the table one to one), so that
    partitioners keep a person's years together. ``graph`` is ``None`` (unknown).

    Returns
    -------
    MixedDataset
        20,190 rows, columns in the order above, name ``"health-insurance"``.

    Raises
    ------
    DataError
        If the file is missing, has a different number of rows, holds missing
        values, a row has two health dummies set, the coinsurance takes values other
        than the five plans', or the person ids do not line up with the rows.
    """
    folder = _randhie_dir()
    raw = pd.read_csv(folder / "randhie.csv")
    where = f"{folder / 'randhie.csv'}"
    if len(raw) != HEALTH_ROWS:
        raise DataError(f"{where} has {len(raw)} rows, expected {HEALTH_ROWS}; reinstall it")
    missing = [c for c in ("lncoins", *_SHARED) if c not in raw.columns]
    if missing:
        raise DataError(f"{where} lacks columns {missing}; reinstall statsmodels")
    if raw.isna().to_numpy().any():
        raise DataError(f"{where} has missing values; reinstall statsmodels")
    dummies = raw[["hlthg", "hlthf", "hlthp"]].to_numpy()
    bad = ~np.isin(dummies, (0, 1)).all(axis=1) | (dummies.sum(axis=1) > 1)
    if bad.any():
        raise DataError(
            f"{where}: row {int(np.flatnonzero(bad)[0])} sets more than one of hlthg, hlthf, "
            "hlthp (or a value other than 0/1); the health dummies must be exclusive"
        )
    coins = np.rint(np.expm1(raw["lncoins"].to_numpy())).astype(np.int64)
    plan = np.searchsorted(PLAN_COINSURANCE, coins)
    known = plan < len(PLAN_COINSURANCE)
    known[known] = np.asarray(PLAN_COINSURANCE)[plan[known]] == coins[known]
    if not known.all():
        raise DataError(
            f"{where}: coinsurance {int(coins[~known][0])} % is not one of the plans "
            f"{list(PLAN_COINSURANCE)}"
        )
    frame = pd.DataFrame(
        {
            "visits": raw["mdvis"].to_numpy(np.float64),
            "plan": plan.astype(np.int64),
            "deductible": raw["idp"].to_numpy(np.int64),
            "lpi": raw["lpi"].to_numpy(np.float64),
            "fmde": raw["fmde"].to_numpy(np.float64),
            "physlm": raw["physlm"].to_numpy(np.float64),
            "disea": raw["disea"].to_numpy(np.float64),
            "health": (dummies @ np.array([1, 2, 3])).astype(np.int64),
        }
    )
    return MixedDataset(
        frame=frame,
        kinds=dict(_HEALTH_KINDS),
        cardinalities={"plan": 5, "deductible": 2, "health": 4},
        graph=None,
        name="health-insurance",
        groups=_person_ids(folder, raw),
    )


def _person_ids(folder: Path, raw: pd.DataFrame) -> NDArray[np.int64]:
    """Person id per row, from the full extract, after checking that its rows line up."""
    path = folder / "src" / "randhie.csv"
    if not path.is_file():
        raise DataError(f"{path} is missing; reinstall statsmodels")
    full = pd.read_csv(path, usecols=["zper", *_SHARED])
    same = len(full) == len(raw) and all(
        np.allclose(full[c].to_numpy(np.float64), raw[c].to_numpy(np.float64)) for c in _SHARED
    )
    if not same:
        raise DataError(f"the rows of {path} do not match randhie.csv; reinstall statsmodels")
    return full["zper"].to_numpy(np.int64)
