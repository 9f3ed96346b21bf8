"""One site's table file read into a pandas frame (:func:`read_table`).

Delimited text (CSV, TSV, any delimiter; sniffed from the file's head unless given),
plain or ``.gz``/``.bz2``/``.xz``, is read by pandas' C parser (``pandas.read_csv``),
so it is typed as pandas types it; Parquet (``.parquet``/``.pq``) by pyarrow. A text
row that does not split into the header's columns (a file mixing ``,`` and ``;`` rows)
is refused naming its line, and column names and text values are put in Unicode's
normal form C (NFC: ``smöke`` typed as ``o`` plus a combining diaeresis is the same
column and level as ``smöke`` typed with ``ö``). Every problem is a one-line
:class:`~fedstruct.errors.DataError` naming the file.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import sys
import unicodedata
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.data.checks import require_regular_file
from fedstruct.errors import ConfigError, DataError

_PARQUET = (".parquet", ".pq")
_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: What a damaged compressed file raises while it is read (gzip: ``BadGzipFile``
#: (an OSError), ``zlib.error``; all three: ``EOFError`` when cut short; xz:
#: ``LZMAError``).
_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
_DELIMITERS = ",\t;|"
_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
_HEAD_BYTES = 1 << 16
#: Bytes read at a time when rows are checked for their number of fields.
_CHECK_BYTES = 1 << 24
_HEAD_LINES = 50
#: Rows pandas reads first to find the text columns, which the reader turns into
#: ``category`` (codes and level names) once the whole file is read (:func:`_as_category`).
_HEAD_ROWS = 1000
#: The ``dtype`` the whole file is read with: it types nothing, but as a mapping it makes
#: pandas' parallel reader (pandas 3.1, files over 5 MB) join each column's chunks one
#: column at a time, freeing them as it goes: 1.8 x the frame at its peak instead of
#: 2.4 x, at the same speed. (Text columns read as ``category`` instead peak at 1.5 x
#: but cost pandas 60 % more CPU time than its plain read.)
_BY_COLUMN: dict[str, str] = {}


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
        The rows as ``pandas.read_csv`` (its C engine) reads and types them over the
        whole file (missing values as NaN: empty fields, ``NA``, ``NaN``, ``null``
        ...): integers (floats if a value is missing), floats, booleans, and text as
        a ``category`` (the columns whose first :data:`_HEAD_ROWS` rows hold text:
        the same values in a third less memory than pandas' text columns).

        Column names and text values are in Unicode's normal form C (:func:`as_nfc`).

    Raises
    ------
    DataError
        For a missing, unreadable or empty file, a header without rows, a header with
        duplicate or empty column names (also when they differ only in their Unicode
        form), text that does not parse or a row that does not split into the header's
        columns (naming its line), or a damaged Parquet file.
    """
    path = Path(path)
    _check_file(path)
    if _table_suffix(path) in _PARQUET:
        frame = _read_parquet(path)
    else:
        frame = _read_text(path, delimiter)
    if len(frame) == 0:
        raise DataError(f"file {path} has a header but no rows; add the site's rows")
    return as_nfc(frame)


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
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DataError(f"file {path} is not a valid Parquet file: {one_line(exc)}") from exc
    _check_header(names, path)
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as exc:  # damaged pages, bad encodings
        raise DataError(
            f"file {path} is not a valid Parquet file: {one_line(exc)}; "
            "it may be cut short or damaged: write it again"
        ) from exc


def _read_text(path: Path, delimiter: str | None) -> pd.DataFrame:
    lines = _head_lines(path)
    if not lines or not lines[0].strip():
        raise DataError(f"file {path} has no header row; its first line must name the columns")
    sep = _delimiter(path, lines, delimiter)
    header = next(csv.reader([lines[0]], delimiter=sep))
    _check_header(header, path)
    try:
        frame = _read_whole(path, sep, _text_columns(path, sep))
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
            f"file {path} does not parse with delimiter {sep!r}: {one_line(exc)}; "
            "fix the file or pass --set delimiter=..."
        ) from exc
    if len(frame.columns) > 1 and frame[frame.columns[-1]].isna().any():
        _check_fields(path, sep, len(frame.columns))
    return frame


