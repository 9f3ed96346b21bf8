"""A table's features for a federated model: standardised and imputed with statistics
every site computes on its own rows (counts, sums, sums of squares), never rows.

Three steps, shared by every method that feeds a table to a neural network (FedAvg;
F-CMs' inputs next):

1. each site sends :func:`site_summary` of the rows it trains on (one message of
   ``1 + 3c + sum k`` numbers for ``c`` continuous and categorical columns of ``k``
   levels): its row count; per continuous column the count of its non-missing values,
   their sum and their sum of squared deviations from the site's own mean; per
   categorical or ordinal column the count of each level;
2. the server merges them into exact :class:`FeatureStatistics` (the pooled mean and
   variance of every continuous column, the pooled level counts), by the pairwise
   update of Chan, Golub & LeVeque (1979), "Updating formulae and a pairwise
   algorithm for computing sample variances": with ``n_k``, ``S_k`` and ``M_k`` a
   site's count, sum and centred sum of squares, ``n = sum n_k``, ``mean = sum S_k /
   n`` and ``M = sum_k (M_k + n_k (S_k / n_k - mean)^2)``, so that the variance
   ``M / n`` equals the pooled rows' to rounding (no cancellation, unlike
   ``sum x^2 / n - mean^2``);
3. every site encodes its rows with the same :class:`FeatureEncoder`, built from the
   statistics and sent with the model: categorical and ordinal columns one-hot, each
   continuous column standardised, ``(x - mean) / sd`` (``sd`` the pooled population
   standard deviation; 1 for a constant column), and one missing-indicator column
   (1 where the value is missing) per feature that misses values at any site. A
   missing continuous value is imputed with the federated mean (0 once
   standardised); a missing categorical value, by ``categorical_imputation``, gets
   no level (``"missing-level"``: its one-hot block stays 0 and the indicator acts as
   an extra level) or the federated mode (``"mode"``: the level most frequent over
   every site's rows).

A site that does not observe a feature at all (its file lacks it, or misses it at
every row) holds it missing at every row
(:func:`~fedstruct.data.sites.unobserved_as_missing`): its summary counts no value of
it, so the feature's statistics are the other sites', and it is imputed at every row
of that site, its indicator on. A feature no site observes has nothing to impute it
from and is refused (:meth:`FeatureEncoder.from_statistics`).

Imputing with the mean and adding an indicator is the "missing-indicator method"
(e.g. van Buuren, *Flexible Imputation of Missing Data*, 2nd ed., 2018, §1.3.7); with
the indicator as an input, a linear model learns its own offset for the rows that
miss the value. A value missing at prediction in a column that never missed one in
training is imputed the same way, without an indicator (there is no input for it).

The summary is an aggregate of the site's rows (its privacy audit checks that no
array of it matches a row): the site's own mean and variance per column, and its
level counts, are what it discloses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError, ProtocolError, UnknownVariableError
from fedstruct.fl import checkpoint
from fedstruct.fl.message import Message
from fedstruct.fl.summation import send_and_sum

if TYPE_CHECKING:
    from fedstruct.fl.grid import Grid

__all__ = [
    "CATEGORICAL_IMPUTATIONS",
    "FeatureColumns",
    "FeatureEncoder",
    "FeatureStatistics",
    "gather_statistics",
    "site_summary",
]

#: How a missing categorical or ordinal value is imputed (module docstring).
CATEGORICAL_IMPUTATIONS = ("missing-level", "mode")
#: The arrays of a site's summary (:func:`site_summary`).
SUMMARY_ARRAYS = ("rows", "count", "sum", "squares", "level_counts")


@dataclass(frozen=True)
class FeatureColumns:
    """The columns a model reads and their kinds.

    Parameters
    ----------
    levelled
        Categorical and ordinal columns -> their number of levels (codes ``0..k-1``;
        ``-1`` marks a missing value), in order.
    continuous
        Continuous columns (floats; NaN marks a missing value), in order.
    """

    levelled: Mapping[str, int] = field(default_factory=dict)
    continuous: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "levelled", {str(k): int(v) for k, v in self.levelled.items()})
        object.__setattr__(self, "continuous", tuple(self.continuous))
        both = set(self.levelled) & set(self.continuous)
        if both:
            raise DataError(f"columns {sorted(both)} are given both levels and as continuous")

    @property
    def names(self) -> tuple[str, ...]:
        """Every column: the levelled ones, then the continuous ones."""
        return (*self.levelled, *self.continuous)

    @property
    def summary_entries(self) -> int:
        """Numbers in a site's summary (:func:`site_summary`): its declared bound."""
        return 1 + 3 * len(self.continuous) + sum(self.levelled.values())

    def select(self, names: Sequence[str]) -> FeatureColumns:
        """These columns restricted to ``names`` (in this order)."""
        keep = set(names)
        return FeatureColumns(
            {v: k for v, k in self.levelled.items() if v in keep},
            tuple(v for v in self.continuous if v in keep),
        )


