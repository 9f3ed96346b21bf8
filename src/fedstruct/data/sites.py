"""A user's own per-site table files in, as :class:`~fedstruct.data.client.ClientData`.

Each institution (site) holds one file: CSV, TSV or any delimited text (optionally
``.gz``/``.bz2``/``.xz``), or Parquet (``.parquet``/``.pq``). Reading a federation
takes two passes so that no row ever leaves its site:

1. every site reports a :class:`SiteSchema` — its column names, their kinds, the
   level names of its categorical and ordinal columns and its row count;
2. :func:`merge_schemas` joins them into one :class:`FederationSchema`, the
   federation-wide codebook, and each site encodes its rows with it
   (:func:`encode_site`): categorical and ordinal columns become ``int64`` codes
   ``0..k-1`` in the codebook's order, continuous columns ``float64``.

Kinds (:func:`infer_kinds`): text, boolean and pandas ``category`` columns are
categorical; integer columns (including integer columns with missing values, which
pandas reads as floats) with at most ``max_levels`` distinct values are categorical;
every other number is continuous. ``ordinal`` is never inferred: set it. Explicit
kinds always win.

Level names are strings: ``str`` of the value, integral numbers without a decimal
point (``3``, not ``3.0``). The codebook orders a variable's levels (the union over
the sites) numerically when every level parses as a number, otherwise
lexicographically (so give ordinal text levels a sortable spelling, e.g.
``1-low``, ``2-mid``, ``3-high``).

When sites disagree on a column's kind: a column that is categorical with numeric
levels only at some sites (an integer column with few distinct values — a small
site sees few distinct ages) and continuous at the others is continuous everywhere.
Any other disagreement (text levels against numbers, ordinal against anything) is a
:class:`~fedstruct.errors.DataError` naming both sites and the fix
``--set kinds.COL=...``.

Manifest (YAML or JSON; :func:`read_manifest`)::

    sites:                        # required: one entry per site
      - path: h1.csv              # required; relative to the manifest's folder
        name: hospital-1          # default: the file's stem
        kinds: {stage: ordinal}   # this site's kinds (COL: kind)
        graph: h1-graph.json      # the site's own graph file (kept as a path)
        regime: target            # this site's regime column
        supervised: [label]       # columns this site supervises
      - path: h2.tsv              # a bare string "h2.tsv" is short for {path: h2.tsv}
    kinds: {age: continuous}      # every site's kinds
    missing: error                # or drop-rows
    delimiter: ","                # default: sniffed from the file's head
    min_site_rows: 10             # what a site's schema may disclose (SchemaLimits):
    max_site_levels: 100          #   the defaults shown
    regime: target                # the regime column at every site that has it
    supervised: [label]           # at every site that has the column
    target: label                 # method roles, kept for the method layer:
    label: label                  #   target, label, task (a column),
    inputs: [age, sex]            #   inputs, concepts (columns),
    concepts: [c1, c2]
    task: label
    truth: truth.json             #   truth (a graph file; the path is resolved)

Any other key, at either level, is a :class:`~fedstruct.errors.ConfigError`.

A site's schema leaves the site (the federation's codebook is the union of the
sites' level names, saved with a model), so :func:`read_federation` and
:func:`describe_site` refuse a site with fewer than ``min_site_rows`` rows (default
10), a categorical or ordinal column with more than ``max_site_levels`` levels
(default 100), or a column that looks like an identifier (as many distinct values as
90 % of the rows, on a site of 10 rows or more): :class:`SchemaLimits`.

Sites that code a categorical column with no level in common (``yes``/``no`` at one,
``0``/``1`` at another) get a :class:`~fedstruct.errors.FedstructWarning` naming the
column and the sites: their levels would be merged into one codebook of 4 levels.

Missing values are what pandas reads as missing (empty fields, ``NA``, ``NaN``,
``null`` ...). They are an error naming the site, file, column and count, unless
``missing="drop-rows"``, which drops those rows and reports how many. A missing
label of a supervised categorical column is kept as ``-1`` (:class:`ClientData`'s
"no label"). In a regime column, an empty, missing or ``obs`` value marks an
observational row; any other value must name one of the site's columns.
"""

from __future__ import annotations

import bz2
import csv
import ctypes
import functools
import gzip
import io
import logging
import lzma
import math
import os
import warnings
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from numpy.typing import NDArray

from fedstruct.data.checks import require_regular_file
from fedstruct.data.client import OBSERVATIONAL, ClientData
from fedstruct.errors import (
    ConfigError,
    DataError,
    FedstructWarning,
    SampleSizeError,
    UnknownVariableError,
)

__all__ = [
    "KINDS",
    "LEVELLED",
    "MISSING",
    "ColumnSchema",
    "EncodedSite",
    "FederationSchema",
    "Manifest",
    "SchemaLimits",
    "SiteFederation",
    "SiteSchema",
    "SiteSpec",
    "check_roles",
    "describe_site",
    "encode_site",
    "infer_kinds",
    "merge_schemas",
    "parse_site_args",
    "read_federation",
    "read_manifest",
    "read_site",
    "read_table",
    "require_kinds",
    "site_name",
    "site_schema",
]

logger = logging.getLogger(__name__)

#: The kinds of a column.
KINDS = ("categorical", "ordinal", "continuous")
#: What to do with missing values.
MISSING = ("error", "drop-rows")
#: Keys of one site in a manifest.
SITE_KEYS = ("path", "name", "kinds", "graph", "regime", "supervised")
#: Method roles a manifest may name (kept for the method layer).
ROLE_KEYS = ("target", "label", "inputs", "concepts", "task", "truth")
#: Keys of a manifest that set what a site's schema may disclose (:class:`SchemaLimits`).
LIMIT_KEYS = ("min_site_rows", "max_site_levels")
#: Top-level keys of a manifest.
MANIFEST_KEYS = (
    "sites", "kinds", "missing", "delimiter", "regime", "supervised", *LIMIT_KEYS, *ROLE_KEYS
)  # fmt: skip

