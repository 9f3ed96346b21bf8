"""Fisher's z test of zero partial correlation, for continuous (Gaussian) data.

For ``X_i ⊥ X_j | X_Z`` the partial correlation ``r`` is read off the inverse of the
correlation sub-matrix over ``(i, j, Z)``: ``r = -P_ij / sqrt(P_ii P_jj)``
(Whittaker 1990, *Graphical Models in Applied Multivariate Statistics*, §5.7). Under
the null hypothesis ``sqrt(n - |Z| - 3) · atanh(r)`` is approximately standard normal
(Fisher 1924; Kalisch & Bühlmann 2007, JMLR 8, §2.2), so the two-sided p-value is
``erfc(|t| / sqrt 2)``. ``|r|`` is capped just below 1 (a deterministic relation gives
p ≈ 0). With ``n - |Z| - 3 < 1`` the test cannot be performed: it is skipped and
treated as dependent (p = 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike, as_matrix
from fedstruct.errors import DataError

__all__ = ["FisherZTest", "partial_correlation"]

_R_MAX = 1.0 - np.finfo(np.float64).eps


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

    Raises
    ------
    NonFiniteDataError
        For NaN or infinite values.
    DataError
        For a constant or non-numeric column; during a test, for a conditioning set
        whose correlation matrix is singular (collinear variables).
    """

    def __init__(self, data: DataLike, *, names: Sequence[str] | None = None) -> None:
        matrix = as_matrix(data, names)
        super().__init__(matrix.names, "fisherz", matrix.values.shape[0])
        self._corr = np.corrcoef(matrix.values.astype(np.float64), rowvar=False)
        self._where = matrix.where

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        dof = self._n_samples - len(z) - 3  # type: ignore[operator]
        if dof < 1:
            return 0.0, True
        try:
            r = partial_correlation(self._corr, i, j, z)
        except np.linalg.LinAlgError:
            given = [self._names[k] for k in z]
            raise DataError(
                f"{self._where}the correlation matrix of {self._names[i]!r}, {self._names[j]!r} "
                f"and {given} is singular (collinear variables); drop duplicated or "
                "deterministic columns"
            ) from None
        r = max(-_R_MAX, min(_R_MAX, r))
        t = math.sqrt(dof) * abs(math.atanh(r))
        return math.erfc(t / math.sqrt(2.0)), False