def site_summary(
    rows: pd.DataFrame, columns: FeatureColumns, center: NDArray[np.float64] | None = None
) -> dict[str, NDArray[Any]]:
    """What a site sends of its ``rows`` for the federated statistics (step 1 of the
    module docstring): ``rows`` (its row count), per continuous column ``count``,
    ``sum`` and ``squares`` (the sum of squared deviations from the site's own mean,
    or from ``center`` when the server sends one, for a secure sum:
    :func:`gather_statistics`; 0 for a column with no value here) and
    ``level_counts`` (every levelled column's level counts, concatenated).

    Raises
    ------
    UnknownVariableError
        If a column is not in ``rows``.
    DataError
        If a level code is outside ``-1..k-1``.
    """
    absent = [c for c in columns.names if c not in rows.columns]
    if absent:
        raise UnknownVariableError(f"the rows lack the columns {absent} of the model")
    values = rows.loc[:, list(columns.continuous)].to_numpy(dtype=np.float64)
    given = ~np.isnan(values)
    count = given.sum(axis=0)
    total = np.where(given, values, 0.0).sum(axis=0)
    if center is None:
        mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    else:
        mean = np.nan_to_num(np.asarray(center, dtype=np.float64))
    squares = np.where(given, (values - mean) ** 2, 0.0).sum(axis=0)
    counts = [
        _level_counts(rows[v].to_numpy(), v, k, "the rows") for v, k in columns.levelled.items()
    ]
    return {
        "rows": np.array([len(rows)], dtype=np.int64),
        "count": count.astype(np.int64),
        "sum": total,
        "squares": squares,
        "level_counts": np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64),
    }


def _level_counts(codes: NDArray[Any], column: str, k: int, where: str) -> NDArray[np.int64]:
    codes = _checked_codes(codes, column, k, where)
    return np.bincount(codes[codes >= 0], minlength=k).astype(np.int64)


def _checked_codes(
    codes: NDArray[Any], column: str, k: int, where: str, missing: bool = True
) -> NDArray[np.int64]:
    """Level codes ``0..k-1`` as int64 (and ``-1``, missing, where ``missing``)."""
    if codes.dtype.kind not in "iu":
        raise DataError(
            f"{where}: variable {column!r} has dtype {codes.dtype}; expected integer state codes"
        )
    bad = (codes < (-1 if missing else 0)) | (codes >= k)
    if bad.any():
        raise DataError(
            f"{where}: variable {column!r} has value {codes[bad][0]}; expected state codes "
            f"0..{k - 1}" + (" (-1: missing)" if missing else "")
        )
    return codes.astype(np.int64, copy=False)


