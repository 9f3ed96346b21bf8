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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError
from fedstruct.fl.features import FeatureColumns, FeatureStatistics, site_summary

__all__ = ["QuantileBins", "quantile_cuts", "shared_grid", "site_histogram"]


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
        histogram over the shared grid (module docstring).

        Raises
        ------
        DataError
            If ``bins`` < 2, or a column has no value at any site.
        """
        if bins < 2:
            raise DataError(f"bins must be at least 2; got {bins}")
        spec = FeatureColumns(continuous=tuple(columns))
        summaries = [site_summary(pd.DataFrame(site), spec) for site in sites]
        statistics = FeatureStatistics.merge(spec, summaries)
        cuts = {}
        for column in columns:
            if statistics.present(column) == 0:
                raise DataError(f"continuous column {column!r} has no value at any site; drop it")
            mean, sd = statistics.moments(column)
            edges = shared_grid(mean, sd, cells, span)
            pooled = np.sum([site_histogram(site[column], edges) for site in sites], axis=0)
            cuts[column] = tuple(float(c) for c in quantile_cuts(pooled, edges, bins))
        return cls(cuts)

    def levels(self, column: str) -> int:
        """Number of bins of ``column``."""
        return len(self.cuts[column]) + 1

    def codes(self, column: str, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """The bin code of each value (``-1``: missing)."""
        cuts = np.asarray(self.cuts[column], dtype=np.float64)
        codes = np.searchsorted(cuts, values, side="right").astype(np.int64)
        return np.where(np.isnan(values), -1, codes)

    def to_json(self) -> dict[str, list[float]]:
        """Column -> its cut points (what a run saves and reports)."""
        return {c: list(v) for c, v in self.cuts.items()}
