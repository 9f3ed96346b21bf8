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

A method takes central DP with four calls, the same for every server whose step is
a post-processing of the noised mean (FedAvg; the CAFE harness's ``fedavg``,
``fedprox`` and ``moon``, whose server learning rate scales it):
:meth:`CentralDP.from_settings` reads the ``central_dp_*`` fields of its config,
:func:`round_config` goes with each fit request, the site answers
:func:`clipped_reply`, and :func:`central_step` turns the round's sum into the
noised mean update and the round's record.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError, FedstructWarning
from fedstruct.privacy.dp import PrivacyLedger

__all__ = [
    "BELOW_CLIP",
    "CLIP",
    "CentralDP",
    "central_epsilon",
    "central_report",
    "central_step",
    "clip_update",
    "clipped_reply",
    "current_clip",
    "next_clip",
    "noise_to_signal",
    "noised_fraction_below",
    "noised_mean",
    "round_config",
    "update_noise_multiplier",
]

#: The name of a site's clipping bit ``1[‖Δ_k‖ ≤ C]`` in its reply's arrays.
BELOW_CLIP = "central_dp.below_clip"
#: The name of the round's clipping norm ``C`` in a fit request's config.
CLIP = "central_dp.clip"


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

    @classmethod
    def from_settings(cls, settings: Any) -> CentralDP | None:
        """The settings of a method's config (validated), from its fields
        ``central_dp_noise`` (``z``; ``None``: no central DP), ``central_dp_clip``,
        ``central_dp_quantile``, ``central_dp_clip_rate``, ``central_dp_count_noise``
        and ``central_dp_delta``."""
        if settings.central_dp_noise is None:
            return None
        return cls(
            noise_multiplier=float(settings.central_dp_noise),
            clip=float(settings.central_dp_clip),
            target_quantile=settings.central_dp_quantile,
            clip_learning_rate=float(settings.central_dp_clip_rate),
            count_noise=settings.central_dp_count_noise,
            delta=float(settings.central_dp_delta),
        )

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


def noise_to_signal(settings: CentralDP, asked: int, dimension: int) -> float:
    """The expected ratio of the noise's norm to the largest norm the sites' mean
    update can have, in a round of ``asked`` sites over ``dimension`` weights:
    ``z_Δ √d / m``.

    McMahan et al. (2018), Algorithm 1 and §3: the server's estimator with uniform
    weights, ``f̃_f = Σ_k Δ_k / (qW)``, has ``qW = m`` (the sites asked) and
    sensitivity ``C / m`` (one site's clipped update, ``‖Δ_k‖ ≤ C``, divided by
    ``m``), and the Gaussian mechanism adds noise of standard deviation
    ``σ = z_Δ C / m`` to each of its ``d`` coordinates (:func:`noised_mean`). The
    noise vector's norm is then about ``σ √d = z_Δ C √d / m``, while the sites' mean
    update, an average of vectors of norm at most ``C``, has norm at most ``C``: the
    ratio is ``z_Δ √d / m``, at least, since agreeing sites give a mean near ``C`` and
    disagreeing ones less. Above 1 the noise outweighs any update the sites can
    agree on; the paper's language models used thousands of users per round for
    this reason. (Per coordinate the same ratio: noise ``z_Δ C / m`` against an
    update spread evenly, ``C / √d``.)
    """
    return update_noise_multiplier(settings, asked) * math.sqrt(dimension) / max(asked, 1)


def _warn_if_noise_dominates(settings: CentralDP, asked: int, dimension: int) -> None:
    """One :class:`FedstructWarning` line when :func:`noise_to_signal` exceeds 1."""
    ratio = noise_to_signal(settings, asked, dimension)
    if ratio <= 1:
        return
    z = update_noise_multiplier(settings, asked)
    needed = math.ceil(z * math.sqrt(dimension))
    warnings.warn(
        f"central DP: with {asked} sites asked per round the noise dominates the averaged "
        f"update: its norm is about z√d/m = {z:.3g}·√{dimension}/{asked} ≈ {ratio:.3g} times "
        "the clipping bound C, the largest norm the sites' mean update can have; expect a "
        f"poor model: ask about {needed} sites per round for a ratio of 1, or lower "
        "central_dp_noise (a larger ε)",
        FedstructWarning,
        stacklevel=3,
    )


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


