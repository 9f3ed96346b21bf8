"""An ordinal variable's conditional distribution over its levels, for Gibbs sampling.

An NGM predicts an ordinal variable as one continuous column: its conditional mean
``μ`` given the other variables (squared loss). To draw a level, the Gibbs sampler
needs a whole distribution. Adding Gaussian noise to ``μ`` and snapping to the
nearest level (the first design) clips the noise at the end levels: both the
variance and the conditional mean shrink towards the middle (measured on 5
equal-frequency levels: sampled variance 0.76-0.80 of the data's, and the
covariances with the ordinal's neighbours shrunk by a quarter).

Here the distribution over the sorted levels ``l_1 < ... < l_L`` is
``p_k ∝ f_k exp(-(l_k - c)² / (2 s²))``: the variable's pooled marginal level
frequencies ``f`` tilted by a Gaussian factor whose centre ``c`` is chosen per row so
that the mean is exactly ``μ`` (clipped into ``[l_1, l_L]``). Without information
(``s`` large, ``μ`` the marginal mean) it is the marginal itself, zeros and tail
included; equal frequencies give a discretised Gaussian. It is the exponential
family with base measure ``f``, sufficient statistics ``(l, l²)`` and natural
parameters ``(c / s², -1 / (2 s²))``; its mean increases strictly with ``c`` (the derivative
is the variance over ``s²``, Wainwright & Jordan 2008, Prop. 3.1), so Newton's
method on ``c``, safeguarded by bisection on a bracket, finds ``c``. The scale ``s``
is one number per variable, calibrated on the training rows so that the average
conditional variance equals the mean squared residual (:func:`level_scale`): by the
law of total variance the sampled marginal variance then matches the data's when the
other variables follow the data.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import DataError

__all__ = ["draw_levels", "level_base", "level_probabilities", "level_scale"]

#: Largest number of safeguarded Newton steps for the centre ``c``.
CENTRE_STEPS = 80
#: A row's centre is found when its mean is this share of the level range off.
TOLERANCE = 1e-9
#: Bisection steps for the scale ``s`` (on a log scale; the bracket spans 10^8).
SCALE_STEPS = 30
#: Rows (evenly spaced) the scale is calibrated on, at most.
SCALE_ROWS = 4000
#: The target mean is clipped this share of the level range inside the end levels.
EDGE = 1e-3


def _probabilities(
    levels: NDArray, log_base: NDArray, centre: NDArray, scale: float
) -> NDArray[np.float64]:
    """``(n, L)`` tilted base measures centred at ``centre`` (rows sum to 1)."""
    logit = log_base[None, :] - ((levels[None, :] - centre[:, None]) ** 2) / (2.0 * scale * scale)
    p = np.exp(logit - logit.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def _log_base(levels: NDArray, base: NDArray | None) -> NDArray[np.float64]:
    """Log of the base measure (uniform when ``base`` is ``None``)."""
    if base is None:
        return np.zeros(len(levels))
    b = np.asarray(base, dtype=np.float64)
    if b.shape != np.shape(levels) or not np.all(b > 0):
        raise DataError(
            f"the base measure has shape {b.shape} and minimum {b.min() if b.size else None}; "
            f"give one positive weight per level ({len(levels)})"
        )
    return np.log(b / b.sum())


def level_base(spec) -> NDArray[np.float64] | None:
    """An ordinal :class:`~fedstruct.methods.fedngm.schema.VariableSpec`'s base measure:
    its level frequencies when the schema has them (and all are positive, which
    pooled counts of observed levels are), else ``None`` (uniform)."""
    f = np.asarray(spec.frequencies, dtype=np.float64)
    return f if len(f) == len(spec.levels) and len(f) and np.all(f > 0) else None


def level_probabilities(
    mean: NDArray, levels: NDArray, scale: float, base: NDArray | None = None
) -> NDArray[np.float64]:
    """Per row, the distribution over ``levels`` with the given ``mean`` (module
    docstring).

    Parameters
    ----------
    mean
        ``(n,)`` target means (clipped just inside the level range).
    levels
        ``(L,)`` sorted, distinct levels.
    scale
        ``s > 0``: the spread of the Gaussian factor.
    base
        ``(L,)`` positive base measure ``f`` (the marginal level frequencies);
        ``None``: uniform.

    Returns
    -------
    ndarray
        ``(n, L)`` probabilities whose rows have mean ``mean`` (to ~1e-9 of the
        level range).
    """
    lv = np.asarray(levels, dtype=np.float64)
    mu = np.asarray(mean, dtype=np.float64)
    if len(lv) == 1:
        return np.ones((len(mu), 1))
    log_base = _log_base(lv, base)
    lo, hi = float(lv[0]), float(lv[-1])
    span = hi - lo
    target = np.clip(mu, lo + EDGE * span, hi - EDGE * span)
    # A centre this far beyond an end level puts all but EDGE² of the mass on it.
    spread = np.log(1.0 / EDGE**2) + float(log_base.max() - log_base.min())
    reach = span + scale * scale * spread / float(np.diff(lv).min()) + scale
    a = np.full(len(mu), lo - reach)
    b = np.full(len(mu), hi + reach)
    c = target.copy()
    rows = np.arange(len(mu))
    for _ in range(CENTRE_STEPS):
        p = _probabilities(lv, log_base, c[rows], scale)
        m = p @ lv
        var = np.maximum(p @ lv**2 - m * m, 1e-300)
        gap = target[rows] - m
        done = np.abs(gap) <= TOLERANCE * span
        low = gap > 0
        a[rows] = np.where(low, c[rows], a[rows])
        b[rows] = np.where(low, b[rows], c[rows])
        step = c[rows] + gap * scale * scale / var
        inside = (step > a[rows]) & (step < b[rows])
        new = np.where(inside, step, 0.5 * (a[rows] + b[rows]))
        c[rows] = np.where(done, c[rows], new)
        rows = rows[~done]
        if not len(rows):
            break
    return _probabilities(lv, log_base, c, scale)


def level_scale(
    mean: NDArray, values: NDArray, levels: NDArray, base: NDArray | None = None
) -> float:
    """The scale ``s`` whose level distributions, centred on the predictions ``mean``,
    have an average variance equal to the mean squared residual ``(values - mean)²``.

    Bisection on ``log s`` between 1e-4 and 1e4 times the level range (the average
    variance increases with ``s``); a residual beyond what the levels allow gives the
    upper end (rows close to the exponentially tilted base measure), a zero residual
    the lower end. At most
    :data:`SCALE_ROWS` evenly spaced rows enter the average.
    """
    lv = np.asarray(levels, dtype=np.float64)
    mu = np.asarray(mean, dtype=np.float64)
    x = np.asarray(values, dtype=np.float64)
    if len(lv) == 1 or not len(mu):
        return 1.0
    if len(mu) > SCALE_ROWS:
        pick = np.linspace(0, len(mu) - 1, SCALE_ROWS).round().astype(np.int64)
        mu, x = mu[pick], x[pick]
    target = float(np.mean((x - mu) ** 2))
    span = float(lv[-1] - lv[0])
    a, b = np.log(1e-4 * span), np.log(1e4 * span)
    for _ in range(SCALE_STEPS):
        c = 0.5 * (a + b)
        p = level_probabilities(mu, lv, float(np.exp(c)), base)
        variance = float((p @ lv**2 - (p @ lv) ** 2).mean())
        a, b = (c, b) if variance < target else (a, c)
    return float(np.exp(0.5 * (a + b)))


def draw_levels(
    mean: NDArray,
    levels: NDArray,
    scale: float,
    rng: np.random.Generator,
    base: NDArray | None = None,
) -> NDArray[np.float64]:
    """One level per row from :func:`level_probabilities` (inverse-CDF draws)."""
    lv = np.asarray(levels, dtype=np.float64)
    p = level_probabilities(mean, lv, scale, base)
    u = rng.random((len(p), 1))
    k = np.minimum((p.cumsum(axis=1) < u).sum(axis=1), len(lv) - 1)
    return lv[k]
