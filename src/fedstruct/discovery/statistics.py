"""Sufficient statistics of the CI tests: computed from one site's rows, summed across sites.

Every CI test of :mod:`fedstruct.discovery` is a function of a few sums over the rows
complete on its variables ``V = {X, Y} ∪ Z``, so the test on rows pooled from many sites
is the same function of the sites' sums added together (pooled federated discovery,
docs/fedfci.md). Two forms of statistic cover every test:

- **cells** (G², χ², the conditional-Gaussian test): the rows are counted in the cells
  of ``V``'s discrete variables (every combination of their levels, in mixed radix,
  the first variable the most significant digit), and in each cell the continuous
  variables' sums and the sums of their pairwise products are added up;
- **moments** (Fisher-z, the degenerate-Gaussian test): over a *design* of columns, one
  per continuous variable and one indicator per level of each discrete variable, the
  row count, the columns' sums and the sums of their pairwise products.

Continuous values enter centred and scaled by the federation's pooled mean and standard
deviation (:class:`Frame`: public numbers every site is sent), so the sums stay of the
order of the row counts and their floating-point rounding small; the tests are invariant
to these affine changes. A site whose table lacks a variable of ``V`` contributes zeros,
and so does a site with fewer than ``min_rows`` rows complete on ``V`` (it withholds a
statistic of so few rows; docs/fedfci.md, "What a site reveals"): the pooled test is then
the test on the rows of the other sites, as test-wise deletion over the concatenated
table reads a block of missing values.

One exchange carries a whole batch of requests: :class:`Plan` lays every request's
statistic out in two vectors, the counts (``int64``, exact under secure aggregation) and
the sums (``float64``), identically at every site and at the server, so the vectors of
the sites can be added element by element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError

__all__ = [
    "CELLS",
    "MOMENTS",
    "Frame",
    "Plan",
    "Request",
    "SiteTable",
    "site_statistics",
]

CELLS = "cells"
MOMENTS = "moments"
Form = Literal["cells", "moments"]
#: The forms in the order of their codes in a :class:`Plan`'s ``forms``.
_FORMS = (CELLS, MOMENTS)


@dataclass(frozen=True)
class Frame:
    """What the sites and the server agree on before any statistic is computed.

    Attributes
    ----------
    names
        The federation's variables (the union of the sites'), in a fixed order; a
        request names variables by their index here.
    discrete
        Whether the test reads each variable as categories (integer codes
        ``0..cards-1``) or as a number.
    cards
        Each discrete variable's number of levels (1 for a number).
    centre, scale
        Each numeric variable's pooled mean and standard deviation (0 and 1 for a
        discrete one): a site sends sums of ``(value - centre) / scale``.
    """

    names: tuple[str, ...]
    discrete: tuple[bool, ...]
    cards: tuple[int, ...]
    centre: tuple[float, ...]
    scale: tuple[float, ...]

    def width(self, v: int) -> int:
        """Columns of variable ``v`` in a moments design: its levels, or 1."""
        return self.cards[v] if self.discrete[v] else 1

    def cells(self, variables: Sequence[int]) -> int:
        """Cells of the discrete variables among ``variables``."""
        return math.prod(self.cards[v] for v in variables if self.discrete[v])


@dataclass(frozen=True)
class Request:
    """One statistic: of ``form`` over the sorted variable indices ``variables``."""

    variables: tuple[int, ...]
    form: Form


def _triangle(k: int) -> int:
    return k * (k + 1) // 2


class Plan:
    """Where each request's statistic sits in the two vectors of an exchange.

    For a ``cells`` request with ``m`` cells and ``a`` continuous variables: ``m``
    counts, then ``m·a`` sums (cell-major) and ``m·a(a+1)/2`` products (each cell's upper
    triangle, row-major). For a ``moments`` request with a design of ``w`` columns: one
    count, ``w`` sums and ``w(w+1)/2`` products.

    A plan is three integer arrays (what a request message carries): each request's
    number of variables (``sizes``), the variables one request after the other
    (``members``) and each request's form (``forms``: 0 cells, 1 moments); the offsets
    are computed from them and the frame at once.
    """

    def __init__(
        self,
        frame: Frame,
        sizes: NDArray[np.int64],
        members: NDArray[np.int64],
        forms: NDArray[np.int64],
        requests: Sequence[Request] | None = None,
    ) -> None:
        self.frame = frame
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.members = np.asarray(members, dtype=np.int64)
        self.forms = np.asarray(forms, dtype=np.int64)
        self._requests = None if requests is None else tuple(requests)
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)))
        r = len(self.sizes)
        if r == 0:
            self.count_offsets = self.sum_offsets = np.zeros(1, dtype=np.int64)
            self.counts_only = np.zeros(0, dtype=bool)
            return
        discrete = np.asarray(frame.discrete, dtype=bool)[self.members]
        cards = np.asarray(frame.cards, dtype=np.int64)[self.members]
        heads = self.starts[:-1]
        cells = np.multiply.reduceat(np.where(discrete, cards, 1), heads)
        numeric = np.add.reduceat((~discrete).astype(np.int64), heads)
        width = np.add.reduceat(np.where(discrete, cards, 1), heads)
        moments = self.forms == _FORMS.index(MOMENTS)
        n_counts = np.where(moments, 1, cells)
        n_sums = np.where(
            moments,
            width + width * (width + 1) // 2,
            cells * (numeric + numeric * (numeric + 1) // 2),
        )
        self.count_offsets = np.concatenate(([0], np.cumsum(n_counts)))
        self.sum_offsets = np.concatenate(([0], np.cumsum(n_sums)))
        #: Whether each request counts cells of discrete variables only (G², χ²).
        self.counts_only = ~moments & (numeric == 0)

    @classmethod
    def of(cls, frame: Frame, requests: Sequence[Request]) -> Plan:
        """The plan of ``requests``."""
        sizes = np.array([len(r.variables) for r in requests], dtype=np.int64)
        members = np.array([v for r in requests for v in r.variables], dtype=np.int64)
        forms = np.array([_FORMS.index(r.form) for r in requests], dtype=np.int64)
        return cls(frame, sizes, members, forms, requests)

    @property
    def requests(self) -> tuple[Request, ...]:
        """The requests, in order."""
        if self._requests is None:
            self._requests = tuple(
                Request(self.variables(k), _FORMS[int(f)])  # type: ignore[arg-type]
                for k, f in enumerate(self.forms.tolist())
            )
        return self._requests

    def variables(self, k: int) -> tuple[int, ...]:
        """Request ``k``'s variables."""
        return tuple(self.members[self.starts[k] : self.starts[k + 1]].tolist())

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def n_counts(self) -> int:
        """Length of the counts vector."""
        return int(self.count_offsets[-1])

    @property
    def n_sums(self) -> int:
        """Length of the sums vector."""
        return int(self.sum_offsets[-1])

    def counts_of(self, k: int, counts: NDArray[np.int64]) -> NDArray[np.int64]:
        """Request ``k``'s counts in the counts vector."""
        return counts[self.count_offsets[k] : self.count_offsets[k + 1]]

    def sums_of(self, k: int, sums: NDArray[np.float64]) -> NDArray[np.float64]:
        """Request ``k``'s sums in the sums vector."""
        return sums[self.sum_offsets[k] : self.sum_offsets[k + 1]]


