"""The message audit: no reply may carry rows of its client's data.

Every reply a client sends passes :func:`audit_reply` before it leaves the client,
on every backend. It rejects a reply

1. with more entries (:meth:`Message.n_entries`) than its protocol declared for that
   message kind, or
2. holding an array whose rows equal rows of the client's data.

Row matching looks at each array as rows of the client's width ``p``: arrays whose
last axis has length ``p`` (any leading shape), 2-D arrays whose *first* axis has
length ``p`` (a transposed table), and 1-D arrays whose length is a multiple of
``p`` (a flattened table). Values are compared exactly after conversion to
``float64``. Two kinds of rows are not counted, by design:

- constant rows (every value equal, e.g. a zero-initialised weight row): they carry
  a single number, not a record;
- arrays the protocol declares as graphs (``graph_arrays``): they must be valid
  endpoint-mark matrices (square, values 0-3, zero diagonal, marks at both ends of
  each edge), which is checked instead.

Matching is vectorised and costs about one pass over the array (see
:class:`RowIndex`). Clients with a single column are not row-checked (any number
would "match"); their bound on entries still applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.sites import SchemaLimits
from fedstruct.errors import DataError, PrivacyViolationError

__all__ = ["Payload", "PayloadLimit", "RowIndex", "audit_description", "audit_reply"]

_MIX_SEED = 0x5EED_F00D


class Payload(Protocol):
    """What the audit reads of a message (``fedstruct.fl.Message`` satisfies it)."""

    kind: str
    arrays: Mapping[str, NDArray]

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
    """

    max_entries: int
    graph_arrays: frozenset[str] = frozenset()


class RowIndex:
    """Exact row hashes of one client's data, built once and reused for every reply.

    A row's hash is the wrapping ``uint64`` dot product of its float64 bit pattern
    with fixed odd multipliers (order-independent, so exact). A bitmap over the
    hashes' low bits rejects most rows of a reply at once; the remaining candidates
    are looked up among the sorted hashes and confirmed by exact comparison.
    Constant rows are left out of the index, so they never match.

    Parameters
    ----------
    rows
        The client's data (rows x columns).
    """

    def __init__(self, rows: pd.DataFrame | NDArray) -> None:
        data = _as_float_rows(np.asarray(rows))
        self.width = data.shape[1]
        rng = np.random.default_rng(_MIX_SEED)
        self._mix = rng.integers(1, 2**63, size=self.width, dtype=np.uint64) | np.uint64(1)
        self._rows = data[~_constant_rows(data)]
        hashes = self._hash(self._rows)
        self._order = np.argsort(hashes, kind="stable")
        self._sorted_hashes = hashes[self._order]
        size = 1 << max(10, int(16 * max(len(hashes), 1) - 1).bit_length())
        self._mask = np.uint64(size - 1)
        self._bitmap = np.zeros(size, dtype=bool)
        self._bitmap[(hashes & self._mask).astype(np.intp)] = True

    def _hash(self, rows: NDArray[np.float64]) -> NDArray[np.uint64]:
        return rows.view(np.uint64) @ self._mix

    def count_matches(self, array: NDArray) -> int:
        """Number of rows of ``array`` (seen as rows of this width) found in the data."""
        if self.width < 2 or self._rows.shape[0] == 0:
            return 0
        return sum(self._matches(view) for view in _row_views(np.asarray(array), self.width))

    def _matches(self, rows: NDArray) -> int:
        rows = _as_float_rows(rows)
        hashes = self._hash(rows)
        cand = np.flatnonzero(self._bitmap[(hashes & self._mask).astype(np.intp)])
        if cand.size == 0:
            return 0
        pos = np.minimum(np.searchsorted(self._sorted_hashes, hashes[cand]), len(self._order) - 1)
        hit = self._sorted_hashes[pos] == hashes[cand]
        cand, pos = cand[hit], pos[hit]
        # Equal 64-bit hashes: confirm exactly (rows with equal content share a hash).
        same = np.all(rows[cand] == self._rows[self._order[pos]], axis=1)
        return int(same.sum())


def _as_float_rows(rows: NDArray) -> NDArray[np.float64]:
    """Contiguous float64 copy-if-needed, with -0.0 turned into 0.0."""
    return np.ascontiguousarray(rows, dtype=np.float64) + 0.0


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
    description: Mapping[str, Any], limits: SchemaLimits, site: str, step: str = "describe"
) -> None:
    """Reject a schema-handshake reply that says more than a site may.

    The handshake's replies (a site's description of its file, and its report after
    encoding) are metadata: names, kinds, level names and counts. Before one leaves
    its node it must hold only strings, integers, booleans and flat lists of them (no
    real numbers: those would be values of the data), and its row count and level
    names (``n_rows``, ``levels.<column>``) must keep within ``limits``
    (:meth:`~fedstruct.data.sites.SchemaLimits.check`: enough rows, not too many
    levels, no identifier).

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

    Raises
    ------
    PrivacyViolationError
        Naming the site, the step and the key or column.
    """
    where = f"site {site!r}: schema handshake ({step})"
    for key, value in description.items():
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
        hits = index.count_matches(array)
        if hits:
            raise PrivacyViolationError(
                f"client {client!r}: reply {kind!r} array {name!r} contains {hits} row(s) of "
                "the client's data; only aggregates may leave a client"
            )
