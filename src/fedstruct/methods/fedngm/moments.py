"""The sites' pooled correlations of their numeric variables: a check on queries.

Each client adds to its ``describe`` reply (round 1) two ``p x p`` aggregates over
its real and ordinal columns: the counts of rows where both of a pair are observed
and the sums of the products of their deviations from the site's own column means
(a missing value contributes nothing). No row and no single value leaves the site:
these are the sums a covariance matrix is made of, like FedAvg's per-column sums.

The master pools them (Chan, Golub & LeVeque's parallel update, as
:func:`~fedstruct.methods.fedngm.schema.pooled_moments` does for one column: each
site's products are moved to the pooled means with ``n_ij (m_i - μ_i)(m_j - μ_j)``)
into the pairwise-available correlation matrix of the common numeric variables, on
the data's own scale (:class:`PooledCorrelation`). The global model is saved with it,
and ``fedstruct query`` compares an answer's move with its evidence against the
linear fit these correlations give (:meth:`PooledCorrelation.linear_fit`): a
neural graphical model's answer that barely follows evidence the data say it should
follow is wrong, whatever its inference (issue 49: on ecoli70, E[lacZ | lacA] rises
from 0.13 to 3.42 over lacA's range; the answers were 2.14, 2.21, 1.60).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.methods.fedngm.schema import CONTINUOUS_KINDS, pooled_moments

if TYPE_CHECKING:
    from fedstruct.methods.fedngm.model import NGM

__all__ = [
    "FAR",
    "FOLLOWED",
    "MOVE",
    "PooledCorrelation",
    "pool_comoments",
    "site_comoments",
    "unfollowed_message",
]

#: The describe reply's arrays and config entry.
PAIRS, PRODUCTS, NAMES = "comoment_pairs", "comoment_products", "comoment_variables"


def site_comoments(
    frame: pd.DataFrame, kinds: Mapping[str, str]
) -> tuple[list[str], NDArray[np.int64], NDArray[np.float64]]:
    """A site's numeric columns, the rows observed on both of each pair, and the sums of
    products of deviations from the site's column means (over each column's observed
    values; a missing value counts 0).

    Returns
    -------
    names, pairs, products
        The real and ordinal columns, in ``frame``'s order; ``(p, p)`` counts;
        ``(p, p)`` sums.
    """
    names = [c for c in frame.columns if kinds.get(c) in CONTINUOUS_KINDS]
    x = frame[names].to_numpy(dtype=np.float64)
    seen = ~np.isnan(x)
    counts = seen.sum(axis=0)
    means = np.divide(np.where(seen, x, 0.0).sum(axis=0), counts,
                      out=np.zeros(len(names)), where=counts > 0)  # fmt: skip
    dev = np.where(seen, x - means, 0.0)
    pairs = seen.T.astype(np.int64) @ seen.astype(np.int64)
    return names, pairs, dev.T @ dev


@dataclass(frozen=True)
class PooledCorrelation:
    """The pooled correlations, means and standard deviations of numeric variables.

    Attributes
    ----------
    names
        The variables.
    mean, std
        Pooled mean and standard deviation of each (available-case).
    matrix
        ``(p, p)`` pairwise-available correlations (1 on the diagonal; 0 for a pair no
        site observes together).
    """

    names: tuple[str, ...]
    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    matrix: NDArray[np.float64]

    def linear_fit(self, target: str, evidence: Mapping[str, float]) -> tuple[float, float] | None:
        """``E[target | evidence]`` of the linear fit these moments give (the Gaussian
        conditional mean ``μ_Y + σ_Y r_YE R_EE⁻¹ z_E``, ``z_E`` the standardised
        evidence) and the fit's residual standard deviation ``σ_Y √(1 - R²)``, on the
        data's scale; ``None`` when a variable is not here, has no spread, or the
        evidence's correlation matrix is singular."""
        given = list(evidence)
        if target not in self.names or not given or not set(given) <= set(self.names):
            return None
        i = [self.names.index(v) for v in given]
        t = self.names.index(target)
        if self.std[t] <= 0 or (self.std[i] <= 0).any():
            return None
        z = (np.array([evidence[v] for v in given], dtype=np.float64) - self.mean[i]) / self.std[i]
        try:
            weights = np.linalg.solve(self.matrix[np.ix_(i, i)], self.matrix[i, t])
        except np.linalg.LinAlgError:
            return None
        explained = float(np.clip(weights @ self.matrix[i, t], 0.0, 1.0))
        return (
            float(self.mean[t] + self.std[t] * (weights @ z)),
            float(self.std[t] * np.sqrt(1.0 - explained)),
        )

    def to_json(self) -> dict:
        """Plain JSON (the saved model's metadata)."""
        return {
            "names": list(self.names),
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
            "matrix": self.matrix.tolist(),
        }

    @classmethod
    def from_json(cls, data: Mapping) -> PooledCorrelation:
        """Inverse of :meth:`to_json`."""
        return cls(
            tuple(data["names"]),
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["std"], dtype=np.float64),
            np.asarray(data["matrix"], dtype=np.float64),
        )