@dataclass(frozen=True)
class FeatureStatistics:
    """Pooled statistics of every site's rows (step 2 of the module docstring).

    Parameters
    ----------
    columns
        The columns summarised.
    rows
        Rows over every site.
    count, mean, variance
        Per continuous column: its non-missing values over every site, their mean
        and population variance (``ddof=0``; NaN for a column with no value).
    level_counts
        Every levelled column's level counts over every site, concatenated.
    """

    columns: FeatureColumns
    rows: int
    count: NDArray[np.int64]
    mean: NDArray[np.float64]
    variance: NDArray[np.float64]
    level_counts: NDArray[np.int64]

    @classmethod
    def merge(
        cls, columns: FeatureColumns, summaries: Sequence[Mapping[str, NDArray[Any]]]
    ) -> FeatureStatistics:
        """Pool the sites' :func:`site_summary` (Chan, Golub & LeVeque 1979, pairwise
        update; module docstring), summed in the order given.

        Raises
        ------
        ProtocolError
            If there is no summary, or one has the wrong arrays or shapes.
        """
        if not summaries:
            raise ProtocolError("no site sent its feature statistics")
        c, width = len(columns.continuous), sum(columns.levelled.values())
        shapes = {"rows": 1, "count": c, "sum": c, "squares": c, "level_counts": width}
        for summary in summaries:
            wrong = [a for a in SUMMARY_ARRAYS if np.shape(summary.get(a)) != (shapes[a],)]
            if wrong:
                raise ProtocolError(f"a site's feature summary has wrong arrays {wrong}")
        counts, sums, squares = (
            np.array([s[name] for s in summaries], dtype=np.float64).reshape(len(summaries), c)
            for name in ("count", "sum", "squares")
        )
        n = counts.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = sums.sum(axis=0) / n
            site_means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
            spread = squares + counts * (site_means - mean) ** 2
            variance = spread.sum(axis=0) / n
        return cls(
            columns,
            int(sum(int(s["rows"][0]) for s in summaries)),
            n.astype(np.int64),
            mean,
            variance,
            np.sum([np.asarray(s["level_counts"], dtype=np.int64) for s in summaries], axis=0),
        )

    @classmethod
    def of_rows(cls, rows: pd.DataFrame, columns: FeatureColumns) -> FeatureStatistics:
        """The statistics of one table (a single site, or pooled rows in tests)."""
        return cls.merge(columns, [site_summary(rows, columns)])

    def present(self, column: str) -> int:
        """Non-missing values of ``column`` over every site."""
        if column in self.columns.continuous:
            return int(self.count[self.columns.continuous.index(column)])
        return int(self.levels(column).sum())

    def levels(self, column: str) -> NDArray[np.int64]:
        """The level counts of a levelled ``column`` over every site."""
        start = 0
        for name, k in self.columns.levelled.items():
            if name == column:
                return self.level_counts[start : start + k]
            start += k
        raise UnknownVariableError(f"{column!r} is not a categorical or ordinal column here")

    def moments(self, column: str) -> tuple[float, float]:
        """The pooled mean and standard deviation of a continuous ``column`` (the
        deviation 1 for a constant column or one with no value, which standardising
        then leaves unscaled)."""
        j = self.columns.continuous.index(column)
        mean = float(self.mean[j]) if self.count[j] else 0.0
        sd = float(np.sqrt(self.variance[j])) if self.count[j] else 0.0
        return mean, (sd if sd > 0 else 1.0)

    @property
    def incomplete(self) -> tuple[str, ...]:
        """The columns that miss a value at some site, in column order."""
        return tuple(v for v in self.columns.names if self.present(v) < self.rows)

    def to_arrays(self, prefix: str = "statistics.") -> dict[str, NDArray[Any]]:
        """The statistics as named arrays (saved with a model: ``model.safetensors``)."""
        return {
            f"{prefix}rows": np.array([self.rows], dtype=np.int64),
            f"{prefix}count": self.count,
            f"{prefix}mean": self.mean,
            f"{prefix}variance": self.variance,
            f"{prefix}level_counts": self.level_counts,
        }

    @classmethod
    def from_arrays(
        cls,
        columns: FeatureColumns,
        arrays: Mapping[str, NDArray[Any]],
        prefix: str = "statistics.",
    ) -> FeatureStatistics | None:
        """The statistics of ``columns`` that :meth:`to_arrays` wrote; ``None`` when
        ``arrays`` hold none.

        Raises
        ------
        DataError
            If an array has the wrong shape.
        """
        if f"{prefix}rows" not in arrays:
            return None
        c, width = len(columns.continuous), sum(columns.levelled.values())
        shapes = {"rows": 1, "count": c, "mean": c, "variance": c, "level_counts": width}
        got = {name: np.asarray(arrays.get(prefix + name)) for name in shapes}
        wrong = [prefix + a for a, size in shapes.items() if got[a].shape != (size,)]
        if wrong:
            raise DataError(f"the saved feature statistics {wrong} are absent or misshapen")
        return cls(
            columns,
            int(got["rows"][0]),
            got["count"].astype(np.int64),
            got["mean"].astype(np.float64),
            got["variance"].astype(np.float64),
            got["level_counts"].astype(np.int64),
        )


