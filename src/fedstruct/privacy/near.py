"""Near copies of a client's table in a reply: the audit's bulk check beside exact rows.

:class:`~fedstruct.privacy.audit.RowIndex` matches reply rows that point the way a data
row points (to ``1e-6``). A table sent rounded, with noise, without one of its columns
or with its columns in another order points elsewhere, so it passed. :class:`NearIndex`
finds those copies in bulk: an array is a *near copy* when more than half of the rows
it looks at (at most :data:`SAMPLE_ROWS`, evenly spaced; constant rows aside), and at
least ``anonymity`` of them (or every row the index holds, if fewer), match rows of the
client in one of these ways:

- **near** (same width ``p``): every value within ``NEAR_SPREAD`` (1 %) of its column's
  standard deviation over the client's rows plus ``NEAR_RELATIVE`` (0.3 %) of the value:
  the table with 0.1 % noise, or rounded to 2 decimals where a column's standard
  deviation is 0.5 or more;
- **near without a column** (width ``p - 1``): the same, with any one column left out
  (all rows the same column or not: each row is tried without each column);
- **permuted** (width ``p``): the same values in another column order (each to
  ``1e-6`` of the row's largest value), e.g. the table with its columns shuffled.

Only the client's rows with at least :data:`MIN_REAL_VALUES` (4) values that are not
whole numbers take part (measurements; 4 of the values compared when a column is left
out): rows of codes (categorical and ordinal columns, 0/1 flags) take few patterns,
which any array of 0s and 1s (a bootstrap replicate's p-values) meets by chance. A
single row, or a few, is never a near copy (exact rows are :class:`RowIndex`'s), so a
weight row that falls near a data row by chance refuses nothing. Arrays are seen as
rows of width ``p`` (or ``p - 1``) by their last axis, or by a 2-D array's first (a
transposed table); a flattened table is not looked at.

Lookup: the index keeps its rows sorted by two of their columns (the two with the most
distinct values) and by their sums (permutations keep sums); each looked-at reply row
takes the data rows within its tolerance on one key (a binary search) and compares
only those in full. Cost: ``SAMPLE_ROWS`` lookups per array, whatever its size.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

#: Tolerance of a near match per value, as a share of its column's standard deviation ...
NEAR_SPREAD = 0.01
#: ... plus this share of the value itself.
NEAR_RELATIVE = 0.003
#: Tolerance of a permuted match, as a share of the row's largest absolute value.
PERMUTED_TOLERANCE = 1e-6
#: A data row enters the index with at least this many values that are not whole numbers.
MIN_REAL_VALUES = 4
#: Rows of a reply array looked at (evenly spaced).
SAMPLE_ROWS = 64
#: Rows of the index that choose its key columns.
_KEY_ROWS = 1000
#: Candidate pairs compared at once (bounds the memory of a lookup).
CHUNK = 1 << 18
#: The ways a reply row may copy a data row, as messages name them.
WAYS = {
    "near": "each value near the client's",
    "dropped": "each value near the client's, one column left out",
    "permuted": "the client's values with the columns in another order",
}


class NearIndex:
    """One client's rows of measurements, indexed for near copies (module docstring).

    Parameters
    ----------
    rows
        The client's distinct rows (rows x columns, float64, missing values as 0).
    counts
        How many of the client's rows each stands for.
    spread
        Each column's standard deviation over the client's rows.
    anonymity
        The fewest matching rows that make a near copy (fewer if the index holds fewer).
    """

    def __init__(
        self,
        rows: NDArray[np.float64],
        counts: NDArray[np.int64],
        spread: NDArray[np.float64],
        anonymity: int,
    ) -> None:
        self.width = rows.shape[1]
        real = rows != np.floor(rows)  # values that are not whole numbers
        keep = np.count_nonzero(real, axis=1) >= MIN_REAL_VALUES
        self._rows, self._real = rows[keep], real[keep]
        self._spread = NEAR_SPREAD * spread
        self.minimum = int(min(anonymity, counts[keep].sum()))
        self._keys = [self._sorted_by(col) for col in self._key_columns()]
        sums = self._rows.sum(axis=1)
        self._sum_order = np.argsort(sums, kind="stable")
        self._sums = sums[self._sum_order]
        self._ordered = np.sort(self._rows, axis=1)

    def __len__(self) -> int:
        return len(self._rows)

    def _key_columns(self) -> list[int]:
        """The two columns with the most distinct values among the first rows (the most
        selective keys)."""
        if len(self._rows) == 0:
            return []
        head = self._rows[:_KEY_ROWS]
        distinct = [np.unique(head[:, j]).size for j in range(self.width)]
        return [int(j) for j in np.argsort(distinct, kind="stable")[::-1][:2]]

    def _sorted_by(self, col: int) -> tuple[int, NDArray[np.intp], NDArray[np.float64]]:
        order = np.argsort(self._rows[:, col], kind="stable")
        return col, order, self._rows[order, col]

    def copies(self, array: NDArray) -> tuple[int, int, str] | None:
        """Whether ``array`` is a near copy: ``(matching, looked at, way)`` (a key of
        :data:`WAYS`), or None."""
        if len(self._rows) == 0 or self.width < MIN_REAL_VALUES:
            return None
        for rows, width in _views(np.asarray(array), self.width):
            sample = _sample(rows)
            if sample.shape[0] < max(self.minimum, 1):
                continue
            ways = ("near", "permuted") if width == self.width else ("dropped",)
            for way in ways:
                found = self._matching(sample, way).sum()
                if 2 * found > sample.shape[0] and found >= self.minimum:
                    return int(found), sample.shape[0], way
        return None

    def _matching(self, sample: NDArray[np.float64], way: str) -> NDArray[np.bool_]:
        """Which rows of ``sample`` copy a data row in ``way``."""
        found = np.zeros(len(sample), dtype=bool)
        if way == "permuted":
            ordered = np.sort(sample, axis=1)
            tolerance = PERMUTED_TOLERANCE * np.maximum(np.abs(sample).max(axis=1), 1e-300)
            reach = tolerance * self.width + 1e-12
            totals = sample.sum(axis=1)
            low = np.searchsorted(self._sums, totals - reach, side="left")
            high = np.searchsorted(self._sums, totals + reach, side="right")
            for q, entry in candidate_pairs(np.arange(len(sample)), low, high):
                data = self._ordered[self._sum_order[entry]]
                close = np.all(np.abs(data - ordered[q]) <= tolerance[q, None], axis=1)
                found[q[close]] = True
            return found
        dropped = way == "dropped"
        for col, order, values, place in self._lookups(dropped):
            value = sample[:, place]
            reach = (self._spread[col] + NEAR_RELATIVE * np.abs(value)) / (1 - NEAR_RELATIVE)
            low = np.searchsorted(values, value - reach - 1e-12, side="left")
            high = np.searchsorted(values, value + reach + 1e-12, side="right")
            for q, entry in candidate_pairs(np.arange(len(sample)), low, high):
                close = self._near(sample[q], order[entry], dropped)
                found[q[close]] = True
        return found

    def _lookups(
        self, dropped: bool
    ) -> Iterator[tuple[int, NDArray[np.intp], NDArray[np.float64], int]]:
        """The key column, its order, its sorted values and the reply's place of it, for
        each lookup: the first key at its place (a column short: also one place to the
        left, a column before it left out), and a column short, the second key for the
        first left out."""
        (a, order_a, values_a), *second = self._keys
        width = self.width - dropped
        for place in [a - 1, a] if dropped else [a]:
            if 0 <= place < width:
                yield a, order_a, values_a, place
        if dropped and second:
            b, order_b, values_b = second[0]
            yield b, order_b, values_b, b - 1 if b > a else b

    def _near(
        self, rows: NDArray[np.float64], candidates: NDArray[np.intp], dropped: bool
    ) -> NDArray[np.bool_]:
        """Whether each reply row is near its candidate data row (one column left out if
        ``dropped``: any one)."""
        data = self._rows[candidates]
        room = self._spread + NEAR_RELATIVE * np.abs(data)
        if not dropped:
            return np.all(np.abs(data - rows) <= room, axis=1)
        same = np.abs(data[:, :-1] - rows) <= room[:, :-1]  # columns before the one left out
        shift = np.abs(data[:, 1:] - rows) <= room[:, 1:]  # columns after it
        ones = np.ones((len(data), 1), dtype=bool)
        before = np.hstack([ones, np.logical_and.accumulate(same, axis=1)])
        after = np.hstack([np.logical_and.accumulate(shift[:, ::-1], axis=1)[:, ::-1], ones])
        real = self._real[candidates]
        enough = real.sum(axis=1)[:, None] - real >= MIN_REAL_VALUES  # once one is left out
        return np.any(before & after & enough, axis=1)


def candidate_pairs(
    queries: NDArray[np.intp], low: NDArray[np.intp], high: NDArray[np.intp]
) -> Iterator[tuple[NDArray[np.intp], NDArray[np.intp]]]:
    """(query, entry) pairs of every query's window ``low:high`` of a sorted key, in
    chunks of about :data:`CHUNK` pairs (queries with an empty window left out)."""
    keep = high > low
    queries, low, high = queries[keep], low[keep], high[keep]
    counts = high - low
    start = 0
    while start < queries.size:
        stop = start + max(1, int(np.searchsorted(np.cumsum(counts[start:]), CHUNK)))
        q = np.repeat(queries[start:stop], counts[start:stop])
        first = np.repeat(low[start:stop] - np.cumsum(counts[start:stop]) + counts[start:stop],
                          counts[start:stop])  # fmt: skip
        yield q, first + np.arange(q.size)
        start = stop


def _views(array: NDArray, width: int) -> Iterator[tuple[NDArray, int]]:
    """``array`` as rows of the client's width or one less (module docstring)."""
    if array.ndim == 0 or array.size == 0 or array.dtype.kind not in "biuf":
        return
    for w in (width, width - 1):
        if array.shape[-1] == w:
            yield array.reshape(-1, w), w
        if array.ndim == 2 and array.shape[0] == w and array.shape[1] != w:
            yield array.T, w


def _sample(rows: NDArray) -> NDArray[np.float64]:
    """At most :data:`SAMPLE_ROWS` of the non-constant ``rows``, evenly spaced, as
    float64 (missing and infinite values as 0)."""
    varied = np.flatnonzero(~np.all(rows == rows[:, :1], axis=1))
    if len(varied) > SAMPLE_ROWS:
        varied = varied[np.linspace(0, len(varied) - 1, SAMPLE_ROWS).round().astype(np.intp)]
    out = np.asarray(rows[varied], dtype=np.float64)
    return out if np.isfinite(out).all() else np.where(np.isfinite(out), out, 0.0)
