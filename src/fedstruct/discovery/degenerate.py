"""The degenerate-Gaussian likelihood-ratio test of conditional independence, for mixed data.

Andrews, Ramsey & Cooper (2019), "Learning high-dimensional directed acyclic graphs
with mixed data-types", PMLR 104 (KDD Workshop on Causal Discovery), 4-21 — the test
Tetrad calls DG-LRT. A categorical variable with ``k`` observed levels is embedded as
``k - 1`` indicator columns (the smallest observed code is the reference level and
gets no column); a continuous or ordinal variable is one column (an ordinal variable's
codes or level values are taken as scores). Every variable ``V`` is then a block of
``p_V`` columns, and the expanded columns are treated as jointly Gaussian: the
"degenerate" Gaussian of the paper, whose indicator blocks are exactly the discrete
variables.

For ``X ⊥ Y | Z`` the test compares, by their likelihood ratio, the Gaussian
regression of ``Y``'s block on ``Z``'s columns with its regression on ``X``'s and
``Z``'s (Tetrad's direction). With maximum-likelihood residual covariances ``S`` the
statistic is

    ``G = n [log det S(Y | Z) - log det S(Y | X, Z)]``
    ``  = n [log det C(X,Z) + log det C(Y,Z) - log det C(X,Y,Z) - log det C(Z)]``

where ``C(A)`` is the sample covariance (here: correlation) matrix of the columns of the
variables ``A`` (Schur complements: ``det C(A,Z) = det C(Z) det S(A | Z)``). The second
form is symmetric in ``X`` and ``Y``: it is ``2 n`` times the Gaussian conditional mutual
information, so regressing ``X`` on ``Y`` gives the same value and the "two directions"
of the paper coincide. Under the null hypothesis ``G`` is asymptotically χ² with
``df = p_X · p_Y`` degrees of freedom (the number of regression coefficients the
alternative adds; Wilks 1938, Anderson 2003 §8.4); the p-value is ``chdtrc(df, G)``.

On continuous variables alone ``G = -n log(1 - r²)`` with ``r`` the partial
correlation of Fisher-z's test and ``df = 1``: the same partial correlation, a
likelihood-ratio calibration instead of Fisher's ``atanh`` (the two agree
asymptotically; tests/discovery/test_degenerate.py checks the closed form).

What is shared between tests: the correlation matrix of every expanded column is
computed once (in row chunks, without materialising the whole expansion), each test
works on its sub-blocks, and the log-determinants of the sub-matrices are cached per
variable set (PC and FCI test many pairs given one ``Z``, and one pair given many
``Z``, so ``log det C(Z)``, ``C(X,Z)`` and ``C(Y,Z)`` recur).

A test whose regression cannot be fitted is skipped and treated as dependent (p = 0;
counted in :attr:`~fedstruct.discovery.citest.CITest.n_skipped`): no residual degrees
of freedom (``n - p_X - p_Y - Σ p_Z - 1 < 1``, as Fisher-z), or a singular
sub-matrix (a column that is an exact linear function of others). Unlike Fisher-z,
which raises on a singular matrix, the mixed test skips: with indicator columns a
small sample makes exact collinearity likely by chance (a rare category seen only in
the rows of one level of another variable), and a copied column, the other cause, is
indeed dependent on its original.

Missing values (``missing="testwise"``: NaN, or ``-1`` in an integer column): a test
whose variables are observed in every row works as above; any other test embeds its
variables ``(X, Y, Z)`` afresh on the rows complete on all of them (the levels seen
there; cached per variable set, so ``a, b | c`` and ``a, c | b`` share the work) and
uses that number of rows as ``n``: the p-value of the same test on those rows alone
(:mod:`fedstruct.discovery.missing`). A variable with a single value on those rows
makes the test skipped (dependent), as a constant column would be an error.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike, as_matrix
from fedstruct.discovery.kinds import resolve_kinds
from fedstruct.discovery.missing import RowMasks
from fedstruct.errors import DataError

__all__ = ["DegenerateGaussianTest", "category_levels", "embedding", "likelihood_ratio"]

#: Rows expanded at a time when the covariance matrix is accumulated.
_CHUNK_ROWS = 1 << 15
#: Log-determinants kept before the cache is emptied (a long run keeps its memory bounded).
_LOGDET_CACHE = 1 << 18
#: Embeddings of variable sets on their complete rows kept (test-wise deletion).
_SUBSET_CACHE = 4096


def category_levels(column: NDArray, name: str, where: str = "") -> NDArray:
    """The sorted distinct values of a categorical column.

    Raises
    ------
    DataError
        If a value is not a non-negative integer code (naming the variable and the fix).
    """
    observed = np.unique(column)
    bad = (observed != np.round(observed)) | (observed < 0)
    if bad.any():
        raise DataError(
            f"{where}variable {name!r} is categorical but holds the value {observed[bad][0]:g}; "
            "categorical columns need codes 0..k-1: recode it, or give its kind as "
            "continuous (kinds={...: 'continuous'})"
        )
    return observed


def embedding(
    values: NDArray, kinds: Sequence[str], names: Sequence[str], where: str = ""
) -> tuple[list[tuple[int, ...]], list[NDArray[np.float64] | None]]:
    """Each variable's block of expanded columns, and the levels its indicators mark.

    Parameters
    ----------
    values
        The ``(n, d)`` data.
    kinds
        Each column's kind (``"categorical"``, ``"ordinal"`` or ``"continuous"``).
    names, where
        For error messages.

    Returns
    -------
    blocks
        ``blocks[v]``: the indices of variable ``v``'s expanded columns.
    levels
        ``levels[v]``: the codes whose indicators make up a categorical variable's block
        (every observed level but the smallest), ``None`` for a single-column variable.

    Raises
    ------
    DataError
        If a categorical column holds non-integer or negative values.
    """
    blocks: list[tuple[int, ...]] = []
    levels: list[NDArray[np.float64] | None] = []
    width = 0
    for col, kind in enumerate(kinds):
        if kind != "categorical":
            blocks.append((width,))
            levels.append(None)
            width += 1
            continue
        observed = category_levels(values[:, col], names[col], where)
        blocks.append(tuple(range(width, width + len(observed) - 1)))
        levels.append(observed[1:].astype(np.float64))
        width += len(observed) - 1
    return blocks, levels


def _expand(
    values: NDArray, levels: Sequence[NDArray[np.float64] | None], width: int
) -> NDArray[np.float64]:
    """The expanded columns of some rows: indicators for categorical variables."""
    out = np.empty((values.shape[0], width), dtype=np.float64)
    k = 0
    for col, marks in enumerate(levels):
        if marks is None:
            out[:, k] = values[:, col]
            k += 1
        else:
            out[:, k : k + len(marks)] = values[:, col, None] == marks
            k += len(marks)
    return out


def expanded_correlation(
    values: NDArray, levels: Sequence[NDArray[np.float64] | None], width: int
) -> NDArray[np.float64]:
    """The correlation matrix of the expanded columns, accumulated over row chunks."""
    n = values.shape[0]
    means = np.zeros(width)
    for start in range(0, n, _CHUNK_ROWS):
        means += _expand(values[start : start + _CHUNK_ROWS], levels, width).sum(axis=0)
    means /= n
    cross = np.zeros((width, width))
    for start in range(0, n, _CHUNK_ROWS):
        block = _expand(values[start : start + _CHUNK_ROWS], levels, width) - means
        cross += block.T @ block
    sd = np.sqrt(np.diag(cross))
    return cross / np.outer(sd, sd)


class DegenerateGaussianTest(CITest):
    """The degenerate-Gaussian likelihood-ratio test (module docstring) on mixed data.

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array: categorical columns as integer
        codes, continuous and ordinal columns as numbers.
    names
        Variable names for an array (default ``X0, X1, ...``).
    kinds
        Name -> kind (``"categorical"``/``"binary"``, ``"ordinal"``,
        ``"continuous"``/``"real"``) for some or all variables; the others get their
        dtype's kind (integer or bool: categorical; float: continuous). Ordinal
        variables enter as scores, like continuous ones.
    missing
        ``"testwise"`` (default: NaN, and ``-1`` in an integer column, are missing
        values, each test on the rows complete on its variables; module docstring)
        or ``"error"``.

    Raises
    ------
    NonFiniteDataError
        For infinite values, or NaN with ``missing="error"``.
    DataError
        For a constant or non-numeric column, a categorical column with non-integer or
        negative codes.
    UnknownVariableError, ConfigError
        For ``kinds`` naming an unknown variable or kind.
    """

    def __init__(
        self,
        data: DataLike,
        *,
        names: Sequence[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        missing: str = "testwise",
    ) -> None:
        matrix = as_matrix(data, names, missing)
        super().__init__(matrix.names, "dg", matrix.values.shape[0])
        self._kinds = resolve_kinds(data, matrix.names, kinds)
        blocks, levels = embedding(matrix.values, self._kinds, matrix.names, matrix.where)
        width = sum(len(b) for b in blocks)
        self._blocks = blocks
        self._widths = [len(b) for b in blocks]
        self._corr = expanded_correlation(matrix.values, levels, width)
        self._logdets: dict[tuple[int, ...], float] = {(): 0.0}
        if matrix.observed is not None:
            self._masks = RowMasks(matrix.observed)
            self._values = matrix.values
            self._subsets: OrderedDict[tuple[int, ...], _Subset | None] = OrderedDict()

    @property
    def variable_kinds(self) -> tuple[str, ...]:
        """Each variable's kind as the test used it, in index order."""
        return self._kinds

    @property
    def widths(self) -> tuple[int, ...]:
        """Each variable's number of expanded columns (``k - 1`` for ``k`` levels, else 1)."""
        return tuple(self._widths)

    def max_testable_size(self, i: int, j: int, candidates: Sequence[int]) -> int:
        """See :meth:`CITest.max_testable_size`: the largest ``k`` for which the ``k``
        candidates with the fewest columns leave the regression a residual degree of
        freedom (a larger set is skipped as dependent)."""
        room = self._n_samples - self._widths[i] - self._widths[j] - 2  # type: ignore[operator]
        if room < 0:
            return -1
        k = 0
        for width in sorted(self._widths[v] for v in candidates):
            room -= width
            if room < 0:
                break
            k += 1
        return k

    def _logdet(self, variables: tuple[int, ...]) -> float:
        """``log det`` of the correlation sub-matrix over ``variables``' columns (cached);
        NaN when the sub-matrix is singular."""
        value = self._logdets.get(variables)
        if value is not None:
            return value
        cols = [c for v in variables for c in self._blocks[v]]
        try:
            chol = np.linalg.cholesky(self._corr[np.ix_(cols, cols)])
            value = 2.0 * float(np.log(np.diagonal(chol)).sum())
        except np.linalg.LinAlgError:
            value = math.nan
        if len(self._logdets) >= _LOGDET_CACHE:
            self._logdets = {(): 0.0}
        self._logdets[variables] = value
        return value

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        rows = None if self._masks is None else self._masks.rows((i, j, *z))
        if rows is not None:
            return self._compute_on(rows, i, j, z)
        widths = self._widths
        p_x, p_y = widths[i], widths[j]
        n = self._n_samples
        if n - p_x - p_y - sum(widths[k] for k in z) - 1 < 1:  # type: ignore[operator]
            return 0.0, True
        return likelihood_ratio(
            self.evidence,
            n,  # type: ignore[arg-type]
            p_x * p_y,
            self._logdet(tuple(sorted((i, *z))))
            + self._logdet(tuple(sorted((j, *z))))
            - self._logdet(tuple(sorted((i, j, *z))))
            - self._logdet(z),
        )

    def _compute_on(
        self, rows: NDArray[np.bool_], i: int, j: int, z: tuple[int, ...]
    ) -> tuple[float, bool]:
        """The test on the rows ``rows`` marks (test-wise deletion; module docstring)."""
        key = tuple(sorted((i, j, *z)))
        if key in self._subsets:
            self._subsets.move_to_end(key)
            subset = self._subsets[key]
        else:
            subset = _Subset.of(self._values[np.ix_(rows, key)], [self._kinds[v] for v in key])
            self._subsets[key] = subset
            if len(self._subsets) > _SUBSET_CACHE:
                self._subsets.popitem(last=False)
        if subset is None:  # a variable with one value on these rows
            return 0.0, True
        where = {v: k for k, v in enumerate(key)}
        x, y, zs = where[i], where[j], tuple(where[k] for k in z)
        widths = subset.widths
        if subset.n - widths[x] - widths[y] - sum(widths[k] for k in zs) - 1 < 1:
            return 0.0, True
        return likelihood_ratio(
            self.evidence,
            subset.n,
            widths[x] * widths[y],
            subset.logdet((x, *zs))
            + subset.logdet((y, *zs))
            - subset.logdet((x, y, *zs))
            - subset.logdet(zs),
        )