def _read_whole(path: Path, sep: str, text: list[str]) -> pd.DataFrame:
    """The whole file as pandas types it, the ``text`` columns as ``category``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = pd.read_csv(path, sep=sep, dtype=_BY_COLUMN)
    if not all(isinstance(frame[col].dtype, pd.StringDtype) for col in text):
        # pandas' low-memory read typed a text column's later chunks as numbers (an
        # object column of both, and a DtypeWarning): read its values as text
        return pd.read_csv(path, sep=sep, dtype=dict.fromkeys(text, "category"))
    for found in caught:  # e.g. a DtypeWarning for a column of numbers, then text
        warnings.warn(found.message, stacklevel=1)
    for col in text:
        frame[col] = _as_category(frame[col])
    return frame


def _as_category(column: pd.Series) -> pd.Series:
    """A text column (pandas' ``str``) as ``pandas.read_csv(dtype="category")`` reads
    it: codes into its distinct values, which are the categories, sorted (missing
    values: code -1).

    One hashing pass (``pandas.factorize``: pyarrow's, for pandas' ``str``) and a
    lookup into the sorted values, much cheaper than pandas' conversion while it
    parses, which hashes every chunk's values as Python strings.
    """
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    categories = pd.Index(uniques).sort_values()
    rank = np.append(categories.get_indexer(uniques), -1)  # code -1 (missing) stays -1
    dtype = pd.CategoricalDtype(categories, ordered=False)
    return pd.Series(
        pd.Categorical.from_codes(rank[codes], dtype=dtype), index=column.index, name=column.name
    )


def _text_columns(path: Path, sep: str) -> list[str]:
    """The columns whose values in the file's first rows are all text (besides missing
    ones): text to pandas over the whole file too, so reading them as ``category``
    keeps their values and types every other column as pandas would."""
    head = pd.read_csv(path, sep=sep, nrows=_HEAD_ROWS)
    return [col for col in head.columns if pd.api.types.infer_dtype(head[col]) == "string"]


def _check_fields(path: Path, sep: str, expected: int) -> None:
    """Refuse a row that does not split into the header's ``expected`` fields.

    pandas reads a short row (``no;no;yes`` in a file of ``,``) as its first fields
    followed by missing values, without a word; a short row always misses its last
    field, so :func:`_read_text` calls this (one more pass over the file) only when the
    last column misses a value. A file without a quote character is checked by
    counting delimiters per line (numpy, a few hundred MB/s); one with quotes by
    Python's ``csv`` reader, which quotes as pandas does (about 70 MB/s). Blank lines
    are skipped, as pandas skips them.
    """
    if sep.isascii() and sep != '"' and _check_unquoted(path, sep.encode(), expected):
        return
    limit = csv.field_size_limit(sys.maxsize)  # a long cell is not a bad row
    try:
        with _open_binary(path) as raw, io.TextIOWrapper(raw, "utf-8-sig", newline="") as text:
            reader = csv.reader(text, delimiter=sep)
            next(reader, None)  # the header
            for row in reader:
                if len(row) != expected and (len(row) > 1 or (row and row[0].strip())):
                    raise _bad_line(path, reader.line_num, len(row), sep, expected)
    except csv.Error as exc:
        raise DataError(
            f"file {path} does not parse with delimiter {sep!r}: {one_line(exc)}; "
            "fix the file or pass --set delimiter=..."
        ) from exc
    finally:
        csv.field_size_limit(limit)


def _check_unquoted(path: Path, sep: bytes, expected: int) -> bool:
    """:func:`_check_fields` for a file without quotes, line by line by its delimiters;
    False (nothing checked) as soon as a quote shows up."""
    line = 0  # lines before the current chunk
    carry = b""
    with _open_binary(path) as stream:
        while True:
            block = stream.read(_CHECK_BYTES)
            chunk = carry + block
            if b'"' in block or block.count(b"\r") != block.count(b"\r\n"):
                return False  # quotes, or lines ended by a lone CR: the csv reader
            end = chunk.rfind(b"\n") + 1 if block else len(chunk)
            if end == 0 and block:
                carry = chunk  # one line longer than a block
                continue
            body, carry = chunk[:end], chunk[end:]
            if not body:
                return True
            codes = np.frombuffer(body, dtype=np.uint8)
            breaks = np.flatnonzero(codes == 10)
            if not body.endswith(b"\n"):
                breaks = np.append(breaks, len(body))
            before = np.searchsorted(np.flatnonzero(codes == sep[0]), breaks)  # per line end
            fields = np.diff(before, prepend=0) + 1
            starts = np.concatenate([[0], breaks[:-1] + 1])
            for k in np.flatnonzero(fields != expected):
                number = line + int(k) + 1
                content = body[starts[k] : breaks[k]]
                if number > 1 and content.strip():  # the header, and blank lines, aside
                    raise _bad_line(path, number, int(fields[k]), sep.decode(), expected)
            line += len(breaks)
            if not block:
                return True


def _bad_line(path: Path, line: int, fields: int, sep: str, expected: int) -> DataError:
    return DataError(
        f"file {path}: line {line} splits into {fields} field(s) with delimiter {sep!r}, "
        f"but the header has {expected} columns; fix that line (the file may mix "
        "delimiters, e.g. ',' and ';' rows), or pass --set delimiter=..."
    )


def _open_binary(path: Path) -> Any:
    """The file's bytes, decompressed (``.gz``/``.bz2``/``.xz``)."""
    return _COMPRESSED.get(path.suffix.lower(), open)(path, "rb")


