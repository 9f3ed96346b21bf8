"""Each column's kind (categorical, ordinal or continuous) from its values.

The rule (explicit kinds always win):

- text, boolean and ``category`` columns are categorical;
- a numeric column (integer or float, whatever its dtype: ``1.0, 2.0, ... 5.0`` is a
  score) whose values are all whole numbers, with at most ``max_levels`` (10) distinct
  values, is ordinal, unless it has at most :data:`BINARY_LEVELS` (2) of them: a 0/1
  (or any two-value) column is categorical, since two levels have no order to use and
  every method treats a binary column best as a category;
- every other number is continuous.

A float column is checked cheaply first: a sample of its first rows
(:data:`SAMPLE_ROWS`) with a fraction or more than ``max_levels`` distinct values makes
it continuous without reading the rest, so a file's measurements cost no more than
before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fedstruct.data.sites.schema import check_kind
from fedstruct.errors import DataError, UnknownVariableError

#: Whole-number columns with at most this many levels are categorical, not ordinal.
BINARY_LEVELS = 2
#: Rows of a float column looked at before the whole column (module docstring).
SAMPLE_ROWS = 1000


def infer_kinds(
    frame: pd.DataFrame,
    overrides: Mapping[str, str] | None = None,
    *,
    max_levels: int = 10,
    regime: str | None = None,
) -> dict[str, str]:
    """Each column's kind: categorical, ordinal or continuous.

    Parameters
    ----------
    frame
        A site's table.
    overrides
        Column -> kind; these win over the rule.
    max_levels
        Whole-number columns with at most this many distinct values are ordinal (at
        most :data:`BINARY_LEVELS`: categorical).
    regime
        A regime column to leave out.

    Returns
    -------
    dict
        Column -> kind, in the frame's column order.

    Raises
    ------
    UnknownVariableError
        If ``overrides`` names a column the frame does not have.
    ConfigError
        If ``overrides`` names a kind not in :data:`KINDS`.
    DataError
        For a column of dates or other values that are neither text nor numbers.
    """
    overrides = dict(overrides or {})
    columns = [c for c in frame.columns if c != regime]
    return column_kinds(frame, columns, overrides, max_levels, lambda col: frame[col].nunique())


def column_kinds(
    frame: pd.DataFrame,
    columns: Sequence[str],
    overrides: Mapping[str, str],
    max_levels: int,
    n_distinct: Callable[[str], int],
    any_missing: Callable[[str], bool] | None = None,
) -> dict[str, str]:
    """Each of ``columns``' kind (``overrides`` win; ``n_distinct`` counts values;
    ``any_missing`` says whether a float column misses values, by default
    ``Series.hasnans``)."""
    has_missing = any_missing or (lambda col: bool(frame[col].hasnans))
    for col, kind in overrides.items():
        if col not in columns:
            raise UnknownVariableError(
                f"kinds names column {col!r}, which the table does not have; "
                f"its columns are {list(columns)}"
            )
        check_kind(kind, col)
    return {
        col: overrides.get(col) or _infer_kind(frame[col], max_levels, n_distinct, has_missing)
        for col in columns
    }


def _infer_kind(
    column: pd.Series,
    max_levels: int,
    n_distinct: Callable[[str], int],
    any_missing: Callable[[str], bool],
) -> str:
    """One column's kind by the module's rule."""
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            raise DataError(
                f"column {column.name!r} holds dates or durations; convert them to numbers "
                "(e.g. days since a reference date) before reading"
            )
        return "categorical"
    if pd.api.types.is_integer_dtype(dtype):
        return _levelled_kind(n_distinct(column.name), max_levels)
    n_levels = _whole_levels(column, max_levels, any_missing(column.name))
    return "continuous" if n_levels is None else _levelled_kind(n_levels, max_levels)


def _levelled_kind(n_levels: int, max_levels: int) -> str:
    """The kind of a whole-number column of ``n_levels`` distinct values."""
    if n_levels > max_levels:
        return "continuous"
    return "categorical" if n_levels <= BINARY_LEVELS else "ordinal"


def _whole_levels(column: pd.Series, max_levels: int, missing: bool) -> int | None:
    """How many distinct values a float column has if they are all whole numbers and
    at most ``max_levels``; ``None`` otherwise (a sample of the first rows decides
    most measurement columns without reading the rest)."""
    parts = (column,) if len(column) <= SAMPLE_ROWS else (column.iloc[:SAMPLE_ROWS], column)
    n_levels = 0
    for rows in parts:  # the sample, then (if it looks like a score) every row
        part = rows.to_numpy(dtype=np.float64, na_value=np.nan)
        if missing:
            part = part[~np.isnan(part)]
        if not (np.isfinite(part).all() and np.array_equal(part, np.floor(part))):
            return None
        n_levels = pd.unique(part).size
        if n_levels > max_levels:
            return None
    return n_levels or None