def clipped_reply(
    update: Mapping[str, NDArray[np.floating]], clip: float, prefix: str
) -> dict[str, NDArray[np.floating]]:
    """A site's reply under central DP: its update ``Δ`` clipped to norm ``clip``
    (:func:`clip_update`), each array named ``prefix + name``, and the bit
    ``1[‖Δ‖ ≤ clip]`` (:data:`BELOW_CLIP`, adaptive clipping's count), both summable."""
    clipped, norm = clip_update(update, clip)
    return {
        **{prefix + k: v for k, v in clipped.items()},
        BELOW_CLIP: np.array([float(norm <= clip)], dtype=np.float64),
    }


def current_clip(history: Sequence[Mapping[str, float]], settings: CentralDP) -> float:
    """The clipping norm of the next round: the last round's ``central_dp_next_clip``
    in the server's ``history`` (adaptive clipping moves it), else the configured one."""
    for record in reversed(history):
        if "central_dp_next_clip" in record:
            return float(record["central_dp_next_clip"])
    return settings.clip


def round_config(
    settings: CentralDP, history: Sequence[Mapping[str, float]], asked: int
) -> dict[str, float]:
    """What a round's fit request carries in its config: the clipping norm ``C``
    (:data:`CLIP`). A clip-count noise too small for ``asked`` sites is refused here,
    before any site trains (:func:`update_noise_multiplier`)."""
    update_noise_multiplier(settings, asked)
    return {CLIP: current_clip(history, settings)}


def central_step(
    total: Mapping[str, NDArray[np.floating]],
    answered: int,
    *,
    settings: CentralDP,
    history: Sequence[Mapping[str, float]],
    asked: int,
    federation: int,
    prefix: str,
) -> tuple[dict[str, NDArray[np.float32]] | None, dict[str, float]]:
    """A round of central DP at the server, from the sum of its sites' replies.

    Parameters
    ----------
    total
        The sum of the :func:`clipped_reply` of the ``answered`` sites (plain or
        secure).
    answered
        How many sites are in the sum.
    settings, history
        Central DP's settings and the server's records of the earlier rounds (their
        clips and sampling rates).
    asked, federation
        Sites asked this round (the denominator ``m``) and sites in the federation:
        the round's sampling rate is their ratio.
    prefix
        The name prefix of the clipped update's arrays in ``total``.

    Returns
    -------
    mean, record
        The noised mean update ``(Σ_k Δ_k + N(0, (z_Δ C)² I)) / m`` (:func:`noised_mean`;
        ``None`` when no site answered; in the run's first round, a warning when the
        noise will dominate it, :func:`noise_to_signal`), and the round's ``central_dp_clip``,
        ``central_dp_next_clip`` (adaptive clipping's :func:`next_clip`),
        ``central_dp_sample_rate`` and ``central_dp_epsilon`` (the site-level ε of
        every round so far, :func:`central_epsilon`). The noise is drawn from the
        operating system's entropy, not the run's seed, which a reader of the run's
        settings knows (a resumed run draws anew).
    """
    clip = current_clip(history, settings)
    rng = np.random.default_rng()  # the OS's entropy: the run's seed is no secret
    mean = None
    following = clip
    if answered:
        deltas = {k[len(prefix) :]: v for k, v in total.items() if k.startswith(prefix)}
        if not any("central_dp_epsilon" in h for h in history):  # the run's first round
            _warn_if_noise_dominates(settings, asked, sum(np.size(v) for v in deltas.values()))
        z_update = update_noise_multiplier(settings, asked)
        mean = noised_mean(deltas, clip=clip, noise_multiplier=z_update, denominator=asked, rng=rng)
        if settings.adaptive:
            assert settings.target_quantile is not None
            fraction = noised_fraction_below(
                float(total[BELOW_CLIP][0]),
                denominator=asked,
                count_noise=settings.bit_noise(asked),
                rng=rng,
            )
            following = next_clip(
                clip, fraction, settings.target_quantile, settings.clip_learning_rate
            )
    rate = asked / federation
    rates = [h["central_dp_sample_rate"] for h in history if "central_dp_sample_rate" in h]
    record = {
        "central_dp_clip": clip,
        "central_dp_next_clip": following,
        "central_dp_sample_rate": rate,
        "central_dp_epsilon": central_epsilon(
            settings.noise_multiplier, [*rates, rate], settings.delta
        ),
    }
    return mean, record


def central_report(history: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """A run's metrics for central DP: the site-level ε of the run
    (``central_dp_epsilon``) and the last round's clipping norm (``central_dp_clip``);
    nothing for a run without it."""
    rounds = [h for h in history if "central_dp_epsilon" in h]
    if not rounds:
        return {}
    return {
        "central_dp_epsilon": rounds[-1]["central_dp_epsilon"],
        "central_dp_clip": rounds[-1]["central_dp_clip"],
    }