checkpoint.register(FeatureColumns)
checkpoint.register(FeatureStatistics)


#: The array of a statistics request that holds the centre of the squares (a secure
#: run's second pass: :func:`gather_statistics`).
CENTER = "center"


def gather_statistics(
    grid: Grid, columns: FeatureColumns, kind: str, method: str
) -> FeatureStatistics:
    """Steps 1-2 of the module docstring, on the server: ask every connected site for
    its :func:`site_summary` of ``columns`` (a message of ``kind``, outside the
    participation model, like a final evaluation) and pool the replies, in node
    order. The method's clients answer ``kind`` with :func:`site_summary` of their
    training rows, about the :data:`CENTER` array of the request when it has one.

    With secure aggregation on (``grid.secure_aggregation``) the server sees only
    sums, which Chan et al.'s update cannot pool (it needs each site's mean), so it
    asks twice: the first secure sum gives the pooled means ``c``; the second, every
    site's squares about ``c``, whose sum ``M_c`` gives ``M = M_c - n (mean - c)^2``
    with the second sum's own ``n`` and ``mean`` (the identity ``sum (x - c)^2 = M +
    n (mean - c)^2``; ``mean - c`` is 0 unless a site dropped out in between, so there
    is no cancellation). The quantisation adds at most ``N 2^-(s+1)`` per sum
    (:class:`~fedstruct.fl.secagg.SecAggConfig`).

    Raises
    ------
    ProtocolError
        If no site answers (``method`` names the method in the message), or a reply
        is malformed (:meth:`FeatureStatistics.merge`).
    """
    nodes = grid.connected_ids()
    if grid.secure_aggregation is not None:
        return _gather_securely(grid, columns, kind, method, nodes)
    replies = grid.exchange_outside_rounds({n: Message(kind) for n in nodes})
    if not replies:
        raise ProtocolError(f"no site answered the feature statistics step of {method}")
    return FeatureStatistics.merge(columns, [replies[n].arrays for n in sorted(replies)])


def _gather_securely(
    grid: Grid, columns: FeatureColumns, kind: str, method: str, nodes: list[int]
) -> FeatureStatistics:
    """:func:`gather_statistics` by two secure sums (its docstring)."""
    first = send_and_sum(grid, {n: Message(kind) for n in nodes}, outside_rounds=True)
    if not first.nodes:
        raise ProtocolError(f"no site answered the feature statistics step of {method}")
    with np.errstate(invalid="ignore", divide="ignore"):
        center = first.arrays["sum"] / first.arrays["count"]
    request = {n: Message(kind, arrays={CENTER: center}) for n in first.nodes}
    second = send_and_sum(grid, request, outside_rounds=True)
    if not second.nodes:
        raise ProtocolError(f"no site answered the feature statistics step of {method}")
    sums = second.arrays
    n = sums["count"].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums["sum"] / n
        spread = sums["squares"] - n * (mean - np.nan_to_num(center)) ** 2
        variance = np.maximum(spread, 0.0) / n
    return FeatureStatistics(
        columns,
        int(sums["rows"][0]),
        sums["count"].astype(np.int64),
        mean,
        variance,
        sums["level_counts"].astype(np.int64),
    )


