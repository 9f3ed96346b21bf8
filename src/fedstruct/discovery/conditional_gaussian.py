"""The conditional-Gaussian likelihood-ratio test of conditional independence, for mixed data.

The model is the conditional-Gaussian (CG) distribution of Lauritzen & Wermuth (1989),
"Graphical models for associations between variables, some of which are qualitative
and some quantitative", Ann. Statist. 17:31-57, as Andrews, Ramsey & Cooper (2018),
"Scoring Bayesian networks of mixed variables", Int. J. Data Sci. Anal. 6:3-18, §3,
score with it (Tetrad's CG likelihood); the likelihood-ratio test on such models
follows Sedgewick, Ramsey, Spirtes, Glymour & Benos (2016), "Mixed graphical models
for integrative causal analysis with constraint-based and score-based methods". For a
set ``S`` of variables with discrete part ``D`` and continuous part ``C`` (``a = |C|``
columns), the discrete variables are multinomial and, in each *cell* ``k`` (one
combination of ``D``'s levels seen in the rows), the continuous ones are jointly
Gaussian with the cell's own mean. Their covariance (``covariance``) is

- ``"pooled"`` (default): one covariance shared by every cell, the *homogeneous* CG
  distribution of Lauritzen & Wermuth (1989, §2; Lauritzen 1996, *Graphical Models*,
  §6.1.1), estimated by the within-cell covariance ``W`` pooled over the cells;
- ``"cell"``: each cell its own covariance ``Σ_k`` (the heterogeneous CG model that
  Andrews et al. 2018 and Tetrad fit).

With ``n`` rows, ``n_k`` in cell ``k`` and maximum-likelihood (divide by the rows)
covariances, the maximised log-likelihood is

    ``ℓ(S) = Σ_k n_k log(n_k / n) - ½ Σ_k n_k [a (1 + log 2π) + log det Σ_k]``

with ``Σ_k = W`` for every ``k`` when pooled (no multinomial term when ``D`` is empty,
no Gaussian one when ``C`` is). Hence a continuous variable is linear-Gaussian in the
continuous ones within each cell of the discrete ones — an intercept per cell and
common slopes and variance when pooled, slopes and variance per cell otherwise — and a
discrete variable given continuous ones is modelled through the mixture,
``P(D | C) ∝ P(C | D) P(D)`` (logistic-linear in ``C`` when pooled, as in linear
discriminant analysis; quadratic per cell otherwise).

For ``X ⊥ Y | Z`` the statistic is the conditional likelihood ratio of ``Y`` given
``(X, Z)`` against ``Y`` given ``Z`` (Andrews et al.'s LRT), each conditional being a
difference of joints (``ℓ(Y | Z) = ℓ(Y, Z) - ℓ(Z)``):

    ``G = 2 [ℓ(X, Y, Z) + ℓ(Z) - ℓ(X, Z) - ℓ(Y, Z)]``

which is symmetric in ``X`` and ``Y`` (one value per unordered pair, as the cache
wants). Degrees of freedom: with ``m(S)`` the number of *observed* (non-empty) cells of
``S``'s discrete part on the test's rows, the CG model of ``S`` has

    ``dof(S) = (m - 1) + m a + a (a + 1) / 2`` (pooled) or
    ``dof(S) = (m - 1) + m [a + a (a + 1) / 2]`` (per cell)

free parameters (cell probabilities, means, covariances), and

    ``df = dof(X, Y, Z) + dof(Z) - dof(X, Z) - dof(Y, Z)``;

the p-value is ``chdtrc(df, max(G, 0))`` (Wilks 1938; ``G`` can be slightly negative
when ``X`` or ``Y`` is discrete, as the conditionals through the mixture are not
nested maximum-likelihood fits). Counting observed cells, not every combination of
levels, is Tetrad's choice too: an empty cell has no parameter to fit. For example a
discrete ``X`` (``k`` levels) against a continuous ``Y`` given continuous ``Z`` has
``df = k - 1`` pooled and ``(k - 1)(|Z| + 2)`` per cell (means, variance and
covariances with ``Z`` may all differ between the levels).

Closed forms (tests/discovery/test_cg_lrt.py): on continuous variables
``G = -n log(1 - r²)`` with ``r`` the partial correlation and ``df = 1``; with every
variable discrete ``G`` is the G² statistic of the contingency table and
``df = m(XYZ) + m(Z) - m(XZ) - m(YZ)`` (``(|X|-1)(|Y|-1)`` per stratum when every cell
is seen). Pooled: ``X`` continuous or discrete against a continuous ``Y`` is the
regression (ANCOVA) likelihood ratio ``n log(RSS(Y | Z) / RSS(Y | X, Z))`` with an
intercept per cell, so with ``Z`` continuous it equals the degenerate-Gaussian test
``"dg"`` (:mod:`fedstruct.discovery.degenerate`), which differs where ``Z`` holds
discrete variables: ``"dg"`` adds their indicators, the CG test crosses them into cells
(and where ``X`` and ``Y`` are both discrete). Per cell: with ``X``, ``Y`` continuous
and ``Z`` one discrete variable, ``G = Σ_k -n_k log(1 - r_k²)`` (``r_k`` the
correlation in cell ``k``) and ``df`` = the number of cells; a discrete ``X`` against a
continuous ``Y`` alone compares one Gaussian with one per level (``df = 2 (k - 1)``).

Sparse cells. Pooled, a cell needs no minimum (one row fixes its mean, the covariance is
estimated from all rows); a test is skipped when the full model leaves no residual
degree of freedom, ``n - m(XYZ) - a(XYZ) < 1`` (as ``"dg"``'s rule). Per cell
(``min_cell_rows``), each test looks at the finest partition on which a Gaussian is
fitted — the cells of ``Z``'s discrete part when ``X`` and ``Y`` are continuous; of
``Z``'s discrete part and the discrete one of ``X``, ``Y`` when exactly one is; of
``Z``'s discrete part, ``X`` and ``Y`` when both are discrete and ``Z`` has a continuous
variable (with no continuous variable nothing is fitted and no row is left out) — and
keeps the rows of the cells with at least ``max(min_cell_rows, a_max + 1)`` rows,
``a_max`` the largest continuous dimension fitted in those cells (``a_max + 1`` rows
make the covariance estimable). The rows of smaller cells are left out of all four
likelihoods, so they stay one comparison on one set of rows (the test's ``n`` is the
rows kept; Tetrad's current CG test does the same). Selecting rows by the levels of
``Z`` and of one of ``X``, ``Y`` leaves ``X ⊥ Y | Z`` true on the rows kept; in the last
case (both discrete, a continuous ``Z``) the selection depends on ``X`` and ``Y``
together and can bias the test a little: the price of estimating the mixture there. In
both modes a test left with no row, with ``df <= 0`` (e.g. ``X`` has one level on the
rows), or with a singular covariance (a continuous variable constant, or an exact linear
function of others, in the rows or in a cell) is skipped and treated as dependent (p =
0; counted in :attr:`~fedstruct.discovery.citest.CITest.n_skipped`), as the other tests'
small-sample rules do.

Ordinal variables (``ordinal``): ``"scores"`` (default) models an ordinal variable as
continuous, its codes or level values taken as numbers (as ``"dg"`` and Fisher-z do);
``"categories"`` as discrete, its levels unordered (as G² does).

What is shared between tests: every log-likelihood ``ℓ(S)`` is cached per variable set
(PC and FCI test many pairs given one ``Z`` and one pair given many ``Z``, so ``ℓ(Z)``,
``ℓ(X, Z)`` and ``ℓ(Y, Z)`` recur), and so is each discrete part's partition of the rows
(its cells, built from the partition of the part without its last variable) with the
per-cell sums of the continuous columns and of their products, each computed once by
one ``bincount``; the covariance of all rows is computed once. A test whose sparse
cells leave rows out computes its four likelihoods afresh on the rows kept.

Missing values (``missing="testwise"``: NaN, or ``-1`` in an integer column): a test
runs on the rows complete on its variables ``(X, Y, Z)``; tests whose variables have
the same incomplete ones share those rows and their cached likelihoods and partitions
(:mod:`fedstruct.discovery.missing`).
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
from fedstruct.discovery.degenerate import category_levels
from fedstruct.discovery.kinds import resolve_kinds
from fedstruct.discovery.missing import RowMasks
from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = [
    "COVARIANCE_MODES",
    "DEFAULT_MIN_CELL_ROWS",
    "LOG_2PI_E",
    "ORDINAL_MODES",
    "ConditionalGaussianTest",
    "covariance_logdets",
]

#: The continuous variables' covariance in the cells: each cell its own (``"cell"``) or
#: one shared by every cell (``"pooled"``, the homogeneous CG model).
COVARIANCE_MODES = ("cell", "pooled")

#: How an ordinal variable enters the CG model: as a number or as categories.
ORDINAL_MODES = ("scores", "categories")
#: Rows a cell needs for a Gaussian to be fitted in it (module docstring).
DEFAULT_MIN_CELL_ROWS = 5
#: ``1 + log 2π``: a Gaussian's maximised log-likelihood per row and dimension, less
#: half its log-determinant, is ``-½ (1 + log 2π)``.
LOG_2PI_E = 1.0 + math.log(2.0 * math.pi)
#: Below this a variance, or a determinant relative to the variances' product, is zero.
_TINY = 1e-10
_LOG_TINY = math.log(_TINY)
#: Bytes of cached partitions (cell labels, per-cell sums) per set of rows.
_PARTITION_CACHE_BYTES = 40_000_000
#: Log-likelihoods (with their parameter counts) kept per set of rows before the cache
#: is emptied.
_FIT_CACHE = 1 << 18
#: Row sets (test-wise deletion) whose caches are kept.
_ROWSET_CACHE = 32


class ConditionalGaussianTest(CITest):
    """The conditional-Gaussian likelihood-ratio test (module docstring) on mixed data.

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
        dtype's kind (integer or bool: categorical; float: continuous).
    missing
        ``"testwise"`` (default: NaN, and ``-1`` in an integer column, are missing
        values, each test on the rows complete on its variables) or ``"error"``.
    covariance
        ``"pooled"`` (default: one covariance shared by the cells, the homogeneous CG
        model) or ``"cell"`` (one per cell, Andrews et al. 2018's heterogeneous form).
    min_cell_rows
        With ``covariance="cell"``: the fewest rows a cell needs for a Gaussian to be
        fitted in it (at least ``a_max + 1`` is always required); the rows of smaller
        cells are left out of the test (module docstring). Default
        :data:`DEFAULT_MIN_CELL_ROWS`.
    ordinal
        ``"scores"`` (default: ordinal variables are continuous) or ``"categories"``
        (discrete).

    Raises
    ------
    NonFiniteDataError
        For infinite values, or NaN with ``missing="error"``.
    DataError
        For a constant or non-numeric column, a categorical column with non-integer or
        negative codes.
    UnknownVariableError, ConfigError
        For ``kinds`` naming an unknown variable or kind, an unknown ``ordinal`` or
        ``covariance`` mode, or ``min_cell_rows`` below 2.
    """

    def __init__(
        self,
        data: DataLike,
        *,
        names: Sequence[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        missing: str = "testwise",
        covariance: str = "pooled",
        min_cell_rows: int = DEFAULT_MIN_CELL_ROWS,
        ordinal: str = "scores",
    ) -> None:
        if covariance not in COVARIANCE_MODES:
            raise ConfigError(
                unknown_choice_message("covariance mode", covariance, COVARIANCE_MODES)
            )
        if ordinal not in ORDINAL_MODES:
            raise ConfigError(unknown_choice_message("ordinal mode", ordinal, ORDINAL_MODES))
        if isinstance(min_cell_rows, bool) or not isinstance(min_cell_rows, int | np.integer):
            raise ConfigError(f"min_cell_rows must be an integer >= 2, got {min_cell_rows!r}")
        if min_cell_rows < 2:
            raise ConfigError(f"min_cell_rows must be an integer >= 2, got {min_cell_rows}")
        matrix = as_matrix(data, names, missing)
        super().__init__(matrix.names, "cg", matrix.values.shape[0])
        self._kinds = resolve_kinds(data, matrix.names, kinds)
        self._min_cell_rows = int(min_cell_rows)
        self._pooled = covariance == "pooled"
        discrete = [
            k == "categorical" or (k == "ordinal" and ordinal == "categories") for k in self._kinds
        ]
        self._discrete = tuple(discrete)
        self._levels: dict[int, int] = {}
        codes: dict[int, NDArray[np.intp]] = {}
        continuous: list[NDArray[np.float64]] = []
        self._column: dict[int, int] = {}
        for v, is_discrete in enumerate(discrete):
            column = matrix.values[:, v]
            if is_discrete:
                levels = category_levels(column, matrix.names[v], matrix.where)
                codes[v] = np.searchsorted(levels, column).astype(np.intp)
                self._levels[v] = len(levels)
            else:
                self._column[v] = len(continuous)
                column = column.astype(np.float64)
                rows = column if matrix.observed is None else column[matrix.observed[:, v]]
                continuous.append((column - rows.mean()) / rows.std())
        values = (
            np.column_stack(continuous) if continuous else np.empty((matrix.values.shape[0], 0))
        )
        self._full = _RowSet(self, codes, np.asfortranarray(values))
        if matrix.observed is not None:
            self._masks = RowMasks(matrix.observed)
            self._rowsets: OrderedDict[tuple[int, ...], _RowSet] = OrderedDict()

    @property
    def variable_kinds(self) -> tuple[str, ...]:
        """Each variable's kind as given or inferred, in index order."""
        return self._kinds

    @property
    def discrete(self) -> tuple[bool, ...]:
        """Whether each variable is modelled as discrete (categorical; ordinal with
        ``ordinal="categories"``)."""
        return self._discrete

    @property
    def min_cell_rows(self) -> int:
        """The fewest rows a cell needs for a Gaussian fit (module docstring)."""
        return self._min_cell_rows

    def max_testable_size(self, i: int, j: int, candidates: Sequence[int]) -> int:
        """See :meth:`CITest.max_testable_size`: the largest ``k`` for which the ``k``
        candidates with the fewest continuous variables can still give a performed test.
        Pooled, ``n - m - a >= 1`` with ``m >= 1`` cells allows ``a <= n - 2``
        continuous variables in the test; per cell, a cell of at most ``n`` rows must
        hold ``a + 1`` of them and ``min_cell_rows``. Discrete candidates cost nothing."""
        n = self._n_samples
        if not self._pooled and n < self._min_cell_rows:  # type: ignore[operator]
            return -1
        room = n - (2 if self._pooled else 1)  # type: ignore[operator]
        room -= sum(not self._discrete[v] for v in (i, j))
        if room < 0:
            return -1
        k = 0
        for cost in sorted(int(not self._discrete[v]) for v in candidates):
            room -= cost
            if room < 0:
                break
            k += 1
        return k

    def _rowset(self, variables: tuple[int, ...]) -> _RowSet:
        """The rows complete on ``variables`` (all rows without missing values), cached."""
        if self._masks is None:
            return self._full
        key = self._masks.key(variables)
        if not key:
            return self._full
        found = self._rowsets.get(key)
        if found is not None:
            self._rowsets.move_to_end(key)
            return found
        found = self._full.restricted(np.flatnonzero(self._masks.rows(variables)))
        self._rowsets[key] = found
        if len(self._rowsets) > _ROWSET_CACHE:
            self._rowsets.popitem(last=False)
        return found

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        rows = self._rowset((i, j, *z))
        if not self._pooled:
            rows = self._large_cells(rows, i, j, z)
            if rows is None:
                return 0.0, True
        return rows.test(i, j, z)

    def _large_cells(self, rows: _RowSet, i: int, j: int, z: tuple[int, ...]) -> _RowSet | None:
        """``rows`` less the rows of the cells too small for a per-cell Gaussian, on the
        finest partition where the test fits one (module docstring); ``None`` when no
        row is left."""
        discrete = self._discrete
        if discrete[j] and not discrete[i]:
            i, j = j, i  # the discrete one first
        z_discrete = tuple(v for v in z if discrete[v])
        z_continuous = len(z) - len(z_discrete)
        if discrete[j]:  # both discrete: Z's continuous part in (Z, X, Y)'s cells
            if not z_continuous:
                return rows  # no Gaussian is fitted
            finest, widest = tuple(sorted((*z_discrete, i, j))), z_continuous
        elif discrete[i]:  # X discrete, Y continuous: (Y, Z)'s in (Z, X)'s cells
            finest, widest = tuple(sorted((*z_discrete, i))), z_continuous + 1
        else:  # both continuous: (X, Y, Z)'s in Z's cells
            finest, widest = z_discrete, z_continuous + 2
        need = max(self._min_cell_rows, widest + 1)
        part = rows.partition(finest)
        if part.counts.min() >= need:
            return rows
        keep = (part.counts >= need)[part.labels]
        return rows.restricted(np.flatnonzero(keep)) if keep.any() else None


class _Partition:
    """The cells of a discrete part on a set of rows: each row's cell label (``0..m-1``),
    each cell's row count and, filled on demand, the per-cell sums of continuous columns
    and of their pairwise products."""

    def __init__(self, labels: NDArray[np.intp], counts: NDArray[np.int64]) -> None:
        self.labels, self.counts = labels, counts
        self._sums: dict[tuple[int, ...], NDArray[np.float64]] = {}

    @property
    def size(self) -> int:
        """The number of observed cells, ``m``."""
        return len(self.counts)

    def sums(self, values: NDArray[np.float64], key: tuple[int, ...]) -> NDArray[np.float64]:
        """Per cell, the sum of column ``key[0]`` of ``values`` (``key = (p,)``) or of the
        product of columns ``p`` and ``q`` (``key = (p, q)``); cached."""
        found = self._sums.get(key)
        if found is None:
            weights = values[:, key[0]] if len(key) == 1 else values[:, key[0]] * values[:, key[1]]
            found = np.bincount(self.labels, weights=weights, minlength=self.size)
            self._sums[key] = found
        return found


class _RowSet:
    """The data of one set of rows, with the partitions and log-likelihoods computed on
    them (module docstring)."""

    def __init__(
        self,
        test: ConditionalGaussianTest,
        codes: Mapping[int, NDArray[np.intp]],
        values: NDArray[np.float64],
    ) -> None:
        self._test = test
        self._codes = codes
        self._values = values
        self.n = values.shape[0]
        self._partitions: OrderedDict[tuple[int, ...], _Partition] = OrderedDict()
        self._partition_capacity = max(16, _PARTITION_CACHE_BYTES // max(16 * self.n, 1))
        self._fits: dict[tuple[int, ...], tuple[float, int, int]] = {}
        self._cov: NDArray[np.float64] | None = None
        self._mean: NDArray[np.float64] | None = None

    def restricted(self, rows: NDArray[np.intp]) -> _RowSet:
        """The same data on the rows ``rows`` (indices into this set's rows)."""
        codes = {v: c[rows] for v, c in self._codes.items()}
        return _RowSet(self._test, codes, np.asfortranarray(self._values[rows]))

    def partition(self, discrete: tuple[int, ...]) -> _Partition:
        """The cells of the sorted discrete variables ``discrete`` (cached)."""
        found = self._partitions.get(discrete)
        if found is not None:
            self._partitions.move_to_end(discrete)
            return found
        if not discrete:
            found = _Partition(np.zeros(self.n, dtype=np.intp), np.array([self.n]))
        else:
            last = discrete[-1]
            levels = self._test._levels[last]
            if len(discrete) == 1:
                combined, width = self._codes[last], levels
            else:
                prefix = self.partition(discrete[:-1])
                combined = prefix.labels * levels + self._codes[last]
                width = prefix.size * levels
            counts = np.bincount(combined, minlength=width)
            seen = counts > 0
            relabel = np.cumsum(seen, dtype=np.intp) - 1
            found = _Partition(relabel[combined], counts[seen])
        self._partitions[discrete] = found
        if len(self._partitions) > self._partition_capacity:
            self._partitions.popitem(last=False)
        return found

    def test(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        """``(p, skipped)`` of ``X_i ⊥ X_j | X_z`` on these rows (module docstring)."""
        fit = self.fit
        full = fit(tuple(sorted((i, j, *z))))
        fit_x, fit_y = fit(tuple(sorted((i, *z)))), fit(tuple(sorted((j, *z))))
        given = fit(z)  # z is sorted (a normalised key)
        if self._test._pooled and self.n - full[2] < 1:  # no residual degree of freedom
            return 0.0, True
        stat = 2.0 * (full[0] + given[0] - fit_x[0] - fit_y[0])
        if self._test.evidence != 1.0:
            stat *= self._test.evidence
        df = full[1] + given[1] - fit_x[1] - fit_y[1]
        if math.isnan(stat) or df <= 0:
            return 0.0, True
        return float(chdtrc(df, max(stat, 0.0))), False

    def fit(self, variables: tuple[int, ...]) -> tuple[float, int, int]:
        """The maximised CG log-likelihood ``ℓ`` of the sorted ``variables`` on these
        rows (NaN when a covariance is singular), the model's free parameters
        ``dof`` and ``m + a`` (cells and continuous columns: module docstring); cached."""
        found = self._fits.get(variables)
        if found is not None:
            return found
        discrete_of, column = self._test._discrete, self._test._column
        discrete = tuple(v for v in variables if discrete_of[v])
        columns = [column[v] for v in variables if not discrete_of[v]]
        part = self.partition(discrete)
        counts = part.counts
        value = float(np.dot(counts, np.log(counts / self.n))) if discrete else 0.0
        if columns:
            value += self._gaussian(part, columns)
        a, m = len(columns), part.size
        if self._test._pooled:
            found = (value, m * a + a * (a + 1) // 2 + m - 1, m + a)
        else:
            found = (value, m * (a + a * (a + 1) // 2) + m - 1, m + a)
        if len(self._fits) >= _FIT_CACHE:
            self._fits = {}
        self._fits[variables] = found
        return found

    def _gaussian(self, part: _Partition, columns: list[int]) -> float:
        """``-½ Σ_k n_k [a (1 + log 2π) + log det Σ_k]`` over ``part``'s cells
        (``columns`` ascending)."""
        a = len(columns)
        counts = part.counts
        if self._cov is None:
            self._cov = np.atleast_2d(np.cov(self._values, rowvar=False, bias=True))
            self._mean = self._values.mean(axis=0)
        if part.size == 1:
            logdets = covariance_logdets(self._cov[np.ix_(columns, columns)][None], a)
        elif self._test._pooled:
            return self._pooled_gaussian(part, columns)
        else:
            values, sums = self._values, part.sums
            means = [sums(values, (c,)) / counts for c in columns]
            if a == 1:
                c = columns[0]
                covs = (sums(values, (c, c)) / counts - means[0] * means[0])[:, None, None]
            else:
                covs = np.empty((part.size, a, a))
                for p in range(a):
                    for q in range(p, a):
                        second = sums(values, (columns[p], columns[q])) / counts
                        covs[:, p, q] = covs[:, q, p] = second - means[p] * means[q]
            logdets = covariance_logdets(covs, a)
        if logdets is None:
            return math.nan
        return -0.5 * float(np.dot(counts, a * LOG_2PI_E + logdets))

    def _pooled_gaussian(self, part: _Partition, columns: list[int]) -> float:
        """``-½ n [a (1 + log 2π) + log det W]``, ``W`` the within-cell covariance pooled
        over ``part``'s cells: the total covariance less the covariance of the cell means."""
        a = len(columns)
        counts, values = part.counts, self._values
        centre = self._mean[columns]  # type: ignore[index]
        deviations = (
            np.column_stack([part.sums(values, (c,)) / counts for c in columns]) - centre
        )  # cell means about the grand mean
        between = (deviations * (counts / self.n)[:, None]).T @ deviations
        within = self._cov[np.ix_(columns, columns)] - between  # type: ignore[index]
        logdets = covariance_logdets(within[None], a)
        if logdets is None:
            return math.nan
        return -0.5 * self.n * float(a * LOG_2PI_E + logdets[0])


def covariance_logdets(covs: NDArray[np.float64], a: int) -> NDArray[np.float64] | None:
    """Each ``a x a`` covariance's log-determinant; ``None`` if one is singular: a
    variance below ``1e-10`` (the columns are standardised) or, for ``a > 1``, a
    determinant below ``1e-10`` times the product of the variances (one column is a
    linear function of the others up to rounding)."""
    variances = np.diagonal(covs, axis1=1, axis2=2)
    if (variances < _TINY).any():
        return None
    if a == 1:
        return np.log(variances[:, 0])
    sign, logdets = np.linalg.slogdet(covs)
    if (sign <= 0).any() or (logdets - np.log(variances).sum(axis=1) < _LOG_TINY).any():
        return None
    return logdets
