"""Turning a client's data into a checked numeric matrix for the CI tests.

Accepted inputs: a :class:`~fedstruct.data.client.ClientData`, a pandas ``DataFrame``
(column names are the variable names) or a 2-D numpy array with ``names``. Bad input
raises a :mod:`fedstruct.errors` exception whose one-line message names the variable
(and the client, for a ``ClientData``): non-finite values, a constant column, a
non-numeric column, no rows.

Missing values (``missing="testwise"``): a NaN in a float column, ``-1`` in an integer
column (the data layer's code of a missing level, :mod:`fedstruct.data.sites.encoding`).
They are kept out of every check, replaced in ``values`` by the column's smallest
observed value (a filler no test reads: :attr:`Matrix.observed` says which
entries are real), and each test uses the rows complete on its own variables
(:mod:`fedstruct.discovery.missing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.discovery.missing import check_missing_mode
from fedstruct.errors import DataError, NonFiniteDataError, SampleSizeError

__all__ = ["DataLike", "Matrix", "as_matrix"]

DataLike = ClientData | pd.DataFrame | NDArray
"""What the CI-test constructors accept as data."""


@dataclass(frozen=True)
class Matrix:
    """A checked ``(n, d)`` data matrix with its variable names.

    ``values`` is ``int64`` when every column was integer- or bool-typed, else ``float64``.
    ``where`` is the prefix used in error messages (e.g. ``"client 'site-1': "``).
    ``observed`` is ``(n, d)`` booleans, whether each entry holds a value, when some
    entry is missing (``missing="testwise"``); ``None`` when none is.
    """

    names: tuple[str, ...]
    values: NDArray
    where: str = ""
    observed: NDArray[np.bool_] | None = None


def _frame_values(frame: pd.DataFrame, where: str) -> tuple[NDArray, NDArray[np.bool_]]:
    """The frame's values (``int64`` when every column is integer or bool, else
    ``float64``) and which columns are integer-typed."""
    for col in frame.columns:
        if not isinstance(col, str) or not col:
            raise DataError(f"{where}column names must be non-empty strings, got {col!r}")
    for col in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[col]):
            raise DataError(
                f"{where}variable {col!r} has dtype {frame[col].dtype}; CI tests need numeric "
                "columns (integer state codes or real numbers)"
            )
    integer = [
        pd.api.types.is_integer_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
        for c in frame.columns
    ]
    if all(integer):
        return frame.to_numpy(dtype=np.int64), np.array(integer, dtype=bool)
    return frame.to_numpy(dtype=np.float64), np.array(integer, dtype=bool)


def _missing_entries(values: NDArray, integer: NDArray[np.bool_]) -> NDArray[np.bool_] | None:
    """Which entries are missing (NaN in a float column, -1 in an integer one), or
    ``None`` when none is."""
    if values.dtype == np.int64:
        missing = values == -1
    else:
        missing = np.isnan(values)
        if integer.any():
            missing[:, integer] = values[:, integer] == -1
    return missing if missing.any() else None


def _fill_missing(values: NDArray, missing: NDArray[np.bool_]) -> NDArray:
    """A copy of ``values`` with each missing entry set to its column's smallest
    observed value (0 for a column with none)."""
    values = values.copy()
    for col in np.flatnonzero(missing.any(axis=0)):
        holes = missing[:, col]
        seen = values[~holes, col]
        values[holes, col] = seen.min() if seen.size else 0
    return values


def _constant_column(values: NDArray, missing: NDArray[np.bool_] | None) -> int | None:
    """The first column whose observed values are all equal (a column with no
    observed value is not constant: every test on it is skipped), or ``None``."""
    if missing is None:
        constant = (values == values[0]).all(axis=0)
    else:
        low = np.where(missing, np.inf, values).min(axis=0)
        high = np.where(missing, -np.inf, values).max(axis=0)
        constant = (low == high) & (missing.sum(axis=0) < values.shape[0])
    return int(np.flatnonzero(constant)[0]) if constant.any() else None


def as_matrix(data: DataLike, names: Sequence[str] | None = None, missing: str = "error") -> Matrix:
    """Check ``data`` and return it as a :class:`Matrix`.

    Parameters
    ----------
    data
        A ``ClientData``, a ``DataFrame`` or a 2-D array (rows are samples).
    names
        Variable names for an array (default ``X0, X1, ...``); for a frame or a
        ``ClientData`` they must be omitted or equal the column names.
    missing
        ``"error"`` (default: a NaN is an error) or ``"testwise"`` (NaN in a float
        column and ``-1`` in an integer column are missing values, marked in
        :attr:`Matrix.observed`; module docstring).

    Raises
    ------
    NonFiniteDataError
        If a column holds infinite values, or NaN with ``missing="error"``.
    SampleSizeError
        If there are no rows.
    DataError
        For a constant column, a non-numeric column, a non-2-D array, or ``names``
        that do not fit the data.
    """
    check_missing_mode(missing)
    where = ""
    if isinstance(data, ClientData):
        where = f"client {data.name!r}: "
        data = data.rows
    if isinstance(data, pd.DataFrame):
        values, integer = _frame_values(data, where)
        found = tuple(data.columns)
        if names is not None and tuple(names) != found:
            raise DataError(f"{where}names {list(names)} differ from the data's columns")
        names = found
    else:
        values = np.asarray(data)
        if values.ndim != 2:
            raise DataError(f"data must be a 2-D array (rows = samples), got shape {values.shape}")
        numeric = np.issubdtype(values.dtype, np.integer) or np.issubdtype(
            values.dtype, np.floating
        )
        if not numeric:
            raise DataError(f"data must be numeric, got dtype {values.dtype}")
        values = values.astype(
            np.int64 if np.issubdtype(values.dtype, np.integer) else np.float64, copy=False
        )
        integer = np.full(values.shape[1], values.dtype == np.int64)
        names = tuple(f"X{k}" for k in range(values.shape[1])) if names is None else tuple(names)
        if len(names) != values.shape[1] or len(set(names)) != len(names):
            raise DataError(
                f"{len(names)} names for {values.shape[1]} columns; give one unique name per column"
            )
    if values.shape[0] == 0:
        raise SampleSizeError(f"{where}the data have no rows; a CI test needs samples")
    absent = _missing_entries(values, integer) if missing == "testwise" else None
    if values.dtype == np.float64:
        bad = ~(np.isfinite(values) | (False if absent is None else absent)).all(axis=0)
        if bad.any():
            name = names[int(np.flatnonzero(bad)[0])]
            raise NonFiniteDataError(
                f"{where}variable {name!r} has NaN or infinite values; drop or impute those "
                "rows, or keep NaN as missing values with missing='testwise'"
                if missing == "error"
                else f"{where}variable {name!r} has infinite values; replace them with "
                "finite numbers"
            )
    col = _constant_column(values, absent)
    if col is not None:
        value = values[0, col] if absent is None else values[~absent[:, col], col][0]
        raise DataError(
            f"{where}variable {names[col]!r} is constant (the value {value} in every "
            "row with a value); no test can detect a dependence on it: drop the column"
        )
    if absent is None:
        return Matrix(tuple(names), values, where)
    return Matrix(tuple(names), _fill_missing(values, absent), where, ~absent)