@dataclass(frozen=True)
class FeatureEncoder:
    """How every site turns its rows into a model's inputs (step 3 of the module
    docstring): ``[one-hot levelled columns | standardised continuous | missing
    indicators]``.

    Parameters
    ----------
    columns
        The features, in order.
    mean, scale
        Per continuous feature: the federated mean and standard deviation.
    indicators
        The features that get a missing-indicator column, in feature order.
    fill
        Per levelled feature: the level a missing value takes (its one-hot 1), or
        ``-1`` for none (``"missing-level"``).
    imputes
        Whether missing values are imputed; without it (an encoder for complete
        categorical data, :meth:`one_hot`) a missing value is an error.
    """

    columns: FeatureColumns
    mean: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    scale: NDArray[np.float64] = field(default_factory=lambda: np.ones(0))
    indicators: tuple[str, ...] = ()
    fill: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    imputes: bool = False

    @classmethod
    def one_hot(cls, columns: FeatureColumns) -> FeatureEncoder:
        """Categorical columns one-hot, nothing imputed: for complete categorical data
        (no statistics are needed)."""
        return cls(columns, fill=np.full(len(columns.levelled), -1, dtype=np.int64))

    @classmethod
    def from_statistics(
        cls,
        statistics: FeatureStatistics,
        features: Sequence[str],
        categorical_imputation: str = "missing-level",
    ) -> FeatureEncoder:
        """The encoder of ``features`` (columns of ``statistics``) from the federated
        statistics.

        Raises
        ------
        DataError
            For an unknown ``categorical_imputation``, or a feature with no value at
            any site (nothing to impute it from).
        """
        if categorical_imputation not in CATEGORICAL_IMPUTATIONS:
            raise DataError(
                f"categorical_imputation must be one of {', '.join(CATEGORICAL_IMPUTATIONS)}; "
                f"got {categorical_imputation!r}"
            )
        columns = statistics.columns.select(features)
        never = [v for v in columns.names if statistics.present(v) == 0]
        if never:
            raise DataError(
                f"the features {never} have no value at any site, so there are no statistics "
                "to impute them from: fill them in at some site, or leave them out of the model"
            )
        moments = [statistics.moments(v) for v in columns.continuous]
        incomplete = set(statistics.incomplete)
        fill = [
            int(np.argmax(statistics.levels(v))) if categorical_imputation == "mode" else -1
            for v in columns.levelled
        ]
        return cls(
            columns,
            np.array([m for m, _ in moments], dtype=np.float64),
            np.array([s for _, s in moments], dtype=np.float64),
            tuple(v for v in columns.names if v in incomplete),
            np.array(fill, dtype=np.int64),
            imputes=True,
        )

    @property
    def width(self) -> int:
        """Number of input columns."""
        c = self.columns
        return sum(c.levelled.values()) + len(c.continuous) + len(self.indicators)

    def input_names(self) -> list[str]:
        """A name per input column: ``COL=LEVEL_CODE``, ``COL``, ``COL:missing``."""
        c = self.columns
        return [
            *(f"{v}={code}" for v, k in c.levelled.items() for code in range(k)),
            *c.continuous,
            *(f"{v}:missing" for v in self.indicators),
        ]

    def encode(self, rows: pd.DataFrame, where: str = "data") -> NDArray[np.float32]:
        """The model's inputs for ``rows`` (float32, one row per row).

        Raises
        ------
        UnknownVariableError
            If a feature is not a column of ``rows``.
        DataError
            If a level code is out of range, or a value is missing where the encoder
            does not impute.
        """
        c = self.columns
        absent = [v for v in c.names if v not in rows.columns]
        if absent:
            raise UnknownVariableError(f"{where} lacks the variables {absent} of the task")
        n = len(rows)
        x = np.zeros((n, self.width), dtype=np.float32)
        missing: dict[str, NDArray[np.bool_]] = {}
        offset = 0
        for j, (v, k) in enumerate(c.levelled.items()):
            codes = _checked_codes(rows[v].to_numpy(), v, k, where, missing=self.imputes)
            gone = codes < 0
            if gone.any():
                missing[v] = gone
                codes = np.where(gone, self.fill[j], codes)
            hit = codes >= 0
            x[np.flatnonzero(hit), offset + codes[hit]] = 1.0
            offset += k
        if c.continuous:
            values = rows.loc[:, list(c.continuous)].to_numpy(dtype=np.float64)
            gone_all = np.isnan(values)
            for j in np.flatnonzero(gone_all.any(axis=0)):
                v = c.continuous[j]
                self._check_imputes(v, int(gone_all[:, j].sum()), where)
                missing[v] = gone_all[:, j]
            standard = (values - self.mean) / self.scale
            x[:, offset : offset + len(c.continuous)] = np.where(gone_all, 0.0, standard)
            offset += len(c.continuous)
        for j, v in enumerate(self.indicators):
            if v in missing:
                x[:, offset + j] = missing[v]
        return x

    def _check_imputes(self, column: str, count: int, where: str) -> None:
        if not self.imputes:
            raise DataError(
                f"{where}: {count} missing values in column {column!r}, and this model "
                "imputes none (it was trained on complete categorical data); fill them"
            )

    def to_arrays(self, prefix: str = "features.") -> dict[str, NDArray[Any]]:
        """The encoder as named arrays (with :meth:`meta`: what a message or a saved
        model carries)."""
        return {
            f"{prefix}mean": self.mean,
            f"{prefix}scale": self.scale,
            f"{prefix}fill": self.fill,
            f"{prefix}indicator": np.array(
                [v in self.indicators for v in self.columns.names], dtype=np.int8
            ),
        }

    @classmethod
    def from_arrays(
        cls, columns: FeatureColumns, arrays: Mapping[str, NDArray[Any]], prefix: str = "features."
    ) -> FeatureEncoder:
        """The encoder of ``columns`` that :meth:`to_arrays` wrote.

        Raises
        ------
        ProtocolError
            If an array is absent or has the wrong shape.
        """
        expected = {
            "mean": len(columns.continuous),
            "scale": len(columns.continuous),
            "fill": len(columns.levelled),
            "indicator": len(columns.names),
        }
        got = {name: np.asarray(arrays.get(prefix + name)) for name in expected}
        wrong = [prefix + a for a, size in expected.items() if got[a].shape != (size,)]
        if wrong:
            raise ProtocolError(f"the feature encoding's arrays {wrong} are absent or misshapen")
        flags = got["indicator"].astype(bool)
        return cls(
            columns,
            got["mean"].astype(np.float64),
            got["scale"].astype(np.float64),
            tuple(v for v, flag in zip(columns.names, flags, strict=True) if flag),
            got["fill"].astype(np.int64),
            imputes=True,
        )

    @staticmethod
    def split(
        arrays: Mapping[str, NDArray[Any]], prefix: str = "features."
    ) -> tuple[dict[str, NDArray[Any]], dict[str, NDArray[Any]]]:
        """``arrays`` parted into those of an encoder (by ``prefix``) and the rest."""
        mine = {k: v for k, v in arrays.items() if k.startswith(prefix)}
        return mine, {k: v for k, v in arrays.items() if not k.startswith(prefix)}
