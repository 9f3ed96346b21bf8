"""Federated quantile bins of continuous columns, from per-site histograms (never rows).

For a method that models categorical variables only (FED-CD's ENCO), a continuous
column is cut into ``bins`` bins holding about equal shares of the pooled rows:

1. each site sends :func:`~fedstruct.fl.features.site_summary` of the column (count,
   sum, centred sum of squares); the server pools them into the federated mean and
   deviation (:class:`~fedstruct.fl.features.FeatureStatistics`);
2. the server fixes one shared fine grid, :func:`shared_grid`: ``cells`` equal cells
   over ``mean ± span · sd`` plus one open cell below and one above, so no site's
   extreme value is needed to place it;
3. each site sends its counts over the grid's cells (:func:`site_histogram`); the
   server sums them and cuts at the right edge of the cell where the pooled cumulative
   count first reaches ``j / bins`` of the rows (:func:`quantile_cuts`), so each cut is
   within one grid step of the pooled ``j / bins`` quantile (a cut falling in an open
   tail cell moves to the grid's end: a tail holding more than ``1 / bins`` of the rows
   is one bin).

Summing histograms over a shared grid is the mergeable summary of Ben-Haim & Tom-Tov
(2010), "A streaming parallel decision tree algorithm" (JMLR 11), §2.1, with the grid
fixed instead of adapted, so that the merge is exact: the pooled histogram is the
histogram of the pooled rows. What a site discloses is its count per grid cell.

:class:`QuantileBinning` holds both sides of the exchange (a method's client calls
:meth:`~QuantileBinning.summary` and :meth:`~QuantileBinning.histograms`, its server
:meth:`~QuantileBinning.edges` and :meth:`~QuantileBinning.cuts`; FED-CD's protocol,
:mod:`fedstruct.methods.fedcd`); :meth:`QuantileBins.from_sites` runs the same steps
on sites held in one process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError, ProtocolError
from fedstruct.fl import checkpoint
from fedstruct.fl.features import FeatureColumns, FeatureStatistics, site_summary

__all__ = [
    "QuantileBinning",
    "QuantileBins",
    "quantile_cuts",
    "shared_grid",
    "site_histogram",
]


def shared_grid(mean: float, sd: float, cells: int = 256, span: float = 4.0) -> NDArray[np.float64]:
    """The ``cells + 1`` inner edges of the shared grid: ``mean ± span · sd`` cut
    into ``cells`` equal cells (step 2 of the module docstring; ``sd`` 1 when 0).

    Raises
    ------
    DataError
        If ``cells`` < 1, ``span`` <= 0 or ``mean``/``sd`` is not finite.
    """
    if cells < 1 or not span > 0 or not (np.isfinite(mean) and np.isfinite(sd)):
        raise DataError(f"a quantile grid needs cells >= 1, span > 0 and finite moments; got "
                        f"cells={cells}, span={span}, mean={mean}, sd={sd}")  # fmt: skip
    sd = sd if sd > 0 else 1.0
    return np.linspace(mean - span * sd, mean + span * sd, cells + 1)


def site_histogram(values: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.int64]:
    """A site's counts of its non-missing ``values`` over the grid's ``len(edges) + 1``
    cells: below the first edge, each inner cell ``[e_i, e_{i+1})``, from the last
    edge up (step 3 of the module docstring)."""
    given = values[~np.isnan(values)]
    cell = np.searchsorted(edges, given, side="right")
    return np.bincount(cell, minlength=len(edges) + 1).astype(np.int64)


def quantile_cuts(
    counts: NDArray[np.int64], edges: NDArray[np.float64], bins: int
) -> NDArray[np.float64]:
    """The cut points of ``bins`` equal-share bins from the pooled grid ``counts``
    (summed over the sites; step 3 of the module docstring), increasing, without
    repeats (a column with few distinct values gets fewer bins)."""
    total = int(counts.sum())
    if total == 0 or bins < 2:
        return np.zeros(0)
    cumulative = np.cumsum(counts)
    cuts = []
    for j in range(1, bins):
        cell = int(np.searchsorted(cumulative, j * total / bins, side="left"))
        # the right edge of that cell: inner cell i is [edges[i-1], edges[i])
        cuts.append(edges[min(max(cell, 0), len(edges) - 1)])
    unique = np.unique(np.asarray(cuts, dtype=np.float64))
    return unique


@dataclass(frozen=True)
class QuantileBinning:
    """Both sides of the federated-bins exchange (module docstring) for ``columns``.

    Parameters
    ----------
    columns
        The continuous columns to bin, in the order every message lists them.
    bins
        Bins per column (at least 2).
    cells
        Cells of the shared grid (``bin_grid``).
    span
        The grid covers ``mean ± span · sd``.

    Raises
    ------
    DataError
        If ``bins`` < 2 or ``cells`` < 1.
    """

    columns: tuple[str, ...]
    bins: int = 4
    cells: int = 256
    span: float = 4.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        if self.bins < 2:
            raise DataError(f"bins must be at least 2; got {self.bins}")
        if self.cells < 1:
            raise DataError(f"bin_grid must be at least 1; got {self.cells}")

    @property
    def features(self) -> FeatureColumns:
        """The columns as the summary step reads them (all continuous)."""
        return FeatureColumns(continuous=self.columns)

    @property
    def summary_entries(self) -> int:
        """Numbers in a site's summary (step 1): its declared bound."""
        return self.features.summary_entries

    @property
    def histogram_entries(self) -> int:
        """Numbers in a site's histograms (step 3): its declared bound."""
        return len(self.columns) * (self.cells + 2)

    def summary(
        self, rows: pd.DataFrame, center: NDArray[np.float64] | None = None
    ) -> dict[str, NDArray[Any]]:
        """Step 1, at a site: count, sum and centred sum of squares of each column's
        non-missing values (about ``center`` when the server sends one:
        :func:`~fedstruct.fl.features.site_summary`)."""
        return site_summary(rows, self.features, center)

    def edges(self, summaries: Sequence[Mapping[str, NDArray[Any]]]) -> NDArray[np.float64]:
        """Step 2, at the server: the shared grid of every column, ``(columns, cells +
        1)``, from the sites' summaries (pooled in the order given).

        Raises
        ------
        DataError
            If a column has no value at any site.
        ProtocolError
            If a summary is malformed.
        """
        return self.grids(FeatureStatistics.merge(self.features, summaries))

    def grids(self, statistics: FeatureStatistics) -> NDArray[np.float64]:
        """Step 2 from the pooled statistics (:meth:`edges`; a secure run pools them by
        :func:`~fedstruct.fl.features.gather_statistics`).

        Raises
        ------
        DataError
            If a column has no value at any site.
        """
        grids = []
        for column in self.columns:
            if statistics.present(column) == 0:
                raise DataError(f"continuous column {column!r} has no value at any site; drop it")
            mean, sd = statistics.moments(column)
            grids.append(shared_grid(mean, sd, self.cells, self.span))
        return np.asarray(grids, dtype=np.float64).reshape(len(self.columns), self.cells + 1)

    def histograms(self, rows: pd.DataFrame, edges: NDArray[np.float64]) -> NDArray[np.int64]:
        """Step 3, at a site: its counts of each column over the column's grid,
        ``(columns, cells + 2)``.

        Raises
        ------
        ProtocolError
            If ``edges`` is not one grid of ``cells + 1`` edges per column.
        """
        edges = self._checked(edges, self.cells + 1, "grid")
        counts = [
            site_histogram(rows[c].to_numpy(dtype=np.float64), edges[j])
            for j, c in enumerate(self.columns)
        ]
        return np.asarray(counts, dtype=np.int64).reshape(len(self.columns), self.cells + 2)

    def cuts(
        self, edges: NDArray[np.float64], histograms: Sequence[NDArray[np.int64]]
    ) -> QuantileBins:
        """Step 3, at the server: the cut points from the sites' histograms (summed).

        Raises
        ------
        ProtocolError
            If no site sent its histograms, or one is malformed.
        """
        if not histograms:
            raise ProtocolError("no site sent its bin histograms")
        checked = [self._checked(h, self.cells + 2, "histogram") for h in histograms]
        pooled = np.sum(checked, axis=0)
        return QuantileBins(
            {
                c: tuple(float(v) for v in quantile_cuts(pooled[j], edges[j], self.bins))
                for j, c in enumerate(self.columns)
            }
        )

    def _checked(self, array: NDArray[Any], width: int, what: str) -> NDArray[Any]:
        array = np.asarray(array)
        if array.shape != (len(self.columns), width):
            raise ProtocolError(
                f"a bin {what} has shape {array.shape}; expected {(len(self.columns), width)}"
                f" for the columns {list(self.columns)}"
            )
        return array


