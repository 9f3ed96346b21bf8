"""The message audit: no reply may carry rows of its client's data.

Every reply a client sends passes :func:`audit_reply` before it leaves the client,
on every backend; the schema handshake's replies pass :func:`audit_description`.

**What it is.** A guard against accidents — a handler that returns its data, a
batch, a copy cast to ``float32``, standardised or rescaled rows, rows with a label
column added, a table rounded, with a little noise, without a column or with its
columns permuted — not a defence against an adversary. A client that wants to send its
rows can always encode them so that no check of this kind finds them (one-hot
codes, rows packed into one number each, noise above the tolerances, a few rows
among others, a compressed string). Protection against a curious or malicious
party comes from what the protocols send (aggregates, secure aggregation,
differential privacy), not from this audit.

It rejects a reply

1. with more entries (:meth:`Message.n_entries`) than its protocol declared for that
   message kind, or
2. holding an array, or a list of numbers in its config part (also inside JSON
   strings and bytes there), whose rows match rows of the client's data, or
3. holding such an array that is a *near copy* of the client's rows: more than half
   of its rows (and at least ``anonymity``) hold a row of measurements with every
   value near (1 % of its column's deviation plus 0.3 % of the value), near with one
   column left out, or its values in another column order
   (:mod:`fedstruct.privacy.near` says exactly which rows and arrays).

Row matching looks at each array as rows of the client's width ``p``: arrays whose
last axis has length ``p`` (any leading shape), 2-D arrays whose *first* axis has
length ``p`` (a transposed table), 1-D arrays whose length is a multiple of ``p``
(a flattened table), and arrays whose last axis has length ``p + 1`` with any one
column left out (the rows with a column added). A reply row matches a data row
when

- they point the same way up to ``tolerance``: the rows divided by their lengths
  (Euclidean norms) differ by at most ``1e-6`` (Euclidean distance). So a row
  multiplied by a positive number, a row plus noise far below its size, or a row
  cast to ``float32`` all match. A data row with fewer than three non-zero values
  must also match in length (to ``1e-6``, relative): scaled, it would stand for too
  many rows that are not the client's (``[0, 0, 1]`` for every ``[0, 0, c]``);
- or the same holds for the data row *standardised* per column (minus the column's
  mean, divided by its standard deviation, over the client's rows): the client's
  table standardised before it is sent.

**Which matches are leaks.** A match says the reply row *could* be a record; it is a
leak when it *singles out* records or when the array *is* data:

- a matching reply row that fewer than ``anonymity`` (default :data:`ANONYMITY`, 10)
  of the client's rows match — a rare pattern — is a leak on its own (one leaked
  record is enough to refuse a reply);
- reply rows that match a pattern shared by ``anonymity`` rows or more are
  *k-anonymous* (in the sense of Sweeney, 2002, "k-anonymity: a model for protecting
  privacy"): each stands for at least ``k`` records and says no more about any one of
  them than a count-table cell of ``k`` or more, which the protocols send anyway. They
  are leaks only in bulk: when matching rows (rare or common) make up more than half
  of the rows of an array seen at the client's width (constant rows left out: they
  never match) — the array is a copy or a batch of a low-entropy table, e.g. rows of a
  binary network's data that are all typical.

The reason is chance coincidence. On categorical data a data row is a short
pattern (a binary table of 8 columns has 256), and any reply row whose values are
0s and 1s — a row of p-values that are exactly 0 or 1, a vector of flags — hits one
of the common patterns by chance: a bootstrap replicate of asia's FedCDnv p-values
(a row ``[1, 4e-9, 1, 0, 1, 5e-58]``) matched a pattern held by 140 of the client's
685 rows. Such a row singles out no one, and it is a minority of its array. A
handler that returns its table or a batch of it sends an array made of data rows
(a leak in bulk, however common its rows), and one rare record is a leak alone.
What this lets through: a few rows of common patterns hidden among other rows (fewer
than half of the array's).

Missing values (NaN) count as 0 on both sides. Some rows are not counted, or counted
only in bulk, by design:

- constant rows (every value equal, e.g. a zero-initialised weight row): they carry
  a single number, not a record;
- arrays the protocol declares as sufficient statistics (``statistic_arrays``: counts
  of contingency tables, moments, each entry a sum over many rows, as pooled
  discovery sends): only a bulk match refuses them. A table of counts over a site's
  rows has cells of one or two rows by nature, and a row of such cells (``[0, 1, 0,
  1, 1]``) can coincide with a rare record; an array that *is* rows still matches in
  bulk;
- arrays the protocol declares as graphs (``graph_arrays``): they must be valid
  endpoint-mark matrices (square, values 0-3, zero diagonal, marks at both ends of
  each edge), which is checked instead.

Matching is vectorised: a row's direction is projected on one fixed random
direction, the data rows' projections are sorted once, and each reply row looks up
the data rows within the tolerance of its projection (a binary search), which are
then compared in full. It costs a few passes over the array (see :class:`RowIndex`
and ``benchmarks/audit.py``). Clients with a single column are not row-checked (any
number would "match"); their bound on entries still applies.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.sites import SchemaLimits
from fedstruct.errors import ConfigError, DataError, PrivacyViolationError
from fedstruct.privacy.near import WAYS, NearIndex, candidate_pairs

__all__ = [
    "ANONYMITY",
    "Payload",
    "PayloadLimit",
    "RowIndex",
    "audit_description",
    "audit_reply",
]

_MIX_SEED = 0x5EED_F00D
#: Euclidean distance between two unit rows (and relative difference of lengths)
#: under which they match.
TOLERANCE = 1e-6
#: Data rows with fewer non-zero values must match in length as well as direction.
_MIN_NONZERO_FOR_SCALE = 3
#: A reply row that fewer client rows than this match singles out records (a leak on
#: its own); rows matching more are k-anonymous and leak only in bulk (module
#: docstring). The same 10 as the fewest rows a site may hold (``MIN_SITE_ROWS``).
ANONYMITY = 10


class Payload(Protocol):
    """What the audit reads of a message (``fedstruct.fl.Message`` satisfies it)."""

    kind: str
    arrays: Mapping[str, NDArray]
    config: Mapping[str, Any]

    def n_entries(self) -> int: ...


@dataclass(frozen=True)
class PayloadLimit:
    """What a protocol declares about one kind of reply.

    Parameters
    ----------
    max_entries
        Upper bound on :meth:`Message.n_entries` for this reply.
    graph_arrays
        Names of arrays that are endpoint-mark matrices (exempt from row matching,
        checked to be valid mark matrices instead).
    statistic_arrays
        Names of arrays of sufficient statistics, each entry a sum over many rows
        (counts of a contingency table, moments): refused only when their rows match
        the client's in bulk (a copy), not for a few coincidental matches.
    """

    max_entries: int
    graph_arrays: frozenset[str] = frozenset()
    statistic_arrays: frozenset[str] = frozenset()


class RowIndex:
    """One client's rows, by direction, built once and reused for every reply.

    The index holds the client's distinct non-constant rows and, for each, two
    entries: the row and the row standardised per column (over all the client's
    rows), each as its projection on a fixed random unit vector ``r`` after division
    by its length. Two unit rows within distance ``tolerance`` have projections
    within ``tolerance`` (``|(u - v) . r| <= |u - v|``), so the candidates of a reply
    row are the entries whose keys lie in that window of its own key, found by a
    binary search among the sorted keys, and only they are compared in full (module
    docstring for what matches). Each distinct row keeps how many of the client's rows
    it stands for, so that a reply row's match counts the records it could be (those
    of every data row it matches, in either form): fewer than ``anonymity`` singles
    them out. Memory: one float64 copy of the distinct rows plus a few numbers per row
    and entry.

    Parameters
    ----------
    rows
        The client's data (rows x columns).
    tolerance
        See :data:`TOLERANCE`.
    anonymity
        See :data:`ANONYMITY`: a reply row matching fewer of the client's rows is a
        leak on its own; one matching more is a leak only in bulk. A number above the
        client's row count makes every match a leak (the rule before k-anonymity).

    Raises
    ------
    ConfigError
        If ``anonymity`` is not a positive integer.
    """

    def __init__(
        self,
        rows: pd.DataFrame | NDArray,
        tolerance: float = TOLERANCE,
        anonymity: int = ANONYMITY,
    ) -> None:
        integer = isinstance(anonymity, int | np.integer) and not isinstance(anonymity, bool)
        if not integer or anonymity < 1:
            raise ConfigError(f"audit anonymity must be a positive integer, got {anonymity!r}")
        data = _as_float_rows(np.asarray(rows))
        self.width = data.shape[1]
        self.tolerance = float(tolerance)
        self.anonymity = int(anonymity)
        direction = np.random.default_rng(_MIX_SEED).normal(size=self.width)
        self._direction = direction / max(float(np.linalg.norm(direction)), 1e-300)
        if len(data):
            self._mean, spread = data.mean(axis=0), data.std(axis=0)
        else:
            self._mean, spread = np.zeros(self.width), np.zeros(self.width)
        self._scale = np.divide(1.0, spread, out=np.zeros_like(spread), where=spread > 0)
        self._spread = spread
        self._rows, self._counts = _distinct(data[~_constant_rows(data)], self._direction)
        self._near: NearIndex | None = None
        entries = [self._entries(self._rows, form) for form in (0, 1)]
        keys = np.concatenate([e[0] for e in entries])
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._row = np.concatenate([e[1] for e in entries])[order]
        self._form = np.repeat(np.arange(2, dtype=np.int8), [e[0].size for e in entries])[order]
        self._norms = np.concatenate([e[2] for e in entries])[order]
        self._sparse = np.concatenate([e[3] for e in entries])[order]

    def _form_rows(self, rows: NDArray[np.float64], form: int) -> NDArray[np.float64]:
        """``rows`` as they are (form 0) or standardised with the client's columns (1)."""
        return rows if form == 0 else (rows - self._mean) * self._scale

    def _entries(self, rows: NDArray[np.float64], form: int) -> tuple[NDArray, ...]:
        """Keys, row positions, lengths and few-values flags of one form's entries."""
        values = self._form_rows(rows, form)
        keep = np.flatnonzero(~_constant_rows(values)) if form else np.arange(len(values))
        values = values[keep]
        length = np.sqrt(np.einsum("ij,ij->i", values, values))
        keys = (values @ self._direction) / length
        few = np.count_nonzero(values, axis=1) < _MIN_NONZERO_FOR_SCALE
        return keys, keep, length, few

    def _data_units(self, entries: NDArray[np.intp]) -> NDArray[np.float64]:
        """The unit rows of index entries (rebuilt from the kept rows)."""
        rows = self._rows[self._row[entries]]
        standard = self._form[entries] == 1
        if standard.any():
            rows[standard] = self._form_rows(rows[standard], 1)
        return rows / self._norms[entries, None]

    def count_matches(self, array: NDArray, *, bulk_only: bool = False) -> int:
        """Number of rows of ``array`` (seen as rows of this width) that leak data rows.

        A row that matches is counted when it singles out records (fewer than
        ``anonymity`` of the client's rows match it), or, whatever it matches, when
        the matching rows are more than half of the rows of their view of ``array``
        (module docstring); with ``bulk_only`` only the latter (an array of sums).
        """
        if self.width < 2 or self._keys.size == 0:
            return 0
        array = np.asarray(array)
        views = _row_views(array, self.width)
        count = sum(
            self._leaks(*self._matches(_as_float_rows(view)), bulk_only=bulk_only) for view in views
        )
        wide = self.width + 1
        if array.ndim >= 1 and array.shape[-1] == wide and array.size:
            rows = _as_float_rows(array.reshape(-1, wide))
            count += self._leaks(*self._matches_without_a_column(rows), bulk_only=bulk_only)
        return count

    def near_copy(self, array: NDArray) -> tuple[int, int, str] | None:
        """Whether ``array`` is a near copy of the client's rows (rounded, noised, a
        column left out, columns permuted: :mod:`fedstruct.privacy.near`), as
        ``(matching rows, rows looked at, way)``; None if not. The index of near
        matches is built on the first call."""
        if self.width < 2 or len(self._rows) == 0:
            return None
        if self._near is None:
            self._near = NearIndex(self._rows, self._counts, self._spread, self.anonymity)
        return self._near.copies(array)

    def _leaks(self, records: NDArray[np.int64], n_rows: int, bulk_only: bool = False) -> int:
        """How many matching rows leak: all in bulk, else those that single out records
        (none with ``bulk_only``).

        ``records`` holds, for each matching reply row, how many client rows it matches;
        ``n_rows`` is the number of the view's rows that could match at all (constant
        rows cannot: a batch of mostly all-zero rows is still a batch).
        """
        if 2 * records.size > n_rows:
            return int(records.size)
        return 0 if bulk_only else int(np.count_nonzero(records < self.anonymity))

    def _matches(self, rows: NDArray[np.float64]) -> tuple[NDArray[np.int64], int]:
        """Records matched by each matching row of ``rows``, and how many of ``rows`` are
        not constant (the rows that could match)."""
        length = np.sqrt(np.einsum("ij,ij->i", rows, rows))
        ok = np.flatnonzero(length > 0)
        if ok.size == 0:
            return np.empty(0, dtype=np.int64), 0
        keys = (rows[ok] @ self._direction) / length[ok]
        found, rows_found = self._lookup(
            keys, lambda q: rows[ok[q]] / length[ok[q], None], length[ok]
        )
        return self._records(found, rows_found), int(np.count_nonzero(~_constant_rows(rows)))

    def _matches_without_a_column(self, rows: NDArray[np.float64]) -> tuple[NDArray[np.int64], int]:
        """Rows of ``p + 1`` values that match a data row once one value is left out
        (records matched by each, as :meth:`_matches`, and how many rows could match).

        The keys of all ``p + 1`` ways of leaving a value out come from prefix and
        suffix sums of the row's products with ``r`` (one pass); only the candidates
        are built in full.
        """
        n, wide = rows.shape
        r = self._direction
        before = np.cumsum(rows[:, :-1] * r, axis=1)  # value j kept at its place j
        after = np.cumsum((rows[:, 1:] * r)[:, ::-1], axis=1)[:, ::-1]  # j+1 moves to j
        zeros = np.zeros((n, 1))
        dots = np.hstack([zeros, before]) + np.hstack([after, zeros])  # (n, p+1): leave j out
        squares = np.einsum("ij,ij->i", rows, rows)[:, None] - rows**2
        length = np.sqrt(np.maximum(squares, 0.0)).ravel()
        ok = np.flatnonzero(length > 0)
        if ok.size == 0:
            return np.empty(0, dtype=np.int64), 0
        keys = dots.ravel()[ok] / length[ok]
        row_of, left_out = np.divmod(ok, wide)
        columns = np.arange(self.width)

        def unit_rows(q: NDArray[np.intp]) -> NDArray[np.float64]:
            cols = columns[None, :] + (columns[None, :] >= left_out[q][:, None])
            return rows[row_of[q][:, None], cols] / length[ok[q], None]

        found, rows_found = self._lookup(keys, unit_rows, length[ok])
        ordered = np.sort(rows, axis=1)  # constant once one value is left out: no match
        constant = (ordered[:, 0] == ordered[:, -2]) | (ordered[:, 1] == ordered[:, -1])
        return self._records(row_of[found], rows_found), int(np.count_nonzero(~constant))

    def _records(self, found: NDArray[np.intp], rows_found: NDArray[np.intp]) -> NDArray[np.int64]:
        """For each reply row in ``found``, the client rows it matches (each distinct
        data row once, with its repeats)."""
        if found.size == 0:
            return np.empty(0, dtype=np.int64)
        pairs = np.unique(np.stack([found, rows_found]), axis=1)
        _, first = np.unique(pairs[0], return_inverse=True)
        return np.bincount(first, weights=self._counts[pairs[1]]).astype(np.int64)

    def _lookup(
        self, keys: NDArray[np.float64], unit_rows: Any, length: NDArray
    ) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """Matching pairs: positions into ``keys`` and the distinct data rows they match."""
        window = self.tolerance * (1 + 1e-9) + 1e-12
        low = np.searchsorted(self._keys, keys - window, side="left")
        high = np.searchsorted(self._keys, keys + window, side="right")
        hits = np.flatnonzero(high > low)
        found: list[NDArray[np.intp]] = []
        rows_found: list[NDArray[np.intp]] = []
        for q, entry in candidate_pairs(hits, low[hits], high[hits]):
            distance = np.linalg.norm(unit_rows(q) - self._data_units(entry), axis=1)
            norms = self._norms[entry]
            same_size = np.abs(length[q] - norms) <= self.tolerance * norms
            match = (distance <= self.tolerance) & (same_size | ~self._sparse[entry])
            found.append(q[match])
            rows_found.append(self._row[entry[match]])
        if not found:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
        return np.concatenate(found), np.concatenate(rows_found)