def as_nfc(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its column names and text values in Unicode's normal form C.

    The same word may be stored composed (``ö``) or decomposed (``o`` and a combining
    diaeresis), e.g. by two sites' operating systems; in NFC both are one column and
    one level. Only values outside ASCII are looked at (ASCII text is NFC already).
    """
    names = [_nfc(c) if isinstance(c, str) else c for c in frame.columns]
    if names != list(frame.columns):
        frame.columns = names
    for col in frame.columns:
        column = frame[col]
        if isinstance(column.dtype, pd.CategoricalDtype):
            normal = _nfc_category(column)
        elif pd.api.types.is_string_dtype(column.dtype) or column.dtype == object:
            normal = _nfc_text(column)
        else:
            continue
        if normal is not None:
            frame[col] = normal
    return frame


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _nfc_category(column: pd.Series) -> pd.Series | None:
    """A ``category`` column with NFC categories (None if they are already): two
    categories equal in NFC become one."""
    categories = column.cat.categories
    normal = [_nfc(c) if isinstance(c, str) else c for c in categories]
    if normal == list(categories):
        return None
    merged = pd.Index(normal).unique().sort_values()
    position = np.append(merged.get_indexer(normal), -1)  # code -1 (missing) stays -1
    codes = position[column.cat.codes.to_numpy()]
    dtype = pd.CategoricalDtype(merged, ordered=False)
    return pd.Series(
        pd.Categorical.from_codes(codes, dtype=dtype), index=column.index, name=column.name
    )


def _nfc_text(column: pd.Series) -> pd.Series | None:
    """A text column with NFC values (None if they are already)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    normal = [_nfc(v) if isinstance(v, str) else v for v in uniques]
    if normal == list(uniques):
        return None
    values = np.array([*normal, None], dtype=object)[codes]
    return pd.Series(values, index=column.index, name=column.name).astype(column.dtype)


def _damaged(path: Path, exc: BaseException) -> DataError:
    """The error for a file whose bytes cannot be read or decompressed."""
    if path.suffix.lower() in _COMPRESSED:
        return DataError(
            f"file {path} is not a valid {path.suffix.lower()} file ({one_line(exc)}); "
            "it may be cut short or damaged: compress it again, or give the uncompressed file"
        )
    return DataError(f"file {path} cannot be read: {one_line(exc)}")


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
        name = _nfc(name) if isinstance(name, str) else name  # one name in two Unicode forms
        if name in seen:
            raise DataError(
                f"file {path}: column name {name!r} appears twice in the header "
                f"(columns {seen[name] + 1} and {j + 1}); rename one"
            )
        seen[name] = j


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name if it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
