"""A site's rows encoded with the federation's codebook (:func:`encode_site`).

Categorical and ordinal columns become ``int64`` codes ``0..k-1`` in the codebook's
order, continuous columns ``float64``. Missing values are an error naming the site,
file, column and count, unless ``missing="drop-rows"`` (those rows go, counted) or
``missing="keep"`` (they stay: ``-1`` in a code column, NaN in a continuous one, for
a method that uses incomplete rows: FedCDnv's test-wise deletion, FedAvg's federated
imputation); a missing
label of a supervised categorical column is kept as ``-1``. In a regime column, an empty,
missing or ``obs`` value marks an observational row; any other value must name one
of the site's columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import OBSERVATIONAL, ClientData
from fedstruct.data.sites.limits import MAX_LEVEL_CHARS
from fedstruct.data.sites.schema import LEVELLED, FederationSchema, level_name
from fedstruct.data.sites.table import SiteTable, factorize, site_table
from fedstruct.errors import ConfigError, DataError, SampleSizeError, UnknownVariableError

#: What to do with missing values: refuse them, drop their rows, or keep them (code
#: ``-1``, NaN) for a method that handles them.
MISSING = ("error", "drop-rows", "keep")
_OBSERVATIONAL_MARKS = ("", "obs")


@dataclass(frozen=True)
class EncodedSite:
    """A site's rows encoded with the federation's codebook.

    Parameters
    ----------
    client
        The site's data.
    dropped_rows
        Rows dropped for missing values (``missing="drop-rows"``).
    constant
        Columns with a single value at this site (reported, not dropped).
    """

    client: ClientData
    dropped_rows: int
    constant: tuple[str, ...]


def encode_site(
    site: str,
    frame: pd.DataFrame,
    schema: FederationSchema,
    *,
    missing: str = "error",
    regime: str | None = None,
    supervised: Sequence[str] = (),
    min_rows: int = 1,
    source: str | Path | None = None,
) -> EncodedSite:
    """Encode a site's table with the federation's codebook.

    Parameters
    ----------
    site
        The site's name (the client's name).
    frame
        Its table.
    schema
        The federation schema; every column (but the regime column) must be one of
        its variables.
    missing
        ``"error"``, ``"drop-rows"`` or ``"keep"`` (:data:`MISSING`).
    regime
        A column naming, per row, the intervened variable (empty, missing or ``obs``:
        observational). It becomes ``ClientData.intervention`` and is not a variable.
    supervised
        Columns the site supervises; a missing label of a categorical one is ``-1``.
    min_rows
        The fewest rows the site may hold after dropping rows.
    source
        The file the table came from, named in messages.

    Returns
    -------
    EncodedSite
        Categorical and ordinal columns as ``int64`` codes, continuous ones ``float64``.

    Raises
    ------
    DataError
        Missing values (with ``missing="error"``), a column all missing (but a
        categorical label column, or any with ``missing="keep"``: rows to predict
        from, for a model that imputes), text in a continuous column, a level the
        codebook lacks.
    SampleSizeError
        Fewer than ``min_rows`` rows.
    UnknownVariableError
        A column not in the schema, a supervised or regime column the site lacks, or a
        regime value naming no column of the site.
    ConfigError
        An unknown ``missing`` mode.
    """
    table = site_table(site, frame, None if source is None else Path(source))
    encoded = encode_table(table, schema, missing, regime, tuple(supervised), min_rows)
    return encoded.build()


@dataclass
class Encoded:
    """Encoded columns before they become a ClientData (lets a reader free its table)."""

    site: str
    columns: dict[str, NDArray[Any]]
    supervised: tuple[str, ...]
    intervention: NDArray[np.int64] | None
    dropped_rows: int
    constant: tuple[str, ...]
    #: Whether the rows keep missing values (``missing="keep"``).
    missing: bool = False
    #: The codebook the columns were coded with (the client keeps it).
    schema: FederationSchema | None = None

    def build(self) -> EncodedSite:
        rows = pd.DataFrame(self.columns, copy=False)
        self.columns = {}
        client = ClientData(
            self.site,
            rows,
            self.supervised,
            self.intervention,
            missing_values=self.missing,
            schema=self.schema,
        )
        return EncodedSite(client, self.dropped_rows, self.constant)


def encode_table(
    table: SiteTable,
    schema: FederationSchema,
    missing: str,
    regime: str | None,
    supervised: tuple[str, ...],
    min_rows: int,
) -> Encoded:
    """A site's table encoded with ``schema`` (:func:`encode_site`'s steps), before
    its columns become a client."""
    if missing not in MISSING:
        raise ConfigError(f"missing must be one of {', '.join(MISSING)}; got {missing!r}")
    frame = table.frame
    if regime is not None and regime not in frame.columns:
        raise UnknownVariableError(
            f"{table.where} has no regime column {regime!r}; its columns are {list(frame.columns)}"
        )
    variables = [c for c in frame.columns if c != regime]
    _check_variables(table, variables, schema, supervised)
    labels = {v for v in supervised if schema.kinds[v] in LEVELLED}
    keep = _rows_to_keep(table, variables, labels, missing)
    n_kept = len(frame) if keep is None else int(keep.sum())
    if n_kept < min_rows:
        dropped = (
            "" if keep is None else f" after dropping {len(frame) - n_kept} with missing values"
        )
        raise SampleSizeError(
            f"{table.where} has {n_kept} rows{dropped}, fewer than the {min_rows} required; "
            "add rows or lower min_rows"
        )
    columns: dict[str, NDArray[Any]] = {}
    constant = []
    for col in variables:
        values = _encode_column(table, col, schema)
        if keep is not None:
            values = values[keep]
        if _is_constant(values):
            constant.append(col)
        columns[col] = values
    intervention = None
    if regime is not None:
        intervention = _regime_codes(table, regime, variables, keep)
    return Encoded(
        table.name,
        columns,
        supervised,
        intervention,
        len(frame) - n_kept,
        tuple(constant),
        missing=missing == "keep",
        schema=schema,
    )


def _check_variables(
    table: SiteTable, variables: list[str], schema: FederationSchema, supervised: tuple[str, ...]
) -> None:
    if not variables:
        raise DataError(f"{table.where} has no variables besides its regime column")
    unknown = [c for c in variables if c not in schema.kinds]
    if unknown:
        raise UnknownVariableError(
            f"{table.where} has columns {unknown} that the federation schema does not have; "
            "build the schema from every site's file"
        )
    absent = [v for v in supervised if v not in variables]
    if absent:
        raise UnknownVariableError(
            f"{table.where} supervises {absent}, which are not among its columns; fix the "
            "names or drop them from supervised"
        )


def _rows_to_keep(
    table: SiteTable, variables: list[str], labels: set[str], missing: str
) -> NDArray[np.bool_] | None:
    """Rows without missing values (None: all of them); raises for missing="error"."""
    frame = table.frame
    bad: NDArray[np.bool_] | None = None
    for col in variables:
        isna = table.isna.pop(col, None)
        if isna is None:
            isna = frame[col].isna().to_numpy()
        count = int(isna.sum())
        if count == len(frame) and missing != "keep" and col not in labels:
            raise table.all_missing(col)
        if count == 0 or col in labels or missing == "keep":
            continue
        if missing == "error":
            raise DataError(
                f"{count} missing values in column {col!r} of {table.where}; "
                "fill them, pass --set missing=keep for a method that uses incomplete rows "
                "(fedavg, fedcdnv), or --set missing=drop-rows"
            )
        bad = isna if bad is None else bad | isna
    return None if bad is None else ~bad


def _encode_column(table: SiteTable, col: str, schema: FederationSchema) -> NDArray[Any]:
    kind = schema.kinds[col]
    if kind in LEVELLED:
        codes, names = table.factors.pop(col, None) or factorize(table.frame[col])
        book = schema.codebook(col)
        absent = [n for n in names if n not in book]
        if absent:
            known = list(book)
            raise DataError(
                f"column {col!r} of {table.where} has levels {_shown(absent)} that the run's "
                f"sites never had (its levels: {known[:10]}{' ...' if len(known) > 10 else ''})"
                "; drop or recode those rows, or train again with sites that have them"
            )
        lookup = np.array([book[n] for n in names] + [-1], dtype=np.int64)
        return lookup[codes]
    column = table.frame[col]
    if pd.api.types.is_bool_dtype(column.dtype) or not pd.api.types.is_numeric_dtype(column.dtype):
        text = column.dropna().iloc[:1].tolist()
        raise DataError(
            f"column {col!r} of {table.where} holds text (e.g. {_shown(text)[0]!r}) but is "
            f"continuous; fix the values or set kinds.{col}=categorical"
        )
    if column.dtype == np.float64:
        values = column.to_numpy()  # no copy: NaN already marks missing values
    else:  # integers, nullable extension types
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    infinite = 0 if np.isfinite(values).all() else int(np.isinf(values).sum())
    if infinite:
        raise DataError(
            f"{infinite} infinite values in column {col!r} of {table.where}; "
            "replace them with finite numbers"
        )
    return values


def _shown(values: Sequence[Any]) -> list[str]:
    """The first five of a file's values as a message shows them, each cut to
    :data:`~fedstruct.data.sites.limits.MAX_LEVEL_CHARS` characters (a cell of a
    new file may be a page of text)."""
    cut = MAX_LEVEL_CHARS
    return [v if len(v) <= cut else f"{v[:cut]}..." for v in map(str, values[:5])]


def _is_constant(values: NDArray[Any]) -> bool:
    """Whether a column holds one value (codes: ignoring -1, a missing label; numbers:
    ignoring NaN, a missing value kept)."""
    if values.dtype.kind == "f" and np.isnan(values).any():
        values = values[~np.isnan(values)]
    if values.size == 0:  # missing at every row of the site
        return True
    low, high = values.min(), values.max()
    if low == high:
        return True
    if values.dtype.kind == "i" and low < 0:
        valid = values[values >= 0]
        return valid.size == 0 or bool(valid.min() == valid.max())
    return False


def _regime_codes(
    table: SiteTable, regime: str, variables: list[str], keep: NDArray[np.bool_] | None
) -> NDArray[np.int64]:
    column = table.frame[regime]
    if keep is not None:
        column = column[keep]
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    position = {v: j for j, v in enumerate(variables)}
    lookup = []
    for value in uniques:
        name = level_name(value).strip()
        if name in _OBSERVATIONAL_MARKS:
            lookup.append(OBSERVATIONAL)
        elif name in position:
            lookup.append(position[name])
        else:
            count = int((codes == len(lookup)).sum())
            raise UnknownVariableError(
                f"regime column {regime!r} of {table.where} names {name!r} in {count} rows, "
                f"which is not one of its variables {variables}; fix those values or mark "
                "observational rows 'obs'"
            )
    return np.array([*lookup, OBSERVATIONAL], dtype=np.int64)[codes]
