"""The CI tests' p-values from sufficient statistics (:mod:`~fedstruct.discovery.statistics`).

Each function here computes, from the statistics of the rows complete on a test's
variables ``V = {X, Y} ∪ Z``, the same ``(p-value, skipped)`` as the one-process test
computes from those rows (the same formulas, rules and degrees of freedom; the sums run
in another order, so the values agree to floating-point rounding, far below 1e-9):

- :func:`table_test`: G² and Pearson χ² of :mod:`~fedstruct.discovery.discrete` from the
  counts of ``V``'s cells (Agresti 2002, §3.2.1 and §6.3);
- :func:`fisher_z_test`: Fisher's z of :mod:`~fedstruct.discovery.fisherz` from the
  moments of ``V``'s columns (Kalisch & Bühlmann 2007, §2.2);
- :func:`degenerate_test`: the degenerate-Gaussian likelihood ratio of
  :mod:`~fedstruct.discovery.degenerate` (Andrews, Ramsey & Cooper 2019) from the moments
  of ``V``'s design, every level's indicator included: the levels seen on the rows
  decide the embedding (the smallest one is the reference), as the one-process test
  embeds them;
- :func:`conditional_gaussian_test`: the conditional-Gaussian likelihood ratio of
  :mod:`~fedstruct.discovery.conditional_gaussian` (Lauritzen & Wermuth 1989; Andrews,
  Ramsey & Cooper 2018, §3) from the cells' counts, sums and products: every
  log-likelihood ``ℓ(S)`` of ``S ⊆ V`` reads the cells of ``S``'s discrete part, which are
  unions of ``V``'s cells.

Numeric columns arrive centred and scaled (:class:`~fedstruct.discovery.statistics.Frame`):
Fisher-z and the degenerate test read correlations, which such changes leave alone; the
conditional-Gaussian test reads standardised columns, exactly what the frame's pooled
mean and standard deviation make of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from fedstruct.discovery.conditional_gaussian import LOG_2PI_E, covariance_logdets
from fedstruct.discovery.degenerate import likelihood_ratio
from fedstruct.discovery.discrete import (
    SmallSampleRule,
    batch_statistics,
    rule_performs,
    skipped_pvalue,
    xlogx_table,
)
from fedstruct.discovery.fisherz import fisher_z_pvalue
from fedstruct.discovery.statistics import Frame

__all__ = [
    "Moments",
    "conditional_gaussian_test",
    "degenerate_test",
    "fisher_z_test",
    "moments_of",
    "table_test",
    "table_tests",
]

Key = tuple[int, int, tuple[int, ...]]
#: A numeric column whose variance is below this share of its mean square is constant
#: on the rows (exact zero in the rows' arithmetic; rounding in the sums' arithmetic).
_CONSTANT = 1e-10


def table_test(
    counts: NDArray[np.int64],
    variables: Sequence[int],
    key: Key,
    cards: Sequence[int],
    *,
    statistic: str,
    dof: str,
    rule: SmallSampleRule,
    evidence: float = 1.0,
    xlogx: NDArray[np.float64] | None = None,
) -> tuple[float, bool]:
    """G² or χ² of ``key`` from the counts of the cells of ``variables`` (sorted, all
    discrete, mixed radix: :mod:`~fedstruct.discovery.statistics`), as
    :class:`~fedstruct.discovery.discrete.DiscreteTest` computes it on those rows
    (:func:`table_tests` of one test)."""
    [value] = table_tests(
        [(key, counts, variables)],
        cards,
        statistic=statistic,
        dof=dof,
        rule=rule,
        evidence=evidence,
        xlogx=xlogx,
    )
    return value


def table_tests(
    items: Sequence[tuple[Key, NDArray[np.int64], Sequence[int]]],
    cards: Sequence[int],
    *,
    statistic: str,
    dof: str,
    rule: SmallSampleRule,
    evidence: float = 1.0,
    xlogx: NDArray[np.float64] | None = None,
) -> list[tuple[float, bool]]:
    """:func:`table_test` of many tests at once: ``items`` holds each test's key, the
    counts of its variables' cells and those variables (sorted). The tables of one shape
    are stacked and their statistics computed together
    (:func:`~fedstruct.discovery.discrete.batch_statistics`: the same counts, statistic
    and degrees of freedom, summed in another order)."""
    out: list[tuple[float, bool] | None] = [None] * len(items)
    groups: dict[tuple[int, int, int], list[tuple[int, NDArray[np.int64]]]] = {}
    for k, (key, counts, variables) in enumerate(items):
        i, j, z = key
        table = np.asarray(counts, dtype=np.int64).reshape([cards[v] for v in variables])
        n = int(table.sum())
        if not rule_performs(rule, cards, i, j, z, n):
            out[k] = (skipped_pvalue(rule, n), True)
            continue
        position = {v: a for a, v in enumerate(variables)}
        order = [position[v] for v in z] + [position[i], position[j]]
        strata = table.transpose(order).reshape(-1, cards[i], cards[j])
        groups.setdefault(strata.shape, []).append((k, strata))
    top = max((int(np.sum(c)) for _, c, _ in items), default=0)
    if xlogx is None or len(xlogx) <= top:
        xlogx = xlogx_table(top)
    for members in groups.values():
        stacked = np.stack([t for _, t in members])
        stat, df = batch_statistics(stacked, statistic, xlogx)
        if dof == "plain":
            df = np.array(
                [
                    (cards[items[k][0][0]] - 1)
                    * (cards[items[k][0][1]] - 1)
                    * math.prod(cards[v] for v in items[k][0][2])
                    for k, _ in members
                ]
            )
        weighed = stat if evidence == 1.0 else stat * evidence
        pvalues = np.where(df > 0, chdtrc(np.maximum(df, 1), weighed), 1.0).tolist()
        for (k, _), p in zip(members, pvalues, strict=True):
            out[k] = (float(p), False)
    return out  # type: ignore[return-value]


class Moments:
    """A moments statistic read back: the row count, each column's mean and the
    columns' covariance (maximum likelihood: divided by the rows).

    Parameters
    ----------
    count
        The rows.
    sums
        The columns' sums, then the upper triangle of the products' sums (row-major).
    """

    def __init__(self, count: int, sums: NDArray[np.float64]) -> None:
        w = int((math.isqrt(8 * len(sums) + 9) - 3) // 2)  # len = w + w(w+1)/2
        self.n = int(count)
        self.width = w
        n = max(self.n, 1)
        first = np.asarray(sums[:w], dtype=np.float64)
        second = np.zeros((w, w))
        second[np.triu_indices(w)] = sums[w:]
        second = second + np.triu(second, 1).T
        self.mean = first / n
        self.square = np.diagonal(second).copy() / n
        self.covariance = second / n - np.outer(self.mean, self.mean)

    @cached_property
    def constants(self) -> NDArray[np.bool_]:
        """Whether each column has (numerically) one value on the rows."""
        variance = np.diagonal(self.covariance)
        return variance <= _CONSTANT * np.maximum(self.square, 1e-300)

    def constant(self, columns: Sequence[int]) -> bool:
        """Whether any of ``columns`` has (numerically) one value on the rows."""
        return bool(self.constants[list(columns)].any())

    @cached_property
    def full_correlation(self) -> NDArray[np.float64]:
        """The correlation matrix of every column (computed once)."""
        sd = np.sqrt(np.diagonal(self.covariance))
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.covariance / np.outer(sd, sd)

    def correlation(self, columns: Sequence[int]) -> NDArray[np.float64]:
        """The correlation matrix of ``columns``."""
        idx = list(columns)
        return self.full_correlation[np.ix_(idx, idx)]


def moments_of(count: int, sums: NDArray[np.float64]) -> Moments:
    """:class:`Moments` of one moments statistic."""
    return Moments(count, sums)


def fisher_z_test(
    moments: Moments,
    columns: Sequence[int],
    key: Key,
    names: Sequence[str],
    evidence: float = 1.0,
) -> tuple[float, bool]:
    """Fisher's z of ``key`` from ``moments`` whose column ``columns[v]`` is variable
    ``v`` (of the key), as :class:`~fedstruct.discovery.fisherz.FisherZTest` computes it
    on those rows: skipped (dependent) with too few rows or a variable constant on them.

    Raises
    ------
    DataError
        If the correlation sub-matrix is singular (collinear variables).
    """
    i, j, z = key
    at = (columns[i], columns[j], tuple(columns[k] for k in z))
    if moments.n - len(z) - 3 < 1:
        return 0.0, True
    if moments.constant((at[0], at[1], *at[2])):
        return 0.0, True
    return fisher_z_pvalue(moments.full_correlation, moments.n, key, at, names, evidence)


def degenerate_test(
    moments: Moments,
    blocks: Sequence[Sequence[int]],
    discrete: Sequence[bool],
    key: Key,
    evidence: float = 1.0,
) -> tuple[float, bool]:
    """The degenerate-Gaussian likelihood ratio of ``key`` from ``moments`` over a
    design where ``blocks[v]`` are variable ``v``'s columns (its levels' indicators, or
    its one column), as
    :class:`~fedstruct.discovery.degenerate.DegenerateGaussianTest` computes it on those
    rows: each discrete variable is embedded by the indicators of its levels seen there
    but the smallest; skipped (dependent) on fewer than two rows, a variable with one
    value on them, no residual degree of freedom, or a singular sub-matrix."""
    i, j, z = key
    if moments.n < 2:
        return 0.0, True
    embedded: dict[int, list[int]] = {}
    for v in (i, j, *z):
        columns = list(blocks[v])
        if discrete[v]:
            seen = [c for c in columns if moments.mean[c] > 0]
            if len(seen) < 2:
                return 0.0, True
            embedded[v] = seen[1:]
        else:
            if moments.constant(columns):
                return 0.0, True
            embedded[v] = columns
    widths = {v: len(c) for v, c in embedded.items()}
    if moments.n - widths[i] - widths[j] - sum(widths[k] for k in z) - 1 < 1:
        return 0.0, True
    order = sorted(embedded)
    columns = [c for v in order for c in embedded[v]]
    corr = moments.correlation(columns)
    place: dict[int, list[int]] = {}
    start = 0
    for v in order:
        place[v] = list(range(start, start + widths[v]))
        start += widths[v]

    def logdet(variables: Sequence[int]) -> float:
        if not variables:
            return 0.0
        idx = [c for v in sorted(variables) for c in place[v]]
        try:
            chol = np.linalg.cholesky(corr[np.ix_(idx, idx)])
        except np.linalg.LinAlgError:
            return math.nan
        return 2.0 * float(np.log(np.diagonal(chol)).sum())

    return likelihood_ratio(
        evidence,
        moments.n,
        widths[i] * widths[j],
        logdet((i, *z)) + logdet((j, *z)) - logdet((i, j, *z)) - logdet(z),
    )


class _Cells:
    """The cells statistic of ``V`` read back: per cell of ``V``'s discrete part, the
    row count, the numeric columns' sums and their products' sums."""

    def __init__(
        self,
        counts: NDArray[np.int64],
        sums: NDArray[np.float64],
        shape: Sequence[int],
        a: int,
    ) -> None:
        m = len(counts)
        self.shape = tuple(shape)
        self.counts = np.asarray(counts, dtype=np.float64)
        self.first = np.asarray(sums[: m * a], dtype=np.float64).reshape(m, a)
        upper = np.asarray(sums[m * a :], dtype=np.float64).reshape(m, a * (a + 1) // 2)
        second = np.zeros((m, a, a))
        rows, cols = np.triu_indices(a)
        second[:, rows, cols] = upper
        second[:, cols, rows] = upper
        self.second = second

    def restricted(self, keep: NDArray[np.bool_]) -> _Cells:
        """The same cells with only the rows of the cells ``keep`` marks."""
        out = object.__new__(_Cells)
        out.shape = self.shape
        out.counts = np.where(keep, self.counts, 0.0)
        out.first = self.first * keep[:, None]
        out.second = self.second * keep[:, None, None]
        return out

    def margin(self, axes: Sequence[int]) -> tuple[NDArray, NDArray, NDArray]:
        """Counts, sums and products of the cells of the discrete axes ``axes`` (the
        others summed out), flattened, empty cells dropped."""
        drop = tuple(k for k in range(len(self.shape)) if k not in axes)
        a = self.first.shape[1]
        full = self.shape
        counts = self.counts.reshape(full).sum(axis=drop).ravel()
        m = len(counts)
        first = self.first.reshape(*full, a).sum(axis=drop).reshape(m, a)
        second = self.second.reshape(*full, a, a).sum(axis=drop).reshape(m, a, a)
        seen = counts > 0
        return counts[seen], first[seen], second[seen]


def conditional_gaussian_test(
    counts: NDArray[np.int64],
    sums: NDArray[np.float64],
    variables: Sequence[int],
    frame: Frame,
    key: Key,
    *,
    pooled: bool = True,
    min_cell_rows: int = 5,
    evidence: float = 1.0,
) -> tuple[float, bool]:
    """The conditional-Gaussian likelihood ratio of ``key`` from the cells statistic of
    ``variables`` (sorted), as
    :class:`~fedstruct.discovery.conditional_gaussian.ConditionalGaussianTest` computes
    it on those rows (its module docstring: the log-likelihood, the degrees of freedom,
    and, per cell, the rows of too small cells left out of all four fits)."""
    discrete = [v for v in variables if frame.discrete[v]]
    numeric = [v for v in variables if not frame.discrete[v]]
    cells = _Cells(counts, sums, [frame.cards[v] for v in discrete] or [1], len(numeric))
    i, j, z = key
    if not pooled:
        kept = _large_cells(cells, discrete, numeric, frame, key, min_cell_rows)
        if kept is None:
            return 0.0, True
        cells = kept
    n = float(cells.counts.sum())
    if n == 0:
        return 0.0, True
    total_first = cells.first.sum(axis=0)
    total_second = cells.second.sum(axis=0)
    mean = total_first / n
    cov = total_second / n - np.outer(mean, mean)
    axis = {v: k for k, v in enumerate(discrete)}
    column = {v: k for k, v in enumerate(numeric)}

    def fit(subset: Sequence[int]) -> tuple[float, int, int]:
        axes = [axis[v] for v in sorted(subset) if v in axis]
        cols = [column[v] for v in sorted(subset) if v in column]
        c, first, second = cells.margin(axes) if axes else _one_cell(cells)
        m, a = len(c), len(cols)
        value = float(np.dot(c, np.log(c / n))) if axes else 0.0
        if cols:
            value += _gaussian(c, first, second, cols, mean, cov, n, pooled)
        if pooled:
            return value, m * a + a * (a + 1) // 2 + m - 1, m + a
        return value, m * (a + a * (a + 1) // 2) + m - 1, m + a

    full = fit((i, j, *z))
    given, fit_x, fit_y = fit(z), fit((i, *z)), fit((j, *z))
    if pooled and n - full[2] < 1:
        return 0.0, True
    stat = 2.0 * (full[0] + given[0] - fit_x[0] - fit_y[0])
    if evidence != 1.0:
        stat *= evidence
    df = full[1] + given[1] - fit_x[1] - fit_y[1]
    if math.isnan(stat) or df <= 0:
        return 0.0, True
    return float(chdtrc(df, max(stat, 0.0))), False


def _one_cell(cells: _Cells) -> tuple[NDArray, NDArray, NDArray]:
    """Every row in one cell."""
    return (
        np.array([cells.counts.sum()]),
        cells.first.sum(axis=0)[None],
        cells.second.sum(axis=0)[None],
    )


def _gaussian(
    counts: NDArray,
    first: NDArray,
    second: NDArray,
    cols: list[int],
    mean: NDArray,
    cov: NDArray,
    n: float,
    pooled: bool,
) -> float:
    """``-½ Σ_k n_k [a (1 + log 2π) + log det Σ_k]`` over the cells (``Σ_k = W`` pooled,
    the within-cell covariance: the total one less the covariance of the cell means)."""
    a = len(cols)
    if len(counts) == 1:
        logdets = covariance_logdets(cov[np.ix_(cols, cols)][None], a)
    elif pooled:
        deviations = first[:, cols] / counts[:, None] - mean[cols]
        between = (deviations * (counts / n)[:, None]).T @ deviations
        within = cov[np.ix_(cols, cols)] - between
        logdets = covariance_logdets(within[None], a)
        if logdets is None:
            return math.nan
        return -0.5 * n * float(a * LOG_2PI_E + logdets[0])
    else:
        means = first[:, cols] / counts[:, None]
        covs = second[:, cols][:, :, cols] / counts[:, None, None] - np.einsum(
            "kp,kq->kpq", means, means
        )
        logdets = covariance_logdets(covs, a)
    if logdets is None:
        return math.nan
    return -0.5 * float(np.dot(counts, a * LOG_2PI_E + logdets))


def _large_cells(
    cells: _Cells,
    discrete: list[int],
    numeric: list[int],
    frame: Frame,
    key: Key,
    min_cell_rows: int,
) -> _Cells | None:
    """Per-cell covariance: the cells of too few rows left out, on the finest partition
    where the test fits a Gaussian (the one-process test's ``_large_cells``)."""
    i, j, z = key
    if frame.discrete[j] and not frame.discrete[i]:
        i, j = j, i
    z_discrete = tuple(v for v in z if frame.discrete[v])
    z_continuous = len(z) - len(z_discrete)
    if frame.discrete[j]:
        if not z_continuous:
            return cells
        finest, widest = (*z_discrete, i, j), z_continuous
    elif frame.discrete[i]:
        finest, widest = (*z_discrete, i), z_continuous + 1
    else:
        finest, widest = z_discrete, z_continuous + 2
    need = max(min_cell_rows, widest + 1)
    axes = sorted(discrete.index(v) for v in finest)
    shape = cells.shape
    drop = tuple(k for k in range(len(shape)) if k not in axes)
    part = cells.counts.reshape(shape).sum(axis=drop, keepdims=True)
    seen = part > 0
    if not seen.any():
        return None
    if part[seen].min() >= need:
        return cells
    keep = np.broadcast_to(part >= need, shape).ravel() & (cells.counts > 0)
    return cells.restricted(keep) if keep.any() else None
