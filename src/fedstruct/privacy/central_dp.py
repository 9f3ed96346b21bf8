"""Central differential privacy on the aggregate: DP-FedAvg with fixed or adaptive clipping.

Each site clips its update ``Δ_k`` (its trained weights minus the round's global
weights) to L2 norm ``C`` (:func:`clip_update`); the server adds Gaussian noise
``N(0, (z_Δ C)² I)`` to the *sum* of the clipped updates and divides by the number
of sites it asked, ``m`` (:func:`noised_mean`): McMahan, Ramage, Talwar & Zhang
(2018), "Learning differentially private recurrent language models", Algorithm 1
with uniform weights and the fixed denominator of its estimator ``f̃_f``: ``m`` is
the server's own sample size, known before any site answers, so it reveals nothing
about them (a site that drops out leaves a slightly shorter step).

Adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021, "Differentially
private learning with adaptive clipping", Algorithm 1): each site also sends the bit
``b_k = 1[‖Δ_k‖ ≤ C]``; the server noises their sum with ``N(0, σ_b²)``
(:func:`noised_fraction_below`) and moves ``C`` geometrically toward the target
quantile ``γ`` of the update norms, ``C ← C · exp(-η_C (b̄ - γ))``
(:func:`next_clip`). Releasing the noised bit sum costs privacy too: with the total
noise multiplier ``z`` of the run, the updates get ``z_Δ = (z⁻² - (2σ_b)⁻²)^(-1/2)``
(:func:`update_noise_multiplier`, their Theorem 1), so that the round is as private
as one Gaussian mechanism of noise multiplier ``z``.

Every function takes a *sum* (and counts), never a site's update: the same code runs
when the sum comes from secure aggregation. The guarantee is site-level
(user-level): ``(ε, δ)`` for adding or removing one site's whole data, accounted over
rounds with the RDP accountant of :mod:`fedstruct.privacy.dp` at the round's
sampling rate ``q`` (the share of sites asked; the analysis assumes Poisson
sampling, the participation model samples a fixed number: the approximation that
TensorFlow Federated and Flower make too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError
from fedstruct.privacy.dp import PrivacyLedger

__all__ = [
    "BELOW_CLIP",
    "CentralDP",
    "central_epsilon",
    "clip_update",
    "next_clip",
    "noised_fraction_below",
    "noised_mean",
    "update_noise_multiplier",
]

#: The name of a site's clipping bit ``1[‖Δ_k‖ ≤ C]`` in its reply's arrays.
BELOW_CLIP = "central_dp.below_clip"


@dataclass(frozen=True)
class CentralDP:
    """The settings of central DP (module docstring).

    Parameters
    ----------
    noise_multiplier
        ``z``: the noise of a round, relative to the clipping norm (with adaptive
        clipping, of the updates and the bit count together).
    clip
        ``C``: the clipping norm (with adaptive clipping, its first value).
    target_quantile
        ``γ``: adaptive clipping's target share of updates under the norm (0.5: the
        median); ``None``: fixed clipping.
    clip_learning_rate
        ``η_C`` of the geometric update (0.2, Andrew et al. 2021, §4).
    count_noise
        ``σ_b``: the standard deviation of the noise on the bit count; ``None``:
        ``m / 20`` for ``m`` sites asked (Andrew et al.'s choice).
    delta
        ``δ`` of the site-level ``(ε, δ)``.
    """

    noise_multiplier: float
    clip: float = 1.0
    target_quantile: float | None = None
    clip_learning_rate: float = 0.2
    count_noise: float | None = None
    delta: float = 1e-5

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "central DP")

    @property
    def adaptive(self) -> bool:
        """Whether the clipping norm follows a quantile."""
        return self.target_quantile is not None

    def bit_noise(self, asked: int) -> float:
        """``σ_b`` for a round of ``asked`` sites."""
        return self.count_noise if self.count_noise is not None else max(asked, 1) / 20.0


_CONSTRAINTS = {
    "noise_multiplier": Interval(float, 0, closed="neither"),
    "clip": Interval(float, 0, closed="neither"),
    "target_quantile": Interval(float, 0, 1, allow_none=True),
    "clip_learning_rate": Interval(float, 0),
    "count_noise": Interval(float, 0, closed="neither", allow_none=True),
    "delta": Interval(float, 0, 1, closed="neither"),
}


def clip_update(
    update: Mapping[str, NDArray[np.floating]], clip: float
) -> tuple[dict[str, NDArray[np.floating]], float]:
    """``Δ · min(1, C / ‖Δ‖)`` with ``‖Δ‖`` the L2 norm over every array (McMahan et
    al. 2018, Algorithm 1, ``ClipFn``), and ``‖Δ‖``."""
    norm = float(
        np.sqrt(sum(float(np.sum(np.square(a, dtype=np.float64))) for a in update.values()))
    )
    scale = min(1.0, clip / norm) if norm > 0 else 1.0
    return {k: (np.asarray(a) * scale).astype(np.asarray(a).dtype) for k, a in update.items()}, norm


def update_noise_multiplier(settings: CentralDP, asked: int) -> float:
    """``z_Δ``, the noise multiplier of the updates' sum: ``z`` with fixed clipping;
    with adaptive clipping ``(z⁻² - (2σ_b)⁻²)^(-1/2)`` (Andrew et al. 2021,
    Theorem 1: the bit count, of sensitivity 1/2 once centred, spends the rest).

    Raises
    ------
    ConfigError
        If ``2σ_b <= z`` (the bit count alone would spend the whole budget).
    """
    z = settings.noise_multiplier
    if not settings.adaptive:
        return z
    sigma_b = settings.bit_noise(asked)
    rest = z**-2 - (2 * sigma_b) ** -2
    if rest <= 0:
        raise ConfigError(
            f"central DP: the clip-count noise σ_b = {sigma_b:g} must exceed half the noise "
            f"multiplier z = {z:g} (Andrew et al. 2021, Theorem 1), else counting the "
            "clipped updates spends the whole budget; raise central_dp_count_noise or lower "
            "central_dp_noise"
        )
    return float(rest**-0.5)


def noised_mean(
    total: Mapping[str, NDArray[np.floating]],
    *,
    clip: float,
    noise_multiplier: float,
    denominator: int,
    rng: np.random.Generator,
) -> dict[str, NDArray[np.float32]]:
    """``(Σ_k Δ_k + N(0, (z_Δ C)² I)) / m``: the sum of clipped updates, noised, over
    the number of sites asked (module docstring), in float32. Noise is drawn for the
    arrays in sorted name order."""
    if denominator < 1:
        raise ConfigError(f"central DP: need at least one site asked, got {denominator}")
    sd = noise_multiplier * clip
    return {
        k: ((total[k] + rng.normal(0.0, sd, size=np.shape(total[k]))) / denominator).astype(
            np.float32
        )
        for k in sorted(total)
    }


def noised_fraction_below(
    below: float, *, denominator: int, count_noise: float, rng: np.random.Generator
) -> float:
    """``b̄ = (Σ_k b_k + N(0, σ_b²)) / m``: the noised share of updates under the clip
    (Andrew et al. 2021, Algorithm 1)."""
    return float((below + rng.normal(0.0, count_noise)) / max(denominator, 1))


def next_clip(clip: float, fraction_below: float, target_quantile: float, rate: float) -> float:
    """``C · exp(-η_C (b̄ - γ))`` (Andrew et al. 2021, the geometric update): the norm
    grows when fewer than ``γ`` of the updates fall under it, shrinks otherwise."""
    return float(clip * np.exp(-rate * (fraction_below - target_quantile)))


def central_epsilon(noise_multiplier: float, sample_rates: Sequence[float], delta: float) -> float:
    """Site-level ε after one round per entry of ``sample_rates`` (the share of sites
    asked in each), each a subsampled Gaussian of noise multiplier ``z`` (RDP,
    :class:`~fedstruct.privacy.dp.PrivacyLedger`)."""
    ledger = PrivacyLedger((noise_multiplier, q, 1) for q in sample_rates)
    return ledger.epsilon(delta)