class SiteTable:
    """One site's rows over the federation's :class:`Frame`, ready for statistics.

    Parameters
    ----------
    rows
        The site's table: integer codes for discrete variables, numbers for the others;
        NaN is missing, and so is ``-1`` in an integer column (the data layer's code of
        a missing level); columns named as in the frame, a subset of it.
    frame
        The federation's frame.
    min_rows
        The fewest rows complete on a request's variables for this site to contribute
        to it (fewer: zeros).

    Raises
    ------
    DataError
        If a discrete column holds a code outside ``0..cards-1`` or a non-integer value.
    """

    def __init__(self, rows: pd.DataFrame, frame: Frame, min_rows: int = 1) -> None:
        self.frame = frame
        self.min_rows = int(min_rows)
        n, d = len(rows), len(frame.names)
        self.n = n
        values = np.zeros((n, d), dtype=np.float64)
        observed = np.zeros((n, d), dtype=bool)
        present = np.array([name in rows.columns for name in frame.names])
        columns = [name for name in frame.names if name in rows.columns]
        at = np.flatnonzero(present)
        if columns:
            own = rows[columns]
            raw = own.to_numpy(dtype=np.float64, na_value=np.nan)
            seen = ~np.isnan(raw)
            coded = np.array([own[c].dtype.kind in "iub" for c in columns])
            seen[:, coded] &= raw[:, coded] != -1  # -1: the code of a missing level
            discrete = np.asarray(frame.discrete, dtype=bool)[at]
            cards = np.asarray(frame.cards, dtype=np.float64)[at]
            codes = np.where(seen, raw, 0.0)
            bad = discrete & (
                ((codes != np.round(codes)) | (codes < 0) | (codes >= cards)) & seen
            ).any(axis=0)
            if bad.any():
                name, top = columns[int(np.flatnonzero(bad)[0])], int(cards[bad][0]) - 1
                raise DataError(
                    f"variable {name!r} holds a value outside its codes 0..{top}; every "
                    "site must code it with the federation's levels"
                )
            centre = np.where(discrete, 0.0, np.asarray(frame.centre)[at])
            scale = np.where(discrete, 1.0, np.asarray(frame.scale)[at])
            values[:, at] = np.where(seen, (codes - centre) / scale, 0.0)
            observed[:, at] = seen
        self.values = values
        self.observed = observed
        #: Whether the site's table has each variable of the frame.
        self.present = present

    def complete(self, variables: Sequence[int]) -> NDArray[np.bool_] | None:
        """The rows complete on ``variables``, or ``None`` when this site does not
        contribute (a variable it lacks, or fewer than ``min_rows`` such rows)."""
        idx = list(variables)
        if not self.present[idx].all():
            return None
        rows = self.observed[:, idx].all(axis=1)
        return rows if int(rows.sum()) >= self.min_rows else None


