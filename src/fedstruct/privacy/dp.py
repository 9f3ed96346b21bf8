"""Differential-privacy budgets for DP-SGD, accounted across every round.

A client that trains with DP-SGD (Abadi et al. 2016) in several rounds composes the
privacy loss of all its steps: the ε it may report is the ε of the whole run, not of
one round. :class:`PrivacyLedger` keeps the steps a client has taken, as
``(noise multiplier, sampling rate, steps)`` entries, and composes them with the
Rényi-DP accountant of Opacus (Mironov 2017; the subsampled Gaussian of Mironov et
al. 2019). :class:`DPBudget` calibrates the noise so that a planned number of steps
stays within ``(ε, δ)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError

__all__ = ["DPBudget", "PrivacyLedger"]

# Opacus (and the torch.distributed it pulls in, ~1.5 s) is imported where it is
# used: most runs train without DP, and every process of a Flower deployment pays
# the import time of this module.


@lru_cache(maxsize=1)
def _orders() -> tuple[float, ...]:
    """Rényi orders of the accountant (Opacus' defaults)."""
    from opacus.accountants import RDPAccountant

    return tuple(RDPAccountant.DEFAULT_ALPHAS)


@lru_cache(maxsize=1024)
def _rdp_per_step(noise_multiplier: float, sample_rate: float) -> tuple[float, ...]:
    """RDP of one subsampled-Gaussian step at every order (composition adds them)."""
    from opacus.accountants.analysis.rdp import compute_rdp

    rdp = compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=_orders())
    return tuple(float(v) for v in np.atleast_1d(rdp))


@lru_cache(maxsize=256)
def _calibrate(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    from opacus.accountants.utils import get_noise_multiplier

    return float(
        get_noise_multiplier(
            target_epsilon=epsilon,
            target_delta=delta,
            sample_rate=sample_rate,
            steps=steps,
            accountant="rdp",
        )
    )


_BUDGET_CONSTRAINTS = {
    "epsilon": Interval(float, 0, closed="neither"),
    "delta": Interval(float, 0, 1, closed="neither"),
    "max_grad_norm": Interval(float, 0, closed="neither"),
}


@dataclass(frozen=True)
class DPBudget:
    """A client's ``(ε, δ)`` budget for the whole run and its clipping norm.

    Parameters
    ----------
    epsilon
        Total ε over every round.
    delta
        δ (the F-CMs experiments use 1e-5).
    max_grad_norm
        Per-sample gradient clipping norm ``C`` (App. E.4, eq. 4: 1.0).
    """

    epsilon: float
    delta: float = 1e-5
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        check_fields(self, _BUDGET_CONSTRAINTS, "DP")

    def noise_multiplier(self, sample_rate: float, steps: int) -> float:
        """The smallest noise multiplier (to Opacus' tolerance) with which ``steps``
        steps at sampling rate ``sample_rate`` spend at most ``ε``."""
        if not 0 < sample_rate <= 1 or steps < 1:
            raise ConfigError(
                f"need 0 < sample_rate <= 1 and steps >= 1, got {sample_rate}, {steps}"
            )
        return _calibrate(self.epsilon, self.delta, float(sample_rate), int(steps))


class PrivacyLedger:
    """The DP-SGD steps one client has taken, across rounds.

    Parameters
    ----------
    history
        Earlier ``(noise multiplier, sampling rate, steps)`` entries (a client's
        saved state).
    """

    def __init__(self, history: Iterable[tuple[float, float, int]] = ()) -> None:
        self.history = [(float(s), float(q), int(n)) for s, q, n in history]

    def record(self, noise_multiplier: float, sample_rate: float, steps: int) -> None:
        """Add ``steps`` steps taken with this noise and sampling rate."""
        self.history.append((float(noise_multiplier), float(sample_rate), int(steps)))

    def epsilon(self, delta: float, extra: tuple[float, float, int] | None = None) -> float:
        """ε spent so far (plus a hypothetical ``extra`` entry) at ``delta``."""
        entries = self.history + ([extra] if extra is not None else [])
        if not entries:
            return 0.0
        from opacus.accountants.analysis.rdp import get_privacy_spent

        rdp = sum(n * np.asarray(_rdp_per_step(s, q)) for s, q, n in entries)
        eps, _ = get_privacy_spent(orders=list(_orders()), rdp=rdp, delta=delta)
        return float(eps)

    def allows(
        self, budget: DPBudget, noise_multiplier: float, sample_rate: float, steps: int
    ) -> bool:
        """Whether ``steps`` more steps keep the total within ``budget.epsilon``."""
        extra = (noise_multiplier, sample_rate, steps)
        return self.epsilon(budget.delta, extra) <= budget.epsilon