#: The kinds coded as levels 0..k-1 (``FederationSchema.levels`` holds their names).
LEVELLED = ("categorical", "ordinal")
_PARQUET = (".parquet", ".pq")
_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: What a damaged compressed file raises while it is read (gzip: ``BadGzipFile``
#: (an OSError), ``zlib.error``; all three: ``EOFError`` when cut short; xz:
#: ``LZMAError``).
_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
_DELIMITERS = ",\t;|"
_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
_OBSERVATIONAL_MARKS = ("", "obs")
_HEAD_BYTES = 1 << 16
_HEAD_LINES = 50
#: Bytes of rows one thread parses at a time (pandas' own parallel reading: 4 MB),
#: for up to ``_PIECE_COLUMNS`` columns; wider files get proportionally larger pieces,
#: so the work per column and piece stays a small part of the parsing.
_PIECE_BYTES = 4 << 20
_PIECE_COLUMNS = 50
#: Threads parsing pieces (pandas' C parser releases the GIL while it parses).
_THREADS = max(1, min(4, os.cpu_count() or 1))
#: Pieces handed to the threads ahead of the one being stored.
_AHEAD = 4 * _THREADS


# ------------------------------------------------------------------ schemas
@dataclass(frozen=True)
class ColumnSchema:
    """One column of a site: metadata only, never rows.

    Parameters
    ----------
    name
        The column's name.
    kind
        One of :data:`KINDS`.
    levels
        Categorical and ordinal columns: the level names (as ``str``) in code order;
        empty for continuous columns.
    """

    name: str
    kind: str
    levels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_kind(self.kind, self.name)
        object.__setattr__(self, "levels", tuple(str(v) for v in self.levels))
        if self.kind in LEVELLED and not self.levels:
            raise DataError(f"{self.kind} column {self.name!r} needs at least one level")
        if self.kind == "continuous" and self.levels:
            raise DataError(f"continuous column {self.name!r} has no levels; got {self.levels}")


@dataclass(frozen=True)
class SiteSchema:
    """What a site reports about its file: names, kinds, level names, row count.

    Parameters
    ----------
    site
        The site's name.
    n_rows
        Number of rows of its file.
    columns
        One :class:`ColumnSchema` per variable, in file order.
    """

    site: str
    n_rows: int
    columns: tuple[ColumnSchema, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        _check_unique([c.name for c in self.columns], f"site {self.site!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(c.name for c in self.columns)

    def to_config(self) -> dict[str, Any]:
        """A flat JSON-able dict (str, int, lists of str) to send in a message.

        Keys: ``site``, ``n_rows``, ``columns``, ``kinds`` (aligned with ``columns``)
        and ``levels.<column>`` for each categorical or ordinal column.
        """
        config: dict[str, Any] = {
            "site": self.site,
            "n_rows": int(self.n_rows),
            "columns": list(self.names),
            "kinds": [c.kind for c in self.columns],
        }
        for c in self.columns:
            if c.kind in LEVELLED:
                config[f"levels.{c.name}"] = list(c.levels)
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SiteSchema:
        """Rebuild a schema from :meth:`to_config`'s dict.

        Raises
        ------
        ConfigError
            If a key is missing or the columns and kinds do not line up.
        """
        names = _config_list(config, "columns", "site schema")
        kinds = _config_list(config, "kinds", "site schema")
        if len(names) != len(kinds):
            raise ConfigError("site schema: 'columns' and 'kinds' must have the same length")
        columns = tuple(
            ColumnSchema(name, kind, tuple(config.get(f"levels.{name}", ())))
            for name, kind in zip(names, kinds, strict=True)
        )
        site = str(_config_get(config, "site", "site schema"))
        return cls(site, int(_config_get(config, "n_rows", "site schema")), columns)


#: The fewest rows a site's file may hold (:class:`SchemaLimits`; ``min_site_rows``).
MIN_SITE_ROWS = 10
#: The most level names a site may report for one column (``max_site_levels``).
MAX_SITE_LEVELS = 100
#: A column with at least this share of distinct values per row is an identifier ...
IDENTIFIER_SHARE = 0.9
#: ... on a site with at least this many rows (on fewer, every column would be one).
IDENTIFIER_MIN_ROWS = 10


@dataclass(frozen=True)
class SchemaLimits:
    """What a site's schema may disclose: it leaves the site in the schema handshake.

    A site's schema carries every level name of its categorical and ordinal columns
    and its row count; the federation's codebook (saved with a model, in
    ``model.json``) is their union. So a site is refused

    - with fewer than ``min_rows`` rows (a one-row site's schema *is* its row);
    - with a categorical or ordinal column of more than ``max_levels`` levels;
    - with a column that looks like an identifier: at least
      :data:`IDENTIFIER_SHARE` (90 %) as many distinct values as rows, on a site of
      at least :data:`IDENTIFIER_MIN_ROWS` rows (a name, an ID, a date-time as text).

    Parameters
    ----------
    min_rows
        The fewest rows a site's file may hold (default :data:`MIN_SITE_ROWS`).
    max_levels
        The most levels one column may report (default :data:`MAX_SITE_LEVELS`).

    Raises
    ------
    ConfigError
        If either is not a positive integer.
    """

    min_rows: int = MIN_SITE_ROWS
    max_levels: int = MAX_SITE_LEVELS

    def __post_init__(self) -> None:
        for name, key in (("min_rows", "min_site_rows"), ("max_levels", "max_site_levels")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ConfigError(f"{key} must be a positive integer, got {value!r}")

    @classmethod
    def of(
        cls,
        min_site_rows: int | None = None,
        max_site_levels: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> SchemaLimits:
        """The limits given (``None``: the manifest ``options``' key, else the default)."""
        options = options or {}
        return cls(
            min_site_rows if min_site_rows is not None
            else options.get("min_site_rows", MIN_SITE_ROWS),
            max_site_levels if max_site_levels is not None
            else options.get("max_site_levels", MAX_SITE_LEVELS),
        )  # fmt: skip

    def check(
        self, site: str, n_rows: int, levels: Mapping[str, Sequence[str]], where: str = ""
    ) -> None:
        """Refuse a site's row count and level names if they disclose too much.

        Parameters
        ----------
        site
            The site's name.
        n_rows
            Its number of rows.
        levels
            Column -> its level names (categorical and ordinal columns).
        where
            Added after the site's name in messages (e.g. `` (file h1.csv)``).

        Raises
        ------
        SampleSizeError
            Fewer rows than ``min_rows``.
        DataError
            A column with more than ``max_levels`` levels, or one that looks like an
            identifier (naming the site and the column).
        """
        owner = f"site {site!r}{where}"
        if n_rows < self.min_rows:
            raise SampleSizeError(
                f"{owner} has {n_rows} rows, fewer than the {self.min_rows} a site needs so "
                "that its schema (level names, row count) does not give its rows away; add "
                "rows, join it with another site, or lower --set min_site_rows=N"
            )
        for column, names in levels.items():
            count = len(names)
            if count > self.max_levels:
                raise DataError(
                    f"column {column!r} of {owner} has {count} levels, more than the "
                    f"{self.max_levels} a site may report (every level name leaves the site); "
                    "group rare levels, remove the column, or raise --set max_site_levels=N"
                )
            if n_rows >= IDENTIFIER_MIN_ROWS and count >= IDENTIFIER_SHARE * n_rows:
                raise DataError(
                    f"column {column!r} of {owner} looks like an identifier ({count} distinct "
                    f"values in {n_rows} rows), and every level name leaves the site; remove "
                    f"it from the file, or set kinds.{column}=continuous if it holds measurements"
                )

    def check_schema(self, schema: SiteSchema, where: str = "") -> None:
        """:meth:`check` on a :class:`SiteSchema`."""
        levels = {c.name: c.levels for c in schema.columns if c.kind in LEVELLED}
        self.check(schema.site, schema.n_rows, levels, where)


@dataclass(frozen=True)
class FederationSchema:
    """The merge of every site's schema: one federation-wide codebook.

    Parameters
    ----------
    variables
        Every variable, in first-seen order over the sites.
    kinds
        Variable -> kind.
    levels
        Categorical and ordinal variable -> level names in code order.
    sites
        Site -> its variables, in its file's order.
    rows
        Site -> its number of rows.
    """

    variables: tuple[str, ...]
    kinds: dict[str, str]
    levels: dict[str, tuple[str, ...]]
    sites: dict[str, tuple[str, ...]]
    rows: dict[str, int]

    def cardinalities(self) -> dict[str, int]:
        """Categorical and ordinal variable -> number of levels."""
        return {v: len(levels) for v, levels in self.levels.items()}

    def codebook(self, variable: str) -> dict[str, int]:
        """Level name -> code of a categorical or ordinal variable."""
        return {level: code for code, level in enumerate(self.levels[variable])}

    def to_config(self) -> dict[str, Any]:
        """A flat JSON-able dict (str, int, lists of str) to send in a message.

        Keys: ``variables``, ``kinds`` (aligned), ``levels.<variable>``, ``sites``,
        ``site_variables.<site>`` and ``rows.<site>``.
        """
        config: dict[str, Any] = {
            "variables": list(self.variables),
            "kinds": [self.kinds[v] for v in self.variables],
            "sites": list(self.sites),
        }
        for v, levels in self.levels.items():
            config[f"levels.{v}"] = list(levels)
        for site, names in self.sites.items():
            config[f"site_variables.{site}"] = list(names)
            config[f"rows.{site}"] = int(self.rows[site])
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FederationSchema:
        """Rebuild a schema from :meth:`to_config`'s dict.

        Raises
        ------
        ConfigError
            If a key is missing or the variables and kinds do not line up.
        """
        what = "federation schema"
        variables = tuple(_config_list(config, "variables", what))
        kinds = _config_list(config, "kinds", what)
        if len(variables) != len(kinds):
            raise ConfigError(f"{what}: 'variables' and 'kinds' must have the same length")
        kind_of = dict(zip(variables, kinds, strict=True))
        levels = {
            v: tuple(_config_list(config, f"levels.{v}", what))
            for v in variables
            if kind_of[v] in LEVELLED
        }
        sites = _config_list(config, "sites", what)
        return cls(
            variables=variables,
            kinds=kind_of,
            levels=levels,
            sites={s: tuple(_config_list(config, f"site_variables.{s}", what)) for s in sites},
            rows={s: int(_config_get(config, f"rows.{s}", what)) for s in sites},
        )


def require_kinds(
    schema: FederationSchema,
    allowed: Sequence[str],
    *,
    method: str,
    variables: Sequence[str] | None = None,
) -> None:
    """Check that every variable's kind is one a method can use.

    Parameters
    ----------
    schema
        The federation's schema.
    allowed
        The kinds the method handles (e.g. ``("continuous",)`` for a Fisher-z test).
    method
        The method's name, for the message.
    variables
        The variables to check (default: all of the schema's).

    Raises
    ------
    DataError
        Naming the first variable of another kind, its level names and the fix.
    """
    for v in schema.variables if variables is None else variables:
        kind = schema.kinds[v]
        if kind not in allowed:
            shown = list(schema.levels.get(v, ()))[:5]
            raise DataError(
                f"{method} needs {' or '.join(allowed)} variables, but {v!r} is {kind}"
                + (f" (levels {shown})" if shown else "")
                + f"; set --set kinds.{v}={allowed[0]} if its values are numbers, "
                "or leave it out"
            )


# -------------------------------------------------------------- reading files
def read_table(path: str | Path, *, delimiter: str | None = None) -> pd.DataFrame:
    """Read one site's table: delimited text (sniffed) or Parquet.

    Parameters
    ----------
    path
        A ``.parquet``/``.pq`` file, or delimited text, plain or ``.gz``/``.bz2``/``.xz``.
    delimiter
        The field delimiter (``"tab"`` and ``"\\t"`` mean a tab). By default ``.tsv`` and
        ``.tab`` files use tabs and other text files are sniffed from their head
        (``csv.Sniffer``, checked for a constant field count; else the one of
        ``, TAB ; |`` that splits every head line into the same number > 1 of fields).

    Returns
    -------
    pandas.DataFrame
        The rows, typed as ``pandas.read_csv`` types them over the whole file (missing
        values as NaN): integers (floats if a value is missing), floats, booleans (a
        ``category`` if a value is missing) and text as a ``category``. Text files are
        cut at line breaks into pieces of about 4 MB (more for more than 50 columns)
        that pandas' C parser reads in ``_THREADS`` threads (it releases the GIL while
        it parses), each piece copied into one array per column as soon as those before
        it are, so memory stays near the size of the result (pandas' own reader holds
        every piece and their concatenation: 2.4 x). A column with numbers in some
        pieces and text in others is text to pandas: the file is then read again with
        that column as text. pandas reads the whole file itself when a piece does not
        parse on its own: a row pandas rejects or reads otherwise (more fields than the
        header), or a cut inside a quoted field that spans lines.

    Raises
    ------
    DataError
        For a missing, unreadable or empty file, a header without rows, a header with
        duplicate or empty column names, or text that does not parse.
    """
    path = Path(path)
    _check_file(path)
    if _table_suffix(path) in _PARQUET:
        frame = _read_parquet(path)
    else:
        frame = _read_text(path, delimiter)
    if len(frame) == 0:
        raise DataError(f"file {path} has a header but no rows; add the site's rows")
    return frame


def _check_file(path: Path) -> None:
    if not path.exists():
        raise DataError(f"file {path} does not exist; check the path")
    require_regular_file(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a table file; give the file's path")
    try:
        size = path.stat().st_size
        with path.open("rb"):
            pass
    except OSError as exc:
        raise DataError(
            f"file {path} cannot be read ({exc.strerror}); check its permissions"
        ) from exc
    if size == 0:
        raise DataError(f"file {path} is empty; it needs a header row and at least one row")


def _table_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def site_name(path: str | Path) -> str:
    """A site's default name: its file's stem, without a compression suffix
    (``h1.csv.gz`` -> ``h1``; an image folder's name)."""
    path = Path(path)
    name = path.name
    if path.suffix.lower() in _COMPRESSED:
        name = name[: -len(path.suffix)]
    return Path(name).stem


def _read_parquet(path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DataError(f"file {path} is not a valid Parquet file: {_one_line(exc)}") from exc
    _check_header(names, path)
    return pd.read_parquet(path)


def _read_text(path: Path, delimiter: str | None) -> pd.DataFrame:
    lines = _head_lines(path)
    if not lines or not lines[0].strip():
        raise DataError(f"file {path} has no header row; its first line must name the columns")
    sep = _delimiter(path, lines, delimiter)
    header = next(csv.reader([lines[0]], delimiter=sep))
    _check_header(header, path)
    try:
        frame = _read_pieces(path, sep, header)
    except _PIECE_ERRORS:  # pandas reading the whole file decides (and names the error)
        frame = None
    try:
        return pd.read_csv(path, sep=sep) if frame is None else frame
    except _DECOMPRESS_ERRORS as exc:
        raise _damaged(path, exc) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"file {path} is not UTF-8 text; save it as UTF-8 CSV") from exc
    except pd.errors.EmptyDataError as exc:
        raise DataError(
            f"file {path} is empty; it needs a header row and at least one row"
        ) from exc
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(
            f"file {path} does not parse with delimiter {sep!r}: {_one_line(exc)}; "
            "fix the file or pass --set delimiter=..."
        ) from exc


class _PieceError(Exception):
    """A piece that pandas reads otherwise on its own than within the whole file."""


#: Errors reading pieces after which pandas reads the whole file: its parse errors,
#: UnicodeDecodeError and EmptyDataError (all ValueError), a bad compressed stream.
_PIECE_ERRORS = (_PieceError, ValueError, *_DECOMPRESS_ERRORS)


def _damaged(path: Path, exc: BaseException) -> DataError:
    """The error for a file whose bytes cannot be read or decompressed."""
    if path.suffix.lower() in _COMPRESSED:
        return DataError(
            f"file {path} is not a valid {path.suffix.lower()} file ({_one_line(exc)}); "
            "it may be cut short or damaged: compress it again, or give the uncompressed file"
        )
    return DataError(f"file {path} cannot be read: {_one_line(exc)}")


def _read_pieces(path: Path, sep: str, header: list[str]) -> pd.DataFrame:
    """The file's rows, parsed in pieces by ``_THREADS`` threads, typed over all of them.

    A column with numbers in some pieces and text in others is text to pandas, which
    types a column over the whole file: the file is then read again with that column
    as text.

    Raises
    ------
    _PieceError, pandas.errors.ParserError, UnicodeDecodeError, ...
        When pandas must read the whole file instead (``_PIECE_ERRORS``).
    """
    columns, n_rows = _gather_pieces(path, sep, header, frozenset())
    mixed = frozenset(name for name, column in zip(header, columns, strict=True) if column.mixed)
    if mixed:
        del columns
        columns, n_rows = _gather_pieces(path, sep, header, mixed)
    out = {name: column.result(n_rows) for name, column in zip(header, columns, strict=True)}
    return pd.DataFrame(out, copy=False)


def _gather_pieces(
    path: Path, sep: str, header: list[str], text: frozenset[str]
) -> tuple[list[_Gathered], int]:
    """Each column gathered over the pieces (``text`` columns read as text), and the
    number of rows. At most ``_AHEAD`` pieces are parsed or held at a time, enough
    that no thread waits while this one stores the oldest."""
    table = _Table(path, [_Gathered() for _ in header])
    with ThreadPoolExecutor(_THREADS) as pool:
        pending: deque[tuple[Future[list[_Piece]], int]] = deque()
        for k, (piece, n_bytes) in enumerate(_pieces(path, _piece_bytes(len(header)))):
            pending.append((pool.submit(_parse_piece, piece, sep, header, text, k == 0), n_bytes))
            if len(pending) >= _AHEAD:
                table.add(*pending.popleft())
        while pending:
            table.add(*pending.popleft())
    return table.columns, table.n_rows


@dataclass
class _Table:
    """The columns gathered so far, piece after piece, in file order."""

    path: Path
    columns: list[_Gathered]
    n_rows: int = 0
    capacity: int = 0

    def add(self, parsed: Future[list[_Piece]], n_bytes: int) -> None:
        """Store the next piece's columns (of ``n_bytes`` bytes of the file)."""
        piece = parsed.result()
        stop = self.n_rows + (piece[0].n if piece else 0)
        if not self.capacity:
            self.capacity = _row_estimate(self.path, n_bytes, stop)
        for column, values in zip(self.columns, piece, strict=True):
            column.add(values, self.n_rows, max(self.capacity, stop))
        self.n_rows = stop


def _row_estimate(path: Path, n_bytes: int, n_rows: int) -> int:
    """An uncompressed file's rows estimated from its first piece, plus a quarter (0
    if compressed). Arrays grow past it if needed; their room beyond the rows written
    is not resident."""
    if path.suffix.lower() in _COMPRESSED or not n_bytes:
        return 0
    return int(path.stat().st_size / n_bytes * n_rows * 1.25) + 1


def _piece_bytes(n_columns: int) -> int:
    """The size of a piece for a file of ``n_columns`` columns."""
    return max(_PIECE_BYTES, _PIECE_BYTES * n_columns // _PIECE_COLUMNS)


def _pieces(path: Path, size: int) -> Iterator[tuple[Callable[[], io.BytesIO], int]]:
    """The file in pieces of about ``size`` bytes cut at line breaks, the first with
    the header; each a function reading it (called in the thread that parses it) and
    its size.

    A cut inside a quoted field that spans lines ends its piece inside a string,
    which pandas rejects: the whole file is then read by pandas.
    """
    opener = _COMPRESSED.get(path.suffix.lower())
    if opener is not None:  # one stream: read here, piece by piece
        with opener(path, "rb") as stream:
            for data in _cut_stream(stream, size):
                yield functools.partial(io.BytesIO, data), len(data)
        return
    end = path.stat().st_size
    with path.open("rb") as stream:
        start = 0
        while start < end:
            stream.seek(start + size)
            stream.readline()
            stop = min(stream.tell(), end)
            yield functools.partial(_read_range, path, start, stop), stop - start
            start = stop


def _cut_stream(stream: Any, size: int) -> Iterator[bytes]:
    """A stream's bytes in pieces of about ``size`` bytes ending at a line break."""
    rest = b""
    while block := stream.read(size):
        data = rest + block
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        rest = data[cut:]
    if rest:
        yield rest


def _read_range(path: Path, start: int, stop: int) -> io.BytesIO:
    """A file's bytes from ``start`` to ``stop``."""
    with path.open("rb") as stream:
        stream.seek(start)
        return io.BytesIO(stream.read(stop - start))


@dataclass(frozen=True)
class _Piece:
    """One column of a piece: numbers, codes into ``levels`` (text, booleans), or
    ``n`` missing values."""

    n: int
    numbers: NDArray[Any] | None = None
    codes: NDArray[np.intp] | None = None
    levels: tuple[Any, ...] = ()


def _parse_piece(
    piece: Callable[[], io.BytesIO],
    sep: str,
    names: list[str],
    text: frozenset[str],
    first: bool,
) -> list[_Piece]:
    """A piece's columns as pandas reads them (run in a worker thread); the first
    piece holds the header, whose names must be ``names``."""
    with piece() as stream:
        frame = pd.read_csv(
            stream,
            sep=sep,
            header=0 if first else None,
            names=None if first else names,
            dtype=dict.fromkeys(text, str) or None,
            low_memory=False,
        )
    if list(frame.columns) != names:
        raise _PieceError("a header pandas reads otherwise")
    if not frame.index.equals(pd.RangeIndex(len(frame))):  # rows longer than the header
        raise _PieceError("rows longer than the header")
    return [_piece_column(column) for _, column in frame.items()]


def _piece_column(column: pd.Series) -> _Piece:
    """A piece's column: its numbers, or codes into its distinct values, or missing."""
    dtype = column.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iuf":
        values = column.to_numpy()
        if dtype.kind == "f" and len(values) and np.isnan(values[0]) and np.isnan(values).all():
            return _Piece(len(values))  # pandas reads a piece without values as floats
        return _Piece(len(values), numbers=values)
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    if len(uniques) == 0:
        return _Piece(len(codes))
    return _Piece(len(codes), codes=codes, levels=tuple(uniques))


@dataclass
class _Gathered:
    """One column gathered piece by piece into one array.

    Numbers in place (integers become floats when a piece has a missing value or a
    decimal, as pandas reads such a column); text and booleans as codes into
    ``levels`` (-1: missing). ``mixed`` once numbers and text met: pandas reads
    that column as text.
    """

    values: NDArray[Any] | None = None
    levels: dict[Any, int] = field(default_factory=dict)
    coded: bool = False
    mixed: bool = False

    def add(self, piece: _Piece, start: int, capacity: int) -> None:
        """Store a piece's values from row ``start``."""
        if self.mixed or not piece.n:  # a piece of blank lines types nothing
            return
        if piece.numbers is not None:
            if self.coded:
                self.mixed = True
                return
            self._put(piece.numbers, start, capacity)
        elif piece.codes is not None:
            if self.values is not None and not self.coded:
                self.mixed = True
                return
            self.coded = True
            lookup = [self.levels.setdefault(v, len(self.levels)) for v in piece.levels]
            self._put(np.array([*lookup, -1], dtype=np.int32)[piece.codes], start, capacity)
        elif self.coded:
            self._put(np.full(piece.n, -1, dtype=np.int32), start, capacity)
        elif self.values is not None:  # integers become floats, as pandas reads them
            self._put(np.full(piece.n, np.nan), start, capacity)

    def _put(self, values: NDArray[Any], start: int, capacity: int) -> None:
        """Write ``values`` from row ``start``, growing or widening the array first if
        needed (rows before a first value are missing: NaN, or code -1)."""
        stop = start + len(values)
        if (
            self.values is not None
            and self.values.dtype == values.dtype
            and len(self.values) >= stop
        ):
            # a plain copy that keeps the GIL: numpy's releases it and then queues
            # for it behind the parsing threads, once per column and piece
            size = values.itemsize
            target = memoryview(self.values).cast("B")[start * size : stop * size]
            target[:] = memoryview(np.ascontiguousarray(values)).cast("B")
            return
        dtype = values.dtype
        if self.values is not None:
            dtype = np.result_type(dtype, self.values.dtype)
        elif start:  # the rows before were all missing
            dtype = np.dtype(np.int32) if values.dtype == np.int32 else np.dtype(np.float64)
        fresh = self.values is None
        self.values = _room(self.values, capacity, dtype, start)
        if fresh and start:
            self.values[:start] = -1 if dtype == np.int32 else np.nan
        self.values[start : start + len(values)] = values

    def result(self, n_rows: int) -> Any:
        """The column: numbers, booleans, a ``category`` of the levels, or floats if
        every value is missing."""
        if self.values is None:
            return np.full(n_rows, np.nan)
        values = self.values[:n_rows]
        if not self.coded:
            return values
        levels = list(self.levels)
        if all(isinstance(v, bool | np.bool_) for v in levels) and values.min() >= 0:
            return np.array(levels, dtype=bool)[values]
        return pd.Categorical.from_codes(values, categories=levels)


def _room(array: NDArray[Any] | None, capacity: int, dtype: np.dtype, filled: int) -> NDArray[Any]:
    """``array`` with room for ``capacity`` rows of ``dtype`` (its ``filled`` rows kept)."""
    if array is not None and len(array) >= capacity and array.dtype == dtype:
        return array
    size = capacity if array is None else max(capacity, min(2 * len(array), 2 * capacity))
    grown = np.empty(size, dtype)
    if array is not None:
        grown[:filled] = array[:filled]
    return grown


def _release_freed_memory() -> None:
    """Give freed buffers back to the system (glibc keeps them for reuse).

    Called after a site's table is freed, before its encoded rows become a
    ``ClientData``. A no-op where the C library has no ``malloc_trim``.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):
        pass


def _head_lines(path: Path) -> list[str]:
    opener = _COMPRESSED.get(path.suffix.lower(), open)
    try:
        with opener(path, "rb") as stream:
            head = stream.read(_HEAD_BYTES)
    except _DECOMPRESS_ERRORS as exc:
        raise _damaged(path, exc) from exc
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if len(head) < _HEAD_BYTES or exc.start < len(head) - 3:  # not a character cut
            raise DataError(f"file {path} is not UTF-8 text; save it as UTF-8 CSV") from exc
        text = head[: exc.start].decode("utf-8-sig")
    lines = text.splitlines()
    if len(head) == _HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    return lines[:_HEAD_LINES]


def _delimiter(path: Path, lines: list[str], delimiter: str | None) -> str:
    if delimiter is not None:
        sep = _DELIMITER_NAMES.get(delimiter, delimiter)
        if len(sep) != 1:
            raise ConfigError(
                f"delimiter must be one character (or 'tab'), got {delimiter!r}; "
                "e.g. --set delimiter=';'"
            )
        return sep
    if _table_suffix(path) in (".tsv", ".tab"):
        return "\t"
    rows = [line for line in lines if line.strip()]
    try:
        sniffed = csv.Sniffer().sniff("\n".join(rows), delimiters=_DELIMITERS).delimiter
    except csv.Error:
        sniffed = None
    if sniffed is not None and _constant_fields(rows, sniffed) > 1:
        return sniffed
    best = max(_DELIMITERS, key=lambda sep: _constant_fields(rows, sep))
    return best if _constant_fields(rows, best) > 1 else ","


def _constant_fields(lines: list[str], sep: str) -> int:
    """The number of fields every line has with ``sep``, or 0 if they differ."""
    counts = {len(row) for row in csv.reader(lines, delimiter=sep)}
    return counts.pop() if len(counts) == 1 else 0


def _check_header(names: Sequence[Any], path: Path) -> None:
    for j, name in enumerate(names):
        if not str(name).strip():
            raise DataError(f"file {path}: column {j + 1} of the header has no name; name it")
    seen: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in seen:
            raise DataError(
                f"file {path}: column name {name!r} appears twice in the header "
                f"(columns {seen[name] + 1} and {j + 1}); rename one"
            )
        seen[name] = j


# ------------------------------------------------------------------- kinds
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
    return _kinds_of(frame, columns, overrides, max_levels, lambda col: frame[col].nunique())


def _kinds_of(
    frame: pd.DataFrame,
    columns: Sequence[str],
    overrides: Mapping[str, str],
    max_levels: int,
    n_distinct: Callable[[str], int],
) -> dict[str, str]:
    for col, kind in overrides.items():
        if col not in columns:
            raise UnknownVariableError(
                f"kinds names column {col!r}, which the table does not have; "
                f"its columns are {list(columns)}"
            )
        _check_kind(kind, col)
    return {
        col: overrides.get(col) or _infer_kind(frame[col], max_levels, n_distinct)
        for col in columns
    }


def _infer_kind(column: pd.Series, max_levels: int, n_distinct: Callable[[str], int]) -> str:
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
    if column.hasnans:  # pandas reads an integer column with missing values as floats
        values = column.dropna().to_numpy(dtype=np.float64)
        integral = values.size and np.array_equal(values, np.floor(values))
        if integral and pd.unique(values).size <= max_levels:
            return "categorical"
    return "continuous"


def _check_kind(kind: str, column: str) -> None:
    if kind not in KINDS:
        raise ConfigError(
            f"column {column!r}: unknown kind {kind!r}; valid kinds: {', '.join(KINDS)}"
        )


# -------------------------------------------------------- one site's table
@dataclass
class _Site:
    """A site's table with its categorical columns factorised once (codes + level names)."""

    name: str
    frame: pd.DataFrame
    path: Path | None = None
    factors: dict[str, tuple[NDArray[np.integer], list[str]]] = field(default_factory=dict)
    isna: dict[str, NDArray[np.bool_]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"site {self.name!r}" + (f" (file {self.path})" if self.path else "")

    def factor(self, col: str) -> tuple[NDArray[np.integer], list[str]]:
        """Codes into the column's distinct values (-1 = missing) and their level names."""
        if col not in self.factors:
            self.factors[col] = _factorize(self.frame[col])
        return self.factors[col]

    def missing(self, col: str) -> NDArray[np.bool_]:
        """Which rows miss a value of ``col`` (computed once)."""
        if col not in self.isna:
            self.isna[col] = self.frame[col].isna().to_numpy()
        return self.isna[col]

    def schema(self, kinds: Mapping[str, str]) -> SiteSchema:
        columns = []
        for col in self.frame.columns:
            if col not in kinds:
                continue
            kind = kinds[col]
            _check_kind(kind, col)
            levels: tuple[str, ...] = ()
            if kind in LEVELLED:
                levels = _sorted_levels(self.factor(col)[1])
                if not levels:
                    raise self.all_missing(col)
            elif self.missing(col).all():
                raise self.all_missing(col)
            columns.append(ColumnSchema(col, kind, levels))
        return SiteSchema(self.name, len(self.frame), tuple(columns))

    def all_missing(self, col: str) -> DataError:
        return DataError(
            f"column {col!r} of {self.where} has no values (all {len(self.frame)} missing); "
            "fill it or remove the column"
        )


def _factorize(column: pd.Series) -> tuple[NDArray[np.integer], list[str]]:
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    names = [_level_name(v) for v in uniques]
    if len(names) < 2**15:  # small codes keep the cache small; -1 still means missing
        codes = codes.astype(np.int16 if len(names) >= 127 else np.int8)
    return codes, names


def _level_name(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, float | np.floating) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


def _as_number(level: str) -> float | None:
    try:
        return float(level)
    except ValueError:
        return None


def _sorted_levels(levels: Sequence[str]) -> tuple[str, ...]:
    """Numerically when every level parses as a number, else lexicographically."""
    unique = set(levels)
    numbers = {level: _as_number(level) for level in unique}
    if all(x is not None and not math.isnan(x) for x in numbers.values()):
        return tuple(sorted(unique, key=lambda level: (numbers[level], level)))
    return tuple(sorted(unique))


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
    table = _site_table(site, frame, None)
    unknown = [c for c in frame.columns if c != regime and c not in kinds]
    if unknown:
        raise UnknownVariableError(
            f"site {site!r}: columns {unknown} have no kind; give kinds for every column"
        )
    return table.schema({c: k for c, k in kinds.items() if c != regime})


def _site_table(site: str, frame: pd.DataFrame, path: Path | None) -> _Site:
    if not isinstance(site, str) or not site:
        raise DataError(f"a site's name must be a non-empty string, got {site!r}")
    _check_unique([str(c) for c in frame.columns], f"site {site!r}")
    return _Site(site, frame, path)


def _check_unique(names: Sequence[str], owner: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise DataError(f"{owner}: column name {name!r} appears twice; rename one")
        seen.add(name)


# --------------------------------------------------------------- merging
def merge_schemas(
    schemas: Sequence[SiteSchema], kinds: Mapping[str, str] | None = None
) -> FederationSchema:
    """Join every site's schema into one codebook.

    Parameters
    ----------
    schemas
        One per site.
    kinds
        Variable -> kind set by the user; these win. A variable set categorical or
        ordinal must have been read so at every site that has it (its levels are
        needed); one set continuous must have numeric levels wherever it was read as
        categorical.

    Returns
    -------
    FederationSchema
        Variables in first-seen order; levels the union over the sites, sorted
        numerically if every level is a number, else lexicographically. A variable
        categorical with numeric levels at some sites and continuous at the others is
        continuous.

    Raises
    ------
    DataError
        For no sites, two sites of the same name, or kinds that disagree otherwise
        (naming both sites and the fix).
    UnknownVariableError
        If ``kinds`` names a variable no site has.
    """
    if not schemas:
        raise DataError("a federation needs at least one site")
    names = [s.site for s in schemas]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"site names must be unique; repeated: {repeated}")
    columns: dict[str, dict[str, ColumnSchema]] = {}
    for s in schemas:
        for c in s.columns:
            columns.setdefault(c.name, {})[s.site] = c
    explicit = dict(kinds or {})
    unknown = [v for v in explicit if v not in columns]
    if unknown:
        raise UnknownVariableError(
            f"kinds names {unknown}, which no site has; the variables are {list(columns)}"
        )
    kind_of = {v: _merged_kind(v, by_site, explicit.get(v)) for v, by_site in columns.items()}
    for v, by_site in columns.items():
        if kind_of[v] in LEVELLED:
            _warn_disjoint_levels(v, by_site)
    return FederationSchema(
        variables=tuple(columns),
        kinds=kind_of,
        levels={
            v: _sorted_levels([lv for c in columns[v].values() for lv in c.levels])
            for v in columns
            if kind_of[v] in LEVELLED
        },
        sites={s.site: s.names for s in schemas},
        rows={s.site: int(s.n_rows) for s in schemas},
    )


def _warn_disjoint_levels(variable: str, by_site: Mapping[str, ColumnSchema]) -> None:
    """Warn when two sites share no level of ``variable`` (the first such pair):
    ``yes``/``no`` at one and ``1``/``0`` at the other would merge into 4 levels."""
    items = [(site, frozenset(c.levels)) for site, c in by_site.items()]
    for i, (site_a, a) in enumerate(items):
        for site_b, b in items[i + 1 :]:
            if a.isdisjoint(b):
                shown = [_sorted_levels(list(levels))[:5] for levels in (a, b)]
                warnings.warn(
                    f"column {variable!r}: sites {site_a!r} (levels {list(shown[0])}) and "
                    f"{site_b!r} (levels {list(shown[1])}) share no level, so the codebook "
                    f"holds both sets; if they code the same values differently (yes/no and "
                    "1/0), recode one site's file",
                    FedstructWarning,
                    stacklevel=2,
                )
                return


def _merged_kind(variable: str, by_site: Mapping[str, ColumnSchema], explicit: str | None) -> str:
    if explicit is not None:
        _check_kind(explicit, variable)
        for site, c in by_site.items():
            _check_readable_as(variable, site, c, explicit)
        return explicit
    kinds = {c.kind for c in by_site.values()}
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"categorical", "continuous"} and all(
        _all_numeric(c.levels) for c in by_site.values() if c.kind == "categorical"
    ):
        return "continuous"
    (site_a, a), (site_b, b) = _two_disagreeing(by_site)
    raise DataError(
        f"column {variable!r} is {a.kind} at site {site_a!r} and {b.kind} at site "
        f"{site_b!r}; give it one kind for every site, e.g. --set kinds.{variable}={a.kind}"
    )


def _check_readable_as(variable: str, site: str, column: ColumnSchema, kind: str) -> None:
    if kind in LEVELLED and column.kind == "continuous":
        raise DataError(
            f"column {variable!r} of site {site!r} was read as continuous, so it reported no "
            f"levels; read every site with kinds {variable}={kind}"
        )
    if kind == "continuous" and not _all_numeric(column.levels):
        raise DataError(
            f"column {variable!r} of site {site!r} holds text levels "
            f"{list(column.levels)[:5]}, so it cannot be continuous; fix the values or "
            f"set kinds.{variable}=categorical"
        )


def _two_disagreeing(
    by_site: Mapping[str, ColumnSchema],
) -> tuple[tuple[str, ColumnSchema], tuple[str, ColumnSchema]]:
    items = list(by_site.items())
    first = items[0]
    second = next(item for item in items if item[1].kind != first[1].kind)
    return first, second


def _all_numeric(levels: Sequence[str]) -> bool:
    return all(_as_number(level) is not None for level in levels)


# --------------------------------------------------------------- encoding
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
        ``"error"`` or ``"drop-rows"``.
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
        Missing values (with ``missing="error"``), a column all missing, text in a
        continuous column, a level the codebook lacks.
    SampleSizeError
        Fewer than ``min_rows`` rows.
    UnknownVariableError
        A column not in the schema, a supervised or regime column the site lacks, or a
        regime value naming no column of the site.
    ConfigError
        An unknown ``missing`` mode.
    """
    table = _site_table(site, frame, None if source is None else Path(source))
    encoded = _encode(table, schema, missing, regime, tuple(supervised), min_rows)
    return encoded.build()


@dataclass
class _Encoded:
    """Encoded columns before they become a ClientData (lets a reader free its table)."""

    site: str
    columns: dict[str, NDArray[Any]]
    supervised: tuple[str, ...]
    intervention: NDArray[np.int64] | None
    dropped_rows: int
    constant: tuple[str, ...]

    def build(self) -> EncodedSite:
        rows = pd.DataFrame(self.columns, copy=False)
        self.columns = {}
        client = ClientData(self.site, rows, self.supervised, self.intervention)
        return EncodedSite(client, self.dropped_rows, self.constant)


def _encode(
    table: _Site,
    schema: FederationSchema,
    missing: str,
    regime: str | None,
    supervised: tuple[str, ...],
    min_rows: int,
) -> _Encoded:
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
    return _Encoded(
        table.name, columns, supervised, intervention, len(frame) - n_kept, tuple(constant)
    )


def _check_variables(
    table: _Site, variables: list[str], schema: FederationSchema, supervised: tuple[str, ...]
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
    table: _Site, variables: list[str], labels: set[str], missing: str
) -> NDArray[np.bool_] | None:
    """Rows without missing values (None: all of them); raises for missing="error"."""
    frame = table.frame
    bad: NDArray[np.bool_] | None = None
    for col in variables:
        isna = table.isna.pop(col, None)
        if isna is None:
            isna = frame[col].isna().to_numpy()
        count = int(isna.sum())
        if count == len(frame):
            raise table.all_missing(col)
        if count == 0 or col in labels:
            continue
        if missing == "error":
            raise DataError(
                f"{count} missing values in column {col!r} of {table.where}; "
                "fill them, or pass --set missing=drop-rows"
            )
        bad = isna if bad is None else bad | isna
    return None if bad is None else ~bad


def _encode_column(table: _Site, col: str, schema: FederationSchema) -> NDArray[Any]:
    kind = schema.kinds[col]
    if kind in LEVELLED:
        codes, names = table.factors.pop(col, None) or _factorize(table.frame[col])
        book = schema.codebook(col)
        absent = [n for n in names if n not in book]
        if absent:
            known = list(book)
            raise DataError(
                f"column {col!r} of {table.where} has levels {absent[:5]} that the run's "
                f"sites never had (its levels: {known[:10]}{' ...' if len(known) > 10 else ''})"
                "; drop or recode those rows, or train again with sites that have them"
            )
        lookup = np.array([book[n] for n in names] + [-1], dtype=np.int64)
        return lookup[codes]
    column = table.frame[col]
    if pd.api.types.is_bool_dtype(column.dtype) or not pd.api.types.is_numeric_dtype(column.dtype):
        text = column.dropna().iloc[:1].tolist()
        raise DataError(
            f"column {col!r} of {table.where} holds text (e.g. {text[0]!r}) but is "
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


def _is_constant(values: NDArray[Any]) -> bool:
    """Whether a column holds one value (codes: ignoring -1, a missing label)."""
    low, high = values.min(), values.max()
    if low == high:
        return True
    if values.dtype.kind == "i" and low < 0:
        valid = values[values >= 0]
        return valid.size == 0 or bool(valid.min() == valid.max())
    return False


def _regime_codes(
    table: _Site, regime: str, variables: list[str], keep: NDArray[np.bool_] | None
) -> NDArray[np.int64]:
    column = table.frame[regime]
    if keep is not None:
        column = column[keep]
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    position = {v: j for j, v in enumerate(variables)}
    lookup = []
    for value in uniques:
        name = _level_name(value).strip()
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


# --------------------------------------------------------------- one file
def read_site(
    path: str | Path,
    *,
    name: str | None = None,
    kinds: Mapping[str, str] | None = None,
    missing: str = "error",
    delimiter: str | None = None,
    regime: str | None = None,
    supervised: Sequence[str] = (),
    schema: FederationSchema | None = None,
    min_rows: int = 1,
) -> ClientData:
    """Read one site's file as a client.

    Parameters
    ----------
    path
        The site's file (see :func:`read_table`).
    name
        The client's name; default the file's stem.
    kinds
        Column -> kind overrides (see :func:`infer_kinds`); ignored with ``schema``.
    missing, regime, supervised, min_rows
        As for :func:`encode_site`.
    delimiter
        As for :func:`read_table`.
    schema
        Encode with this federation schema; by default the file's own codebook.

    Returns
    -------
    ClientData
        Dropped rows (``missing="drop-rows"``) are logged at WARNING level.
    """
    path = Path(path)
    site = name or site_name(path)
    table = _site_table(site, read_table(path, delimiter=delimiter), path)
    if schema is None:
        kinds_of = _site_kinds(table, kinds, regime)
        schema = merge_schemas([table.schema(kinds_of)])
    encoded = _encode(table, schema, missing, regime, tuple(supervised), min_rows)
    del table
    _release_freed_memory()
    _log_dropped(site, path, encoded.dropped_rows)
    return encoded.build().client


def _site_kinds(
    table: _Site, kinds: Mapping[str, str] | None, regime: str | None
) -> dict[str, str]:
    columns = [c for c in table.frame.columns if c != regime]

    def n_distinct(col: str) -> int:  # factorised once: the schema needs the levels anyway
        return len(table.factor(col)[1])

    try:
        kinds_of = _kinds_of(table.frame, columns, dict(kinds or {}), 10, n_distinct)
    except UnknownVariableError as exc:
        raise UnknownVariableError(f"{table.where}: {exc}") from exc
    except DataError as exc:
        raise DataError(f"{table.where}: {exc}") from exc
    for col, kind in kinds_of.items():
        if kind == "continuous":
            table.factors.pop(col, None)
    return kinds_of


def _log_dropped(site: str, path: Path | None, dropped: int) -> None:
    if dropped:
        where = f" (file {path})" if path else ""
        logger.warning("site %r%s: dropped %d rows with missing values", site, where, dropped)


# ------------------------------------------------------------- manifests
@dataclass(frozen=True)
class SiteSpec:
    """One site of a federation: its name, its file and its own options.

    Parameters
    ----------
    name
        The site's name.
    path
        Its table file.
    options
        Per-site options from a manifest: ``kinds``, ``graph`` (a resolved path
        string), ``regime``, ``supervised``.
    """

    name: str
    path: Path
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """A federation manifest: the sites and the options for all of them.

    Parameters
    ----------
    sites
        One :class:`SiteSpec` per site.
    options
        Top-level options (``kinds``, ``missing``, ``delimiter``, ``regime``,
        ``supervised``) and method roles (:data:`ROLE_KEYS`; ``truth`` resolved).
    path
        The manifest file, named in messages.
    """

    sites: tuple[SiteSpec, ...]
    options: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def read_manifest(path: str | Path) -> Manifest:
    """Read a YAML or JSON federation manifest (format in the module docstring).

    Raises
    ------
    DataError
        If the manifest file is missing or unreadable.
    ConfigError
        For invalid YAML/JSON, an unknown key (naming it, the file and the valid keys),
        a missing or malformed value, or two sites of the same name.
    """
    path = Path(path)
    require_regular_file(path, "manifest")
    if not path.is_file():
        raise DataError(f"manifest {path} does not exist; check the path given to --sites")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"manifest {path} is not readable YAML/JSON: {_one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"manifest {path} must be a mapping with a 'sites' list")
    _check_keys(data, MANIFEST_KEYS, f"manifest {path}")
    entries = data.get("sites")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"manifest {path}: 'sites' must be a non-empty list of sites")
    folder = path.parent
    sites = tuple(_site_spec(entry, j, folder, path) for j, entry in enumerate(entries))
    _check_site_names(sites)
    options = _options(data, f"manifest {path}")
    if "truth" in options:
        options["truth"] = str(_resolve(options["truth"], folder))
    return Manifest(sites, options, path)


def _site_spec(entry: Any, index: int, folder: Path, manifest: Path) -> SiteSpec:
    if isinstance(entry, str):
        entry = {"path": entry}
    what = f"site {index + 1} of manifest {manifest}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{what} must be a mapping with a 'path' (or a path string)")
    _check_keys(entry, SITE_KEYS, what)
    if not isinstance(entry.get("path"), str) or not entry["path"]:
        raise ConfigError(f"{what} needs a 'path' to its table file")
    file = _resolve(entry["path"], folder)
    name = entry.get("name", site_name(file))
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what}: 'name' must be a non-empty string")
    options = _options({k: v for k, v in entry.items() if k not in ("path", "name")}, what)
    if "graph" in options:
        options["graph"] = str(_resolve(options["graph"], folder))
    return SiteSpec(name, file, options)


def _options(data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Validate option values (all keys known already)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "sites":
            continue
        if key == "kinds":
            if not isinstance(value, dict):
                raise ConfigError(f"{what}: 'kinds' must be a mapping COLUMN: KIND")
            for col, kind in value.items():
                _check_kind(kind, str(col))
            out[key] = {str(col): kind for col, kind in value.items()}
        elif key == "missing":
            if value not in MISSING:
                raise ConfigError(f"{what}: missing must be one of {', '.join(MISSING)}")
            out[key] = value
        elif key in ("supervised", "inputs", "concepts"):
            out[key] = _names(value, key, what)
        elif key in LIMIT_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{what}: {key!r} must be a positive integer, got {value!r}")
            out[key] = value
        else:
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{what}: {key!r} must be a non-empty string")
            out[key] = value
    return out


def _names(value: Any, key: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{what}: {key!r} must be a column name or a list of names")


def _check_keys(data: Mapping[str, Any], valid: Sequence[str], what: str) -> None:
    for key in data:
        if key not in valid:
            raise ConfigError(f"unknown key {key!r} in {what}; valid keys: {', '.join(valid)}")


def _resolve(value: str, folder: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else folder / path


def _check_site_names(sites: Sequence[SiteSpec]) -> None:
    seen: dict[str, Path] = {}
    for s in sites:
        if s.name in seen:
            raise ConfigError(
                f"two sites are named {s.name!r} ({seen[s.name]} and {s.path}); "
                "give them distinct names (NAME=PATH, or name: in a manifest)"
            )
        seen[s.name] = s.path


def parse_site_args(items: Sequence[str]) -> tuple[SiteSpec, ...]:
    """Sites from ``--site`` arguments: ``PATH`` or ``NAME=PATH``.

    The name defaults to the file's stem (``h1.csv.gz`` -> ``h1``).

    Raises
    ------
    ConfigError
        For an empty name or path, or two sites of the same name.
    """
    specs = []
    for item in items:
        name, sep, rest = item.partition("=")
        if not sep or "/" in name or "\\" in name:  # PATH alone, or an '=' inside a path
            name, rest = "", item
        elif not name.strip():
            raise ConfigError(f"--site {item!r} has an empty name; write NAME=PATH or PATH")
        if not rest.strip():
            raise ConfigError(f"--site {item!r} has no path; write NAME=PATH or PATH")
        path = Path(rest).expanduser()
        specs.append(SiteSpec(name or site_name(path), path, {}))
    _check_site_names(specs)
    return tuple(specs)


# ------------------------------------------------------------- federations
@dataclass(frozen=True)
class SiteFederation:
    """Every site's file read with one codebook.

    Parameters
    ----------
    clients
        One client per site, in the given order.
    schema
        The federation schema (the codebook).
    dropped_rows
        Site -> rows dropped for missing values.
    constant
        Site -> columns with a single value there.
    roles
        The manifest's method roles (``target``, ``label``, ``inputs``, ``concepts``,
        ``task``, ``truth``) and ``graphs`` (site -> its graph file) if any site has one.
    """

    clients: list[ClientData]
    schema: FederationSchema
    dropped_rows: dict[str, int]
    constant: dict[str, tuple[str, ...]]
    roles: dict[str, Any]


def read_federation(
    source: str | Path | Manifest | Sequence[str | Path],
    *,
    kinds: Mapping[str, str] | None = None,
    missing: str | None = None,
    delimiter: str | None = None,
    regime: str | None = None,
    supervised: Sequence[str] = (),
    min_rows: int = 1,
    schema: FederationSchema | None = None,
    min_site_rows: int | None = None,
    max_site_levels: int | None = None,
) -> SiteFederation:
    """Read every site's file and encode them with one federation codebook.

    Parameters
    ----------
    source
        A manifest path (``.yaml``, ``.yml`` or ``.json``), a :class:`Manifest`, a list
        of ``PATH`` / ``NAME=PATH`` strings, or one table file's path.
    kinds
        Column -> kind for every site; over the manifest's ``kinds``, under a site's.
    missing, delimiter, regime
        Override the manifest's (defaults: ``"error"``, sniffed, none). A top-level
        regime column applies to the sites that have it (and must exist at one).
    supervised
        Columns supervised at every site that has them (over the manifest's); each
        must exist at some site.
    min_rows
        The fewest rows a site may hold after dropping rows.
    schema
        The federation's codebook, merged elsewhere from every site's
        :func:`describe_site` (a deployment, where each node reads only its own file):
        ``source`` then names the sites read here, encoded with it.
    min_site_rows, max_site_levels
        What a site's schema may disclose (:class:`SchemaLimits`): over the
        manifest's keys of the same names; defaults :data:`MIN_SITE_ROWS` and
        :data:`MAX_SITE_LEVELS`.

    Raises
    ------
    DataError
        A site's file is missing (naming the site and the manifest) or bad (see
        :func:`read_table`, :func:`merge_schemas`, :func:`encode_site`), or its schema
        would disclose too much (:meth:`SchemaLimits.check`).
    """
    manifest = _as_manifest(source)
    opts = manifest.options
    settings = {
        "kinds": {**opts.get("kinds", {}), **dict(kinds or {})},
        "missing": missing or opts.get("missing", "error"),
        "delimiter": delimiter or opts.get("delimiter"),
        "regime": regime or opts.get("regime"),
        "supervised": tuple(supervised) or opts.get("supervised", ()),
    }
    limits = SchemaLimits.of(min_site_rows, max_site_levels, opts)
    tables = [_read_spec(spec, manifest, settings) for spec in manifest.sites]
    if schema is None:
        schemas = [_limited_schema(t, k, limits) for t, k, _, _ in tables]
        schema = merge_schemas(schemas, _declared_kinds(manifest, settings["kinds"]))
        check_roles(
            schema,
            regime=settings["regime"],
            regime_sites=[t.name for t, _, r, _ in tables if r == settings["regime"]],
            supervised=settings["supervised"],
        )
    clients, dropped, constant = [], {}, {}
    while tables:
        table, _, site_regime, site_supervised = tables.pop(0)
        encoded = _encode(
            table, schema, settings["missing"], site_regime, site_supervised, min_rows
        )
        del table
        _release_freed_memory()
        _log_dropped(encoded.site, _spec_path(manifest, encoded.site), encoded.dropped_rows)
        built = encoded.build()
        clients.append(built.client)
        dropped[encoded.site] = built.dropped_rows
        constant[encoded.site] = built.constant
    return SiteFederation(clients, schema, dropped, constant, _roles(manifest))


def _limited_schema(table: _Site, kinds: Mapping[str, str], limits: SchemaLimits) -> SiteSchema:
    """The site's schema, refused if it discloses more than ``limits`` allow."""
    schema = table.schema(kinds)
    limits.check_schema(schema, f" (file {table.path})" if table.path else "")
    return schema


def _as_manifest(source: str | Path | Manifest | Sequence[str | Path]) -> Manifest:
    if isinstance(source, Manifest):
        return source
    if isinstance(source, str | Path):
        if Path(source).suffix.lower() in (".yaml", ".yml", ".json"):
            return read_manifest(source)
        return Manifest(parse_site_args([str(source)]))  # one table file
    specs = parse_site_args([str(s) for s in source])
    if not specs:
        raise ConfigError("a federation needs at least one site; give --site FILE or --sites")
    return Manifest(specs)


def _read_spec(
    spec: SiteSpec, manifest: Manifest, settings: Mapping[str, Any]
) -> tuple[_Site, dict[str, str], str | None, tuple[str, ...]]:
    if not spec.path.exists():
        where = f" of manifest {manifest.path}" if manifest.path else ""
        raise DataError(f"site {spec.name!r}{where}: file {spec.path} does not exist; fix its path")
    frame = read_table(spec.path, delimiter=settings["delimiter"])
    table = _site_table(spec.name, frame, spec.path)
    columns = set(table.frame.columns)
    site_regime = spec.options.get("regime")
    if site_regime is None and settings["regime"] in columns:
        site_regime = settings["regime"]
    overrides = {c: k for c, k in settings["kinds"].items() if c in columns}
    overrides.update(spec.options.get("kinds", {}))
    kinds = _site_kinds(table, overrides, site_regime)
    wanted = spec.options.get("supervised", ())
    supervised = tuple(
        dict.fromkeys([*wanted, *(v for v in settings["supervised"] if v in columns)])
    )
    return table, kinds, site_regime, supervised


def _declared_kinds(manifest: Manifest, kinds: Mapping[str, str]) -> dict[str, str]:
    """The user's kinds: every site's, which must agree, then the common ones."""
    declared: dict[str, tuple[str, str]] = {}
    for spec in manifest.sites:
        for col, kind in spec.options.get("kinds", {}).items():
            if col in declared and declared[col][0] != kind:
                other_kind, other = declared[col]
                raise DataError(
                    f"column {col!r} is declared {other_kind} at site {other!r} and {kind} at "
                    f"site {spec.name!r}; give it one kind, e.g. --set kinds.{col}={kind}"
                )
            declared[col] = (kind, spec.name)
    out = {col: kind for col, (kind, _) in declared.items()}
    return {**out, **{c: k for c, k in kinds.items() if c not in out}}


def check_roles(
    schema: FederationSchema,
    *,
    regime: str | None,
    regime_sites: Sequence[str],
    supervised: Sequence[str],
) -> None:
    """Check that the roles given for every site name columns some site has.

    Parameters
    ----------
    schema
        The merged schema.
    regime
        The regime column named for every site, if any.
    regime_sites
        The sites whose files have it.
    supervised
        The columns named supervised at every site.

    Raises
    ------
    UnknownVariableError
        If no site has the regime column or a supervised column.
    """
    if regime is not None and not regime_sites:
        raise UnknownVariableError(
            f"no site has the regime column {regime!r}; fix its name (--set regime=...)"
        )
    absent = [v for v in supervised if v not in schema.kinds]
    if absent:
        raise UnknownVariableError(
            f"supervised names {absent}, which no site has; the variables are "
            f"{list(schema.variables)}"
        )


def describe_site(
    spec: SiteSpec,
    *,
    kinds: Mapping[str, str] | None = None,
    delimiter: str | None = None,
    regime: str | None = None,
    limits: SchemaLimits | None = None,
) -> tuple[SiteSchema, str | None]:
    """What one site reports of its file (the first pass of :func:`read_federation`,
    run where the file lies): its schema, and its regime column.

    Parameters
    ----------
    spec
        The site (its name, file and per-site options).
    kinds
        Column -> kind for every site (those the file has apply).
    delimiter
        As for :func:`read_table`.
    regime
        The regime column named for every site (used if the file has it).
    limits
        What the schema may disclose (default: :class:`SchemaLimits`' defaults).

    Returns
    -------
    tuple
        The :class:`SiteSchema` (metadata only) and the regime column the site has
        (``None`` if it has none).

    Raises
    ------
    DataError
        As :func:`read_federation` for this site's file, or if its schema would
        disclose more than ``limits`` allow.
    """
    settings = {"kinds": dict(kinds or {}), "delimiter": delimiter, "regime": regime,
                "supervised": ()}  # fmt: skip
    table, kinds_of, site_regime, _ = _read_spec(spec, Manifest((spec,)), settings)
    return _limited_schema(table, kinds_of, limits or SchemaLimits()), site_regime


def _spec_path(manifest: Manifest, site: str) -> Path | None:
    return next((s.path for s in manifest.sites if s.name == site), None)


def _roles(manifest: Manifest) -> dict[str, Any]:
    roles = {k: v for k, v in manifest.options.items() if k in ROLE_KEYS}
    graphs = {s.name: s.options["graph"] for s in manifest.sites if "graph" in s.options}
    if graphs:
        roles["graphs"] = graphs
    return roles


def _config_get(config: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in config:
        raise ConfigError(f"{what}: key {key!r} is missing")
    return config[key]


def _config_list(config: Mapping[str, Any], key: str, what: str) -> list[str]:
    value = _config_get(config, key, what)
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{what}: {key!r} must be a list")
    return [str(v) for v in value]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
