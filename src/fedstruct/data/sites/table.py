"""One site's table with its categorical columns factorised once, and its schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import all_finite
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
    finite: dict[str, bool] = field(default_factory=dict)

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

    def only_finite(self, col: str) -> bool:
        """Whether ``col`` is a ``float64`` column of finite numbers only (no missing or
        infinite value), checked once by its sum (:func:`all_finite`): then its
        missing values need not be looked for row by row."""
        if col not in self.finite:
            column = self.frame[col]
            self.finite[col] = column.dtype == np.float64 and all_finite(column.to_numpy())
        return self.finite[col]

    def any_missing(self, col: str) -> bool:
        """Whether any row misses a value of ``col`` (numpy integers and booleans cannot;
        a float column of finite numbers does not; else :meth:`missing`). True for a
        table without rows, so that its callers find every column all missing."""
        dtype = self.frame[col].dtype
        if len(self.frame) == 0:
            return True
        if isinstance(dtype, np.dtype) and dtype.kind in "biu":
            return False
        return not self.only_finite(col) and bool(self.missing(col).any())

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
            elif self.any_missing(col) and self.missing(col).all():
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
    """Codes into a column's distinct values (-1: missing) and their level names.

    The names' order is the codes' and no more: every use sorts them (the schema) or
    maps them (the encoding). A ``category`` column's codes and categories are taken
    as they are, and an integer column of a small range is counted (``bincount``),
    without hashing every row; any other column is hashed (``pandas.factorize``).
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        found = _category_factors(column)
    elif isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu":
        found = _integer_factors(column.to_numpy())
    else:
        found = None
    if found is not None:
        return found
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return _small_codes(codes, len(uniques)), [level_name(v) for v in uniques]


def _small_codes(codes: NDArray[np.integer], n_levels: int) -> NDArray[np.integer]:
    """``codes`` in :func:`_code_dtype` (small codes keep the cache small)."""
    dtype = _code_dtype(n_levels)
    return codes if codes.dtype == dtype or dtype == np.int64 else codes.astype(dtype)


def _code_dtype(n_levels: int) -> type[np.integer]:
    """The smallest of int8/int16/int64 that holds codes ``-1 .. n_levels - 1``."""
    if n_levels >= 2**15:
        return np.int64
    return np.int16 if n_levels >= 127 else np.int8


def _category_factors(column: pd.Series) -> tuple[NDArray[np.integer], list[str]] | None:
    """A ``category`` column's codes into the categories found in it, and their names
    (None for 2**15 categories or more)."""
    categories = column.cat.categories
    if len(categories) >= 2**15:
        return None
    codes = column.cat.codes.to_numpy()
    unsigned = codes.view(np.uint8 if codes.itemsize == 1 else np.uint16)  # -1: the top
    found = np.bincount(unsigned, minlength=2 ** (8 * codes.itemsize))[: len(categories)] > 0
    names = [level_name(v) for v in categories[found]]
    if not found.all():  # categories without rows: the codes of the others, in order
        position = np.full(len(categories) + 1, -1, dtype=_code_dtype(len(names)))
        position[np.flatnonzero(found)] = np.arange(len(names))  # [-1] = -1: missing
        return position[codes], names
    return _small_codes(codes, len(names)), names


def _integer_factors(values: NDArray[np.integer]) -> tuple[NDArray[np.integer], list[str]] | None:
    """An integer column's codes into its distinct values, counted over its range (None
    when the range is wider than the rows: hashing them is cheaper)."""
    if values.size == 0 or values.dtype == np.uint64:
        return None
    low, high = np.int64(values.min()), np.int64(values.max())
    span = int(high) - int(low) + 1
    if span > max(values.size, 1024):
        return None
    offsets = values.astype(np.int64, copy=False) - low  # 0 .. span - 1
    found = np.flatnonzero(np.bincount(offsets, minlength=span))
    position = np.full(span, -1, dtype=_code_dtype(found.size))
    position[found] = np.arange(found.size)
    names = [level_name(v) for v in (found + low).astype(values.dtype)]
    return position[offsets], names


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
