"""One site's table with its categorical columns factorised once, and its schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.sites.schema import (
    LEVELLED,
    ColumnSchema,
    SiteSchema,
    check_kind,
    check_unique,
    level_name,
    sorted_levels,
)
from fedstruct.errors import DataError, UnknownVariableError


@dataclass
class SiteTable:
    """A site's table with its categorical columns factorised once (codes + level names)."""

    name: str
    frame: pd.DataFrame
    path: Path | None = None
    factors: dict[str, tuple[NDArray[np.integer], list[str]]] = field(default_factory=dict)
    isna: dict[str, NDArray[np.bool_]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The site (and its file) as messages name them."""
        return f"site {self.name!r}" + (f" (file {self.path})" if self.path else "")

    def factor(self, col: str) -> tuple[NDArray[np.integer], list[str]]:
        """Codes into the column's distinct values (-1 = missing) and their level names."""
        if col not in self.factors:
            self.factors[col] = factorize(self.frame[col])
        return self.factors[col]

    def missing(self, col: str) -> NDArray[np.bool_]:
        """Which rows miss a value of ``col`` (computed once)."""
        if col not in self.isna:
            self.isna[col] = self.frame[col].isna().to_numpy()
        return self.isna[col]

    def schema(self, kinds: Mapping[str, str]) -> SiteSchema:
        """The site's :class:`SiteSchema` for the columns ``kinds`` names.

        Raises
        ------
        DataError
            For a column whose values are all missing.
        """
        columns = []
        for col in self.frame.columns:
            if col not in kinds:
                continue
            kind = kinds[col]
            check_kind(kind, col)
            levels: tuple[str, ...] = ()
            if kind in LEVELLED:
                levels = sorted_levels(self.factor(col)[1])
                if not levels:
                    raise self.all_missing(col)
            elif self.missing(col).all():
                raise self.all_missing(col)
            columns.append(ColumnSchema(col, kind, levels))
        return SiteSchema(self.name, len(self.frame), tuple(columns))

    def all_missing(self, col: str) -> DataError:
        """The error for column ``col`` without any value."""
        return DataError(
            f"column {col!r} of {self.where} has no values (all {len(self.frame)} missing); "
            "fill it or remove the column"
        )


def factorize(column: pd.Series) -> tuple[NDArray[np.integer], list[str]]:
    """Codes into a column's distinct values (-1: missing) and their level names."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    names = [level_name(v) for v in uniques]
    if len(names) < 2**15:  # small codes keep the cache small; -1 still means missing
        codes = codes.astype(np.int16 if len(names) >= 127 else np.int8)
    return codes, names


def site_schema(
    site: str, frame: pd.DataFrame, kinds: Mapping[str, str], *, regime: str | None = None
) -> SiteSchema:
    """What a site reports about its table: names, kinds, level names, row count.

    Parameters
    ----------
    site
        The site's name.
    frame
        Its table.
    kinds
        Column -> kind for every column (e.g. from :func:`infer_kinds`).
    regime
        A regime column to leave out.

    Raises
    ------
    UnknownVariableError
        If a column has no kind.
    DataError
        For duplicate column names or a column whose values are all missing.
    """
    table = site_table(site, frame, None)
    unknown = [c for c in frame.columns if c != regime and c not in kinds]
    if unknown:
        raise UnknownVariableError(
            f"site {site!r}: columns {unknown} have no kind; give kinds for every column"
        )
    return table.schema({c: k for c, k in kinds.items() if c != regime})


def site_table(site: str, frame: pd.DataFrame, path: Path | None) -> SiteTable:
    """A :class:`SiteTable`, its name and column names checked."""
    if not isinstance(site, str) or not site:
        raise DataError(f"a site's name must be a non-empty string, got {site!r}")
    check_unique([str(c) for c in frame.columns], f"site {site!r}")
    return SiteTable(site, frame, path)
