"""Fisher's z test of zero partial correlation, for continuous (Gaussian) data.

For ``X_i ⊥ X_j | X_Z`` the partial correlation ``r`` is read off the inverse of the
correlation sub-matrix over ``(i, j, Z)``: ``r = -P_ij / sqrt(P_ii P_jj)``
(Whittaker 1990, *Graphical Models in Applied Multivariate Statistics*, §5.7). Under
the null hypothesis ``sqrt(n - |Z| - 3) · atanh(r)`` is approximately standard normal
(Fisher 1924; Kalisch & Bühlmann 2007, JMLR 8, §2.2), so the two-sided p-value is
``erfc(|t| / sqrt 2)``. ``|r|`` is capped just below 1 (a deterministic relation gives
p ≈ 0). With ``n - |Z| - 3 < 1`` the test cannot be performed: it is skipped and
treated as dependent (p = 0).

Missing values (``missing="testwise"``, NaN): a test whose variables are observed in
every row reads the correlation matrix of all rows; any other test computes the
correlations of its variables ``(i, j, Z)`` on the rows complete on all of them (cached
per variable set: the tests of ``a, b | c`` and ``a, c | b`` share one matrix) and
uses that number of rows as ``n`` (:mod:`fedstruct.discovery.missing`): the p-value
of the same test on those rows alone.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike, as_matrix
from fedstruct.discovery.missing import RowMasks
from fedstruct.errors import DataError

__all__ = ["FisherZTest", "fisher_z_pvalue", "partial_correlation"]

_R_MAX = 1.0 - np.finfo(np.float64).eps
#: Correlation matrices of variable sets on their complete rows kept (test-wise deletion).
_SUBSET_CACHE = 4096


def partial_correlation(corr: np.ndarray, i: int, j: int, z: Sequence[int]) -> float:
    """Partial correlation of ``i`` and ``j`` given ``z`` from a correlation matrix.

    Raises
    ------
    numpy.linalg.LinAlgError
        If the sub-matrix over ``(i, j, z)`` is singular.
    """
    if not z:
        return float(corr[i, j])
    idx = [i, j, *z]
    prec = np.linalg.inv(corr[np.ix_(idx, idx)])
    return float(-prec[0, 1] / math.sqrt(abs(prec[0, 0] * prec[1, 1])))


class FisherZTest(CITest):
    """Fisher-z partial-correlation test on real-valued data.

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array of numbers.
    names
        Variable names for an array (default ``X0, X1, ...``).
    missing
        ``"testwise"`` (default: NaN is a missing value, each test on the rows complete
        on its variables; module docstring) or ``"error"``.

    Raises
    ------
    NonFiniteDataError
        For infinite values, or NaN with ``missing="error"``.
    DataError
        For a constant or non-numeric column; during a test, for a conditioning set
        whose correlation matrix is singular (collinear variables).
    """

    def __init__(
        self, data: DataLike, *, names: Sequence[str] | None = None, missing: str = "testwise"
    ) -> None:
        matrix = as_matrix(data, names, missing)
        super().__init__(matrix.names, "fisherz", matrix.values.shape[0])
        values = matrix.values.astype(np.float64)
        self._corr = np.corrcoef(values, rowvar=False)
        self._where = matrix.where
        if matrix.observed is not None:
            self._masks = RowMasks(matrix.observed)
            self._values = values
            self._subsets: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()

    def _subset_correlation(
        self, rows: np.ndarray, i: int, j: int, z: tuple[int, ...]
    ) -> tuple[np.ndarray, tuple[int, ...]]:
        """The correlation matrix of ``(i, j, *z)`` on ``rows`` (cached per variable
        set) and the positions of ``i``, ``j``, ``z`` in it."""
        key = tuple(sorted((i, j, *z)))
        corr = self._subsets.get(key)
        if corr is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = np.corrcoef(self._values[np.ix_(rows, key)], rowvar=False)
            self._subsets[key] = corr
            if len(self._subsets) > _SUBSET_CACHE:
                self._subsets.popitem(last=False)
        else:
            self._subsets.move_to_end(key)
        where = {v: k for k, v in enumerate(key)}
        return corr, (where[i], where[j], *(where[k] for k in z))

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        corr, n = self._corr, self._n_samples
        rows = None if self._masks is None else self._masks.rows((i, j, *z))
        if rows is not None:
            n = int(np.count_nonzero(rows))
            if n - len(z) - 3 < 1:
                return 0.0, True
            corr, (i2, j2, *z2) = self._subset_correlation(rows, i, j, z)
            if not np.isfinite(corr).all():  # a variable constant on these rows
                return 0.0, True
            return self._pvalue(corr, n, (i, j, z), (i2, j2, tuple(z2)))
        return self._pvalue(corr, n, (i, j, z), (i, j, z))  # type: ignore[arg-type]

    def _pvalue(
        self,
        corr: np.ndarray,
        n: int,
        test: tuple[int, int, tuple[int, ...]],
        at: tuple[int, int, tuple[int, ...]],
    ) -> tuple[float, bool]:
        """The test ``test`` (named in messages) read at positions ``at`` of ``corr``."""
        return fisher_z_pvalue(corr, n, test, at, self._names, self.evidence, self._where)


def fisher_z_pvalue(
    corr: np.ndarray,
    n: int,
    test: tuple[int, int, tuple[int, ...]],
    at: tuple[int, int, tuple[int, ...]],
    names: Sequence[str],
    evidence: float = 1.0,
    where: str = "",
) -> tuple[float, bool]:
    """``(p, skipped)`` of the test ``test`` on ``n`` rows whose correlation matrix is
    ``corr``, read at the positions ``at`` (module docstring): skipped (dependent) when
    ``n - |Z| - 3 < 1``.

    Raises
    ------
    DataError
        If the sub-matrix is singular (naming the variables of ``test`` by ``names``).
    """
    i, j, z = test
    dof = n - len(z) - 3
    if dof < 1:
        return 0.0, True
    try:
        r = partial_correlation(corr, *at)
    except np.linalg.LinAlgError:
        given = [names[k] for k in z]
        raise DataError(
            f"{where}the correlation matrix of {names[i]!r}, {names[j]!r} "
            f"and {given} is singular (collinear variables); drop duplicated or "
            "deterministic columns"
        ) from None
    r = max(-_R_MAX, min(_R_MAX, r))
    t = math.sqrt(dof if evidence == 1.0 else dof * evidence) * abs(math.atanh(r))
    return math.erfc(t / math.sqrt(2.0)), False
