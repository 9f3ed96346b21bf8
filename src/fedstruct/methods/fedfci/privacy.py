"""Differential privacy of the statistics a site releases (``dp_epsilon``).

With ``dp_epsilon`` set, every site adds Gaussian noise to each batch of statistics it
releases and composes its releases with the
Rényi-DP accountant (:class:`~fedstruct.privacy.dp.PrivacyLedger`; the Gaussian
mechanism of Dwork & Roth 2014, §3.5 and App. A, without subsampling: sample rate 1).
The noise multiplier ``σ`` is calibrated once, so that ``dp_releases`` releases spend at
most ``(ε, δ)`` (:class:`~fedstruct.privacy.dp.DPBudget`); the noise of a release has
standard deviation ``σ·Δ``, ``Δ`` its L2 sensitivity to adding or removing one of the
site's rows: for a batch of ``R`` contingency tables (G², χ²), one row adds 1 to one
cell of each table whose variables it has, so ``Δ = √R``. A site does not withhold small
tables under DP (``min_contribution_rows`` is 1): the noise protects them, and
withholding would let one row release a whole table. A DP run releases nothing else:
round 2's margins are not asked for, the variables' numbers of levels coming from public
information (the federation schema of a user's files, a network's states).

A site refuses a release that would take its total beyond ``ε`` (the search needed more
exchanges than planned): one line, naming the site and what to raise. The server turns
the noised counts into counts (rounded, at least 0: post-processing, no privacy cost).
DP is taken for categorical and ordinal variables only (G², χ²): the moments of numeric
variables have no bound on their sensitivity without public ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import DataError
from fedstruct.privacy.dp import DPBudget, PrivacyLedger

__all__ = ["StatisticsPrivacy"]


@dataclass(frozen=True)
class StatisticsPrivacy:
    """A site's budget for its releases (module docstring).

    Parameters
    ----------
    epsilon, delta
        The budget over the whole run.
    releases
        How many releases it is planned for (margins and exchanges).
    """

    epsilon: float
    delta: float
    releases: int

    @cached_property
    def noise_multiplier(self) -> float:
        """``σ``: the noise of each release, in units of its sensitivity."""
        return DPBudget(self.epsilon, self.delta).noise_multiplier(1.0, self.releases)

    def spent(self, releases: int) -> float:
        """ε after ``releases`` releases."""
        ledger = PrivacyLedger([(self.noise_multiplier, 1.0, releases)] if releases else [])
        return ledger.epsilon(self.delta)

    def release(
        self,
        ledger: PrivacyLedger,
        vectors: dict[str, NDArray],
        sensitivity: float,
        rng: np.random.Generator,
        site: str,
    ) -> dict[str, NDArray[np.float64]]:
        """``vectors`` with the release's noise added (as floats), recorded in
        ``ledger``.

        Raises
        ------
        DataError
            When the release would take the site beyond ``ε``.
        """
        sigma = self.noise_multiplier
        if ledger.epsilon(self.delta, (sigma, 1.0, 1)) > self.epsilon * (1 + 1e-9):
            raise DataError(
                f"site {site!r}: its privacy budget dp_epsilon = {self.epsilon:g} is spent "
                f"after {len(ledger.history)} releases (planned: dp_releases = "
                f"{self.releases}); the search needs more exchanges: raise dp_releases "
                "(more noise per release) or dp_epsilon, or bound the search (depth)"
            )
        ledger.record(sigma, 1.0, 1)
        scale = sigma * sensitivity
        return {
            name: np.asarray(v, dtype=np.float64) + rng.normal(0.0, scale, np.shape(v))
            for name, v in vectors.items()
        }