def _distinct(
    rows: NDArray[np.float64], direction: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``rows`` without repeats, and how many times each occurs (repeats are found next
    to each other when sorted by their product with ``direction``)."""
    if len(rows) < 2:
        return rows, np.ones(len(rows), dtype=np.int64)
    rows = rows[np.argsort(rows @ direction, kind="stable")]
    first = np.concatenate([[True], ~np.all(rows[1:] == rows[:-1], axis=1)])
    if first.all():
        return rows, np.ones(len(rows), dtype=np.int64)
    starts = np.flatnonzero(first)
    return rows[starts], np.diff(np.append(starts, len(rows))).astype(np.int64)


def _as_float_rows(rows: NDArray) -> NDArray[np.float64]:
    """Float64 rows, missing and infinite values as 0."""
    out = np.asarray(rows, dtype=np.float64)
    if out.ndim == 1:
        out = out[None, :]
    if not np.isfinite(out).all():
        out = np.where(np.isfinite(out), out, 0.0)
    return out


def _constant_rows(rows: NDArray[np.float64]) -> NDArray[np.bool_]:
    if rows.shape[1] == 0:
        return np.ones(rows.shape[0], dtype=bool)
    return np.all(rows == rows[:, :1], axis=1)


def _row_views(array: NDArray, width: int) -> list[NDArray]:
    views = []
    if array.ndim >= 1 and array.shape[-1] == width:
        views.append(array.reshape(-1, width))
    if array.ndim == 2 and array.shape[0] == width and array.shape[1] != width:
        views.append(array.T)
    if array.ndim == 1 and array.size > width and array.size % width == 0:
        views.append(array.reshape(-1, width))
    return views


def _config_arrays(config: Mapping[str, Any]) -> Iterator[tuple[str, NDArray[np.float64]]]:
    """The lists of numbers in a message's config part, as arrays: list values, and
    the lists inside JSON strings or bytes (each innermost list of numbers; lists of
    one length stacked as rows)."""
    for key, value in config.items():
        if isinstance(value, list) and value and _numbers(value):
            yield key, np.asarray(value, dtype=np.float64)
        elif isinstance(value, str | bytes) and value[:1] in ("[", "{", b"[", b"{"):
            try:
                parsed = json.loads(value)
            except (ValueError, UnicodeDecodeError):
                continue
            by_length: dict[int, list[list[float]]] = {}
            for numbers in _number_lists(parsed):
                by_length.setdefault(len(numbers), []).append(numbers)
            for rows in by_length.values():
                yield key, np.asarray(rows, dtype=np.float64)


def _numbers(items: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in items)


def _number_lists(value: Any) -> Iterator[list[float]]:
    """Every innermost list of numbers in parsed JSON."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        if value and _numbers(value):
            yield value
        else:
            for item in value:
                yield from _number_lists(item)


def _check_mark_matrix(client: str, kind: str, name: str, array: NDArray) -> None:
    ok = (
        array.ndim == 2
        and array.shape[0] == array.shape[1]
        and array.dtype.kind in "iu"
        and (array.size == 0 or (array.min() >= 0 and array.max() <= 3))
        and not np.any(np.diagonal(array))
        and np.array_equal(array != 0, array.T != 0)
    )
    if not ok:
        raise PrivacyViolationError(
            f"client {client!r}: reply {kind!r} declares {name!r} a graph, but it is not an "
            "endpoint-mark matrix (square, integer 0-3, zero diagonal, marks at both ends)"
        )


def audit_description(
    description: Mapping[str, Any],
    limits: SchemaLimits,
    site: str,
    step: str = "describe",
    aggregates: Collection[str] = (),
) -> None:
    """Reject a schema-handshake reply that says more than a site may.

    The handshake's replies (a site's description of its file, and its report after
    encoding) are metadata: names, kinds, level names and counts. Before one leaves
    its node it must hold only strings, integers, booleans and flat lists of them (no
    real numbers: those would be values of the data), and its row count and level
    names (``n_rows``, ``levels.<column>``) must keep within ``limits``
    (:meth:`~fedstruct.data.sites.SchemaLimits.check`: enough rows, not too many
    levels, no identifier, no names of people, no free text). A node's catalogue
    (:mod:`fedstruct.data.catalogue`) passes the same audit.

    Parameters
    ----------
    description
        The reply's content (a JSON-able dict).
    limits
        What a site's schema may disclose.
    site
        The site's name, for the message.
    step
        The handshake step, for the message.
    aggregates
        Prefixes of the keys that may hold one finite real number each, an aggregate
        over the site's rows its owner lets leave (a catalogue's ``mean.<column>``,
        ``std.<column>``); every other key holds no real number.

    Raises
    ------
    PrivacyViolationError
        Naming the site, the step and the key or column.
    """
    where = f"site {site!r}: schema handshake ({step})"
    for key, value in description.items():
        if str(key).startswith(tuple(aggregates)) and _finite_real(value):
            continue
        items = value if isinstance(value, list | tuple) else [value]
        bad = [v for v in items if isinstance(v, float) or not isinstance(v, str | int)]
        if bad:
            raise PrivacyViolationError(
                f"{where}: key {key!r} holds {type(bad[0]).__name__} values; a site's "
                "description carries names, kinds, level names and counts only"
            )
    levels = {
        str(key).removeprefix("levels."): [str(v) for v in value]
        for key, value in description.items()
        if str(key).startswith("levels.") and isinstance(value, list | tuple)
    }
    rows = description.get("n_rows")
    if rows is None and not levels:
        return
    try:
        limits.check(site, int(rows or 0), levels)
    except DataError as exc:
        raise PrivacyViolationError(f"{where}: {exc}") from exc


def _finite_real(value: Any) -> bool:
    """Whether ``value`` is one finite real number (not a bool, not a list)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def audit_reply(
    message: Payload,
    index: RowIndex,
    limit: PayloadLimit,
    client: str,
) -> None:
    """Reject a reply that carries the client's rows or exceeds its declared size.

    Parameters
    ----------
    message
        The reply.
    index
        The client's :class:`RowIndex`.
    limit
        What the protocol declared for this kind of reply.
    client
        The client's name, for the message.

    Raises
    ------
    PrivacyViolationError
        Naming the client, the reply kind and the offending array.
    """
    kind = message.kind
    entries = message.n_entries()
    if entries > limit.max_entries:
        raise PrivacyViolationError(
            f"client {client!r}: reply {kind!r} carries {entries} entries, more than the "
            f"{limit.max_entries} its protocol declares; send aggregates, not data"
        )
    for name, array in message.arrays.items():
        if name in limit.graph_arrays:
            _check_mark_matrix(client, kind, name, array)
            continue
        bulk_only = name in limit.statistic_arrays
        _refuse_rows(index, array, client, kind, f"array {name!r}", bulk_only=bulk_only)
    for name, array in _config_arrays(getattr(message, "config", {})):
        _refuse_rows(index, array, client, kind, f"config {name!r}")


def _refuse_rows(
    index: RowIndex, array: NDArray, client: str, kind: str, where: str, bulk_only: bool = False
) -> None:
    """Refuse ``array`` if it holds rows of the client's data or is a near copy of them
    (``bulk_only``: a statistics array, refused for matches in bulk only)."""
    hits = index.count_matches(array, bulk_only=bulk_only)
    if hits:
        raise PrivacyViolationError(
            f"client {client!r}: reply {kind!r} {where} contains {hits} row(s) of the "
            "client's data (or rows that match them: rescaled, standardised, nearly equal, "
            "or with a column added); only aggregates may leave a client"
        )
    near = index.near_copy(array)
    if near is not None:
        found, looked, way = near
        raise PrivacyViolationError(
            f"client {client!r}: reply {kind!r} {where} is a copy of the client's rows: "
            f"{found} of the {looked} rows looked at hold {WAYS[way]} (rounded, with noise, "
            "a column left out or the columns permuted); only aggregates may leave a client"
        )
