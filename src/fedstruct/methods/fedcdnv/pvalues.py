"""Scaled p-values: what a client shares about the strength of its relationships (eq. 2).

A client's per-pair p-value ``p`` (the separating test's for a non-adjacent pair, the
largest over its tests for an adjacent one) inside the interval
``[alpha - theta1, alpha + theta2]`` is scaled to ``[0, 1]`` by eq. (2),

    p_hat = (alpha - p) / theta1   if p in [alpha - theta1, alpha]
    p_hat = (p - alpha) / theta2   if p in (alpha, alpha + theta2],

and multiplied by -1 (Algorithm 1, line 13): a p-value near the significance level
is sent only as a signed confidence. Outside the interval the p-value is sent as is
(it lies in ``[0, alpha - theta1)`` or ``(alpha + theta2, 1]``, so it is non-negative).
The sign bit tells the two apart on the server, ``-0.0`` included (``p = alpha``).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery import CITest
from fedstruct.errors import ConfigError
from fedstruct.graphs import Graph

__all__ = ["check_interval", "independence_evidence", "read_scaled", "scale_pvalues"]

_EPS = 1e-12


def check_interval(alpha: float, theta1: float, theta2: float) -> None:
    """Check ``0 < theta1 < alpha`` and ``0 < theta2 < 1 - alpha`` (§3.2).

    Raises
    ------
    ConfigError
        Naming the violated bound.
    """
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha = {alpha} must lie in (0, 1)")
    if not 0.0 < theta1 < alpha:
        raise ConfigError(f"theta1 = {theta1} must lie in (0, alpha = {alpha})")
    if not 0.0 < theta2 < 1.0 - alpha:
        raise ConfigError(f"theta2 = {theta2} must lie in (0, 1 - alpha = {1 - alpha})")


def scale_pvalues(
    p: NDArray[np.float64], alpha: float, theta1: float, theta2: float
) -> NDArray[np.float64]:
    """Eq. (2) inside the interval, times -1; p-values outside it unchanged."""
    p = np.asarray(p, dtype=np.float64)
    # Bounds widened by 1e-12 so that e.g. 0.05 - 0.049 includes p = 0.001 (§4.1).
    low = (p >= alpha - theta1 - _EPS) & (p <= alpha)
    high = (p > alpha) & (p <= alpha + theta2 + _EPS)
    out = p.copy()
    out[low] = -np.minimum((alpha - p[low]) / theta1, 1.0)
    out[high] = -np.minimum((p[high] - alpha) / theta2, 1.0)
    return out


def independence_evidence(
    pag: Graph, ci_test: CITest, pvalues: NDArray[np.float64], depth: int | None
) -> NDArray[np.float64]:
    """The per-pair p-value that decides stability (Definitions 3.4 and 3.5).

    An adjacent pair keeps the learner's summary: the largest p-value of its
    dependence tests. A non-adjacent pair is stably non-causal if *some*
    ``Z ⊆ O_k \\ {X_i, X_j}`` gives a p-value above ``alpha + theta2`` (Definition 3.5),
    but the adjacency search stops at the first independence; so its p-value is the
    largest over the sets ``Z`` of at most ``depth`` variables (``None``: any size)
    drawn from the two variables' neighbours in the client's graph — where FCI looks
    for separating sets too; all of ``O_k`` would cost ``O(d^(2 + depth))`` tests —
    computed on the client's cached CI test. Tests skipped by the small-sample rule
    are ignored.
    """
    out = np.array(pvalues, dtype=np.float64, copy=True)
    d = pag.n_nodes
    adjacent = pag.adjacency()
    for i in range(d):
        for j in range(i + 1, d):
            if adjacent[i, j]:
                continue
            others = [int(k) for k in np.flatnonzero(adjacent[i] | adjacent[j]) if k not in (i, j)]
            largest = len(others) if depth is None else min(depth, len(others))
            best = out[i, j]
            for size in range(largest + 1):
                performed = False
                for z in combinations(others, size):
                    p, skipped = ci_test.query(i, j, z)
                    if not skipped:
                        performed = True
                        best = p if np.isnan(best) else max(best, p)
                if not performed:
                    break
            out[i, j] = out[j, i] = best
    return out


def read_scaled(p_tilde: NDArray[np.float64]) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Split what :func:`scale_pvalues` sent: (inside the interval?, ``p_hat``).

    ``p_hat`` is the scaled value inside the interval and the p-value itself outside
    it (the paper's rule for non-stable relationships outside the interval, §3.2).
    """
    p_tilde = np.asarray(p_tilde, dtype=np.float64)
    return np.signbit(p_tilde), np.abs(p_tilde)
