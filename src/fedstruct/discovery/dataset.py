"""Turning a client's data into a checked numeric matrix for the CI tests.

Accepted inputs: a :class:`~fedstruct.data.client.ClientData`, a pandas ``DataFrame``
(column names are the variable names) or a 2-D numpy array with ``names``. Bad input
raises a :mod:`fedstruct.errors` exception whose one-line message names the variable
(and the client, for a ``ClientData``): non-finite values, a constant column, a
non-numeric column, no rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import DataError, NonFiniteDataError, SampleSizeError

__all__ = ["DataLike", "Matrix", "as_matrix"]

DataLike = ClientData | pd.DataFrame | NDArray
"""What the CI-test constructors accept as data."""


@dataclass(frozen=True)
class Matrix:
    """A checked ``(n, d)`` data matrix with its variable names.

    ``values`` is ``int64`` when every column was integer- or bool-typed, else ``float64``.
    ``where`` is the prefix used in error messages (e.g. ``"client 'site-1': "``).
    """

    names: tuple[str, ...]
    values: NDArray
    where: str = ""


def _frame_values(frame: pd.DataFrame, where: str) -> NDArray:
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
        return frame.to_numpy(dtype=np.int64)
    return frame.to_numpy(dtype=np.float64)


def as_matrix(data: DataLike, names: Sequence[str] | None = None) -> Matrix:
    """Check ``data`` and return it as a :class:`Matrix`.

    Parameters
    ----------
    data
        A ``ClientData``, a ``DataFrame`` or a 2-D array (rows are samples).
    names
        Variable names for an array (default ``X0, X1, ...``); for a frame or a
        ``ClientData`` they must be omitted or equal the column names.

    Raises
    ------
    NonFiniteDataError
        If a column holds NaN or infinite values.
    SampleSizeError
        If there are no rows.
    DataError
        For a constant column, a non-numeric column, a non-2-D array, or ``names``
        that do not fit the data.
    """
    where = ""
    if isinstance(data, ClientData):
        where = f"client {data.name!r}: "
        data = data.rows
    if isinstance(data, pd.DataFrame):
        values = _frame_values(data, where)
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
        names = tuple(f"X{k}" for k in range(values.shape[1])) if names is None else tuple(names)
        if len(names) != values.shape[1] or len(set(names)) != len(names):
            raise DataError(
                f"{len(names)} names for {values.shape[1]} columns; give one unique name per column"
            )
    if values.shape[0] == 0:
        raise SampleSizeError(f"{where}the data have no rows; a CI test needs samples")
    if values.dtype == np.float64:
        bad = ~np.isfinite(values).all(axis=0)
        if bad.any():
            name = names[int(np.flatnonzero(bad)[0])]
            raise NonFiniteDataError(
                f"{where}variable {name!r} has NaN or infinite values; drop or impute those rows"
            )
    constant = (values == values[0]).all(axis=0)
    if constant.any():
        col = int(np.flatnonzero(constant)[0])
        raise DataError(
            f"{where}variable {names[col]!r} is constant (the value {values[0, col]} in every "
            "row); no test can detect a dependence on it: drop the column"
        )
    return Matrix(tuple(names), values, where)
