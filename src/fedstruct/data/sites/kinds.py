"""Each column's kind (categorical, ordinal or continuous) from how pandas typed it.

Text, boolean and ``category`` columns are categorical; integer columns (and integer
columns with missing values, which pandas reads as floats) with at most
``max_levels`` distinct values are categorical; every other number is continuous.
``ordinal`` is never inferred. Explicit kinds always win.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fedstruct.data.sites.schema import check_kind
from fedstruct.errors import DataError, UnknownVariableError


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
        Integer columns with at most this many distinct values are categorical.
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
    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            raise DataError(
                f"column {column.name!r} holds dates or durations; convert them to numbers "
                "(e.g. days since a reference date) before reading"
            )
        return "categorical"
    if pd.api.types.is_integer_dtype(dtype):
        return "categorical" if n_distinct(column.name) <= max_levels else "continuous"
    if any_missing(column.name):  # pandas reads an integer column with missing values as floats
        values = column.dropna().to_numpy(dtype=np.float64)
        integral = values.size and np.array_equal(values, np.floor(values))
        if integral and pd.unique(values).size <= max_levels:
            return "categorical"
    return "continuous"