@dataclass(frozen=True)
class QuantileBins:
    """Every binned column's cut points: value ``x`` gets code ``#{cuts <= x}``.

    Parameters
    ----------
    cuts
        Column -> its increasing cut points (``len(cuts) + 1`` bins).
    """

    cuts: dict[str, tuple[float, ...]]

    @classmethod
    def from_sites(
        cls,
        columns: Sequence[str],
        sites: Sequence[dict[str, NDArray[np.float64]]],
        bins: int,
        cells: int = 256,
        span: float = 4.0,
    ) -> QuantileBins:
        """The bins of ``columns`` over ``sites`` (each a column -> its values at one
        site), computed only from what each site would send: its summary, then its
        histograms over the shared grid (:class:`QuantileBinning`'s steps, in one
        process).

        Raises
        ------
        DataError
            If ``bins`` < 2, or a column has no value at any site.
        """
        binning = QuantileBinning(tuple(columns), bins, cells, span)
        frames = [pd.DataFrame(site) for site in sites]
        edges = binning.edges([binning.summary(frame) for frame in frames])
        return binning.cuts(edges, [binning.histograms(frame, edges) for frame in frames])

    def levels(self, column: str) -> int:
        """Number of bins of ``column``."""
        return len(self.cuts[column]) + 1

    def codes(self, column: str, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """The bin code of each value (``-1``: missing)."""
        cuts = np.asarray(self.cuts[column], dtype=np.float64)
        codes = np.searchsorted(cuts, values, side="right").astype(np.int64)
        return np.where(np.isnan(values), -1, codes)

    def encode(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` with every binned column replaced by its bin codes."""
        coded = rows.copy()
        for column in self.cuts:
            coded[column] = self.codes(column, rows[column].to_numpy(dtype=np.float64))
        return coded

    def to_json(self) -> dict[str, list[float]]:
        """Column -> its cut points (what a run saves and reports)."""
        return {c: list(v) for c, v in self.cuts.items()}

    @classmethod
    def from_json(cls, saved: Mapping[str, Sequence[float]]) -> QuantileBins:
        """The bins :meth:`to_json` wrote."""
        return cls({str(c): tuple(float(v) for v in cuts) for c, cuts in saved.items()})

    def to_array(self, columns: Sequence[str]) -> NDArray[np.float64]:
        """The cut points of ``columns`` as one ``(columns, most cuts)`` array, each
        row padded with NaN (what a message carries)."""
        width = max((len(self.cuts[c]) for c in columns), default=0)
        array = np.full((len(columns), width), np.nan)
        for j, column in enumerate(columns):
            array[j, : len(self.cuts[column])] = self.cuts[column]
        return array

    @classmethod
    def from_array(cls, columns: Sequence[str], array: NDArray[np.float64]) -> QuantileBins:
        """The bins :meth:`to_array` wrote.

        Raises
        ------
        ProtocolError
            If ``array`` does not hold one row per column.
        """
        array = np.asarray(array, dtype=np.float64)
        if array.ndim != 2 or len(array) != len(columns):
            raise ProtocolError(
                f"bin cuts of shape {array.shape} do not give one row for each of the "
                f"{len(columns)} columns {list(columns)}"
            )
        return cls(
            {
                c: tuple(float(v) for v in row[~np.isnan(row)])
                for c, row in zip(columns, array, strict=True)
            }
        )


checkpoint.register(QuantileBinning)
checkpoint.register(QuantileBins)