def likelihood_ratio(evidence: float, n: int, df: int, logdets: float) -> tuple[float, bool]:
    """``(p, skipped)`` of ``G = n · logdets`` on ``df`` degrees of freedom (module
    docstring), each row counted as ``evidence`` (:attr:`CITest.evidence`); a NaN (a
    singular sub-matrix: the regression cannot be fitted) is skipped as dependent."""
    stat = n * logdets if evidence == 1.0 else evidence * n * logdets
    if math.isnan(stat):
        return 0.0, True
    if not math.isfinite(stat):
        return 0.0, False
    return float(chdtrc(df, max(stat, 0.0))), False


class _Subset:
    """Some variables embedded on some rows (test-wise deletion): the correlation
    matrix of their expanded columns, each variable's block, and the rows' number."""

    def __init__(self, corr: NDArray[np.float64], blocks: list[tuple[int, ...]], n: int) -> None:
        self.corr, self.blocks, self.n = corr, blocks, n
        self.widths = [len(b) for b in blocks]

    @classmethod
    def of(cls, values: NDArray, kinds: Sequence[str]) -> _Subset | None:
        """The embedding of ``values``' columns, or ``None`` when one holds one value."""
        if values.shape[0] < 2 or (values == values[0]).all(axis=0).any():
            return None
        names = [f"X{k}" for k in range(values.shape[1])]
        blocks, levels = embedding(values, kinds, names)
        width = sum(len(b) for b in blocks)
        return cls(expanded_correlation(values, levels, width), blocks, values.shape[0])

    def logdet(self, variables: tuple[int, ...]) -> float:
        """``log det`` of the correlation sub-matrix over ``variables``' columns; NaN
        when it is singular."""
        if not variables:
            return 0.0
        cols = [c for v in variables for c in self.blocks[v]]
        try:
            chol = np.linalg.cholesky(self.corr[np.ix_(cols, cols)])
        except np.linalg.LinAlgError:
            return math.nan
        return 2.0 * float(np.log(np.diagonal(chol)).sum())