def site_statistics(table: SiteTable, plan: Plan) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The counts and sums vectors of ``plan`` on one site's rows (module docstring).

    The cells of requests over discrete variables only (G², χ²) are counted in
    batches: the rows' cell codes of many requests of one size offset by each
    request's place in the counts vector, counted by one ``bincount``; the others one
    request at a time.
    """
    counts = np.zeros(plan.n_counts, dtype=np.int64)
    sums = np.zeros(plan.n_sums, dtype=np.float64)
    if not len(plan):
        return counts, sums
    frame = plan.frame
    batched = plan.counts_only
    for size in np.unique(plan.sizes[batched]).tolist():
        ks = np.flatnonzero(batched & (plan.sizes == size))
        _count_cells(table, plan, ks, int(size), counts)
    for k in np.flatnonzero(~batched).tolist():
        variables = plan.variables(k)
        rows = table.complete(variables)
        if rows is None:
            continue
        c = plan.counts_of(k, counts)
        s = plan.sums_of(k, sums)
        values = table.values[rows]
        if plan.forms[k] == _FORMS.index(CELLS):
            _cells(values, frame, variables, c, s)
        else:
            _moments(values, frame, variables, c, s)
    return counts, sums


#: Row codes one ``bincount`` of :func:`_count_cells` counts at most.
_BATCH_CODES = 4_000_000


def _count_cells(
    table: SiteTable, plan: Plan, ks: NDArray[np.intp], size: int, counts: NDArray[np.int64]
) -> None:
    """The counts of the requests ``ks`` (cells of ``size`` discrete variables only), in
    batches of at most :data:`_BATCH_CODES` row codes."""
    n = table.n
    if n == 0 or n < table.min_rows:
        return
    index = plan.starts[ks][:, None] + np.arange(size)
    members = plan.members[index]  # (requests, size)
    keep = table.present[members].all(axis=1)
    members, ks = members[keep], ks[keep]
    if not len(ks):
        return
    cards = np.asarray(plan.frame.cards, dtype=np.int64)
    dtype = np.int32 if plan.n_counts < 2**31 else np.int64
    codes_all = np.ascontiguousarray(table.values.T).astype(dtype)  # (variables, n)
    missing = not table.observed[:, table.present].all()
    step = max(1, _BATCH_CODES // n)
    for start in range(0, len(ks), step):
        part = members[start : start + step]
        codes = codes_all[part[:, 0]]  # (requests, n), a copy
        for col in range(1, size):
            codes *= cards[part[:, col]].astype(dtype)[:, None]
            codes += codes_all[part[:, col]]
        codes += np.asarray(plan.count_offsets[ks[start : start + step]], dtype=dtype)[:, None]
        if missing:
            rows = table.observed.T[part].all(axis=1)  # (requests, n)
            rows &= (rows.sum(axis=1) >= table.min_rows)[:, None]
            flat = codes[rows]
        else:
            flat = codes.ravel()
        counts += np.bincount(flat, minlength=counts.shape[0])


def _cells(
    values: NDArray[np.float64],
    frame: Frame,
    variables: tuple[int, ...],
    counts: NDArray[np.int64],
    sums: NDArray[np.float64],
) -> None:
    """Fill one ``cells`` statistic (module docstring) from the complete rows ``values``."""
    discrete = [v for v in variables if frame.discrete[v]]
    numeric = [v for v in variables if not frame.discrete[v]]
    m = counts.shape[0]
    cell = np.zeros(values.shape[0], dtype=np.int64)
    for v in discrete:
        cell = cell * frame.cards[v] + values[:, v].astype(np.int64)
    counts += np.bincount(cell, minlength=m)
    a = len(numeric)
    if not a:
        return
    x = values[:, numeric]
    first = np.zeros((m, a))
    for p in range(a):
        first[:, p] = np.bincount(cell, weights=x[:, p], minlength=m)
    upper = np.triu_indices(a)
    second = np.zeros((m, len(upper[0])))
    for q, (p, r) in enumerate(zip(*upper, strict=True)):
        second[:, q] = np.bincount(cell, weights=x[:, p] * x[:, r], minlength=m)
    sums[: m * a] += first.ravel()
    sums[m * a :] += second.ravel()


def design(
    values: NDArray[np.float64], frame: Frame, variables: Sequence[int]
) -> NDArray[np.float64]:
    """The moments design of ``variables`` on some rows: one column per numeric variable,
    one indicator per level of a discrete one."""
    columns = []
    for v in variables:
        if frame.discrete[v]:
            codes = values[:, v].astype(np.int64)
            columns.append((codes[:, None] == np.arange(frame.cards[v])).astype(np.float64))
        else:
            columns.append(values[:, v : v + 1])
    return np.hstack(columns) if columns else np.zeros((values.shape[0], 0))


def _moments(
    values: NDArray[np.float64],
    frame: Frame,
    variables: tuple[int, ...],
    counts: NDArray[np.int64],
    sums: NDArray[np.float64],
) -> None:
    """Fill one ``moments`` statistic (module docstring) from the complete rows ``values``."""
    x = design(values, frame, variables)
    w = x.shape[1]
    counts[0] += x.shape[0]
    sums[:w] += x.sum(axis=0)
    sums[w:] += (x.T @ x)[np.triu_indices(w)]