def pool_comoments(
    sites: Sequence[tuple[Mapping[str, Mapping], Sequence[str], NDArray, NDArray]],
    names: Sequence[str],
) -> PooledCorrelation | None:
    """Pool the sites' :func:`site_comoments` over ``names`` (the common numeric
    variables), each site given with its per-variable summary (its ``n``, ``mean``,
    ``m2``: :func:`~fedstruct.methods.fedngm.schema.summarise`); ``None`` when fewer
    than two variables are numeric or a site sent no co-moments (an older client)."""
    p = len(names)
    if p < 2 or any(not set(names) <= set(own) for _, own, _, _ in sites):
        return None
    mean, std = np.zeros(p), np.zeros(p)
    for j, name in enumerate(names):
        parts = [(s[name]["n"], s[name]["mean"], s[name]["m2"], 0.0) for s, *_ in sites]
        parts = [part for part in parts if part[0] > 0]
        if parts:
            n, mean[j], m2, _ = pooled_moments(parts)
            std[j] = np.sqrt(m2 / n)
    pairs, products = np.zeros((p, p)), np.zeros((p, p))
    for summary, own, n_ij, c_ij in sites:
        at = [list(own).index(v) for v in names]
        n_k, c_k = np.asarray(n_ij)[np.ix_(at, at)], np.asarray(c_ij)[np.ix_(at, at)]
        own_mean = [summary[v]["mean"] if summary[v]["n"] else mean[j] for j, v in enumerate(names)]
        shift = np.asarray(own_mean) - mean
        pairs += n_k
        products += c_k + n_k * np.outer(shift, shift)
    cov = np.divide(products, pairs, out=np.zeros((p, p)), where=pairs > 0)
    scale = np.outer(std, std)
    matrix = np.divide(cov, scale, out=np.zeros((p, p)), where=scale > 0)
    matrix = np.clip(matrix, -1.0, 1.0)
    np.fill_diagonal(matrix, 1.0)
    return PooledCorrelation(tuple(names), mean, std, matrix)


#: A linear fit that moves the target by less than this many of its standard
#: deviations from its mean is not evidence that the answer should move.
MOVE = 0.25
#: An answer that moves less than this share of the linear fit's move (or against
#: it) does not follow its evidence.
FOLLOWED = 0.5
#: An answer further than this many of the linear fit's residual standard deviations
#: from the fit is far from where the data put the target given the evidence.
FAR = 2.0


def unfollowed_message(
    ngm: NGM,
    correlation: PooledCorrelation | None,
    given: Mapping[str, float],
    target: str,
    answer: float,
    *,
    method: str,
    steps: int,
) -> str | None:
    """A one-line warning when a continuous ``target``'s ``answer`` does not follow
    numeric evidence ``given`` that the sites' pooled correlations say moves it, else
    ``None``.

    The data's move is the linear fit's answer (:meth:`PooledCorrelation.linear_fit`)
    minus the target's pooled mean; the model's is ``answer`` minus its own answer
    (same ``method`` and ``steps``) with the evidence at the pooled means. When the
    data's move is at least :data:`MOVE` standard deviations, the answer is warned
    about if its move is below :data:`FOLLOWED` of the data's (it barely moves, or
    moves against the evidence); whatever the move, if it lies more than :data:`FAR`
    residual standard deviations from the fit (a wrong fixed point of message passing
    can move with the evidence, but from the wrong place). The line gives the other
    inference's answer too. Nothing is checked for a categorical target or evidence,
    or without correlations (a model saved before issue 49). A linear fit is a
    yardstick, not the truth: on a strongly nonlinear dependence a right answer can be
    warned about.
    """
    if correlation is None or not given or ngm.schema.spec(target).is_categorical:
        return None
    fit = correlation.linear_fit(target, given)
    if fit is None:
        return None
    expected, residual = fit
    t = correlation.names.index(target)
    data_move = expected - correlation.mean[t]
    near = abs(answer - expected) <= FAR * residual
    follows, model_move, base = True, 0.0, 0.0
    if abs(data_move) >= MOVE * correlation.std[t]:
        means = {v: [float(correlation.mean[correlation.names.index(v)])] for v in given}
        base = float(ngm.predict(pd.DataFrame(means), target, method=method, steps=steps)[0])
        model_move = answer - base
        follows = model_move / data_move >= FOLLOWED
    if follows and near:
        return None
    why = (
        f"moves {model_move:+.3g} from the model's answer with the evidence at its pooled "
        f"means ({base:.4g}), the data {data_move:+.3g}"
        if not follows
        else f"is {abs(answer - expected):.3g} from it, beyond {FAR:g} residual deviations"
    )
    other = "message" if method == "gradient" else "gradient"
    row = pd.DataFrame({v: [float(x)] for v, x in given.items()})
    alternative = float(ngm.predict(row, target, method=other, steps=steps)[0])
    return (
        f"{target} = {answer:.4g} does not follow this evidence: the sites' pooled "
        f"correlations give a linear fit of {expected:.4g} (residual deviation "
        f"{residual:.3g}), and the answer {why}. --inference {other} answers "
        f"{alternative:.4g}; a graph linking {target} to the evidence more closely "
        "(--graph) can help (docs/fedngm.md, 'Queries')"
    )
