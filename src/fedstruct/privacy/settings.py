"""The DP settings a method's config takes: declared, documented and validated once.

A method that trains with DP-SGD at its sites inherits :class:`DPSGDSettings`
(``dp_epsilon``, ``dp_delta``, ``dp_clip``, ``dp_noise_multiplier``); one whose
server step is a post-processing of the noised mean update inherits
:class:`CentralDPSettings` (the six ``central_dp_*`` settings). Each class holds its
fields' defaults, their documentation (the numpy ``Parameters`` entries that
``fedstruct run METHOD --help`` shows, read along the MRO by
:func:`fedstruct.runs.settings.describe_settings`) and their validation (its
``__post_init__``, which calls on to the next class's, so that a config can inherit
both). A method's own refusals (an algorithm whose upload DP does not protect) stay
in the method's config, which calls ``super().__post_init__()`` where its checks want
the DP settings validated.

Dataclass inheritance puts a base's fields before the subclass's own, so these
settings come first in a config's fields (``get_params`` and a saved model's
``params``; every reader takes them by name); ``--help``'s settings list puts them
last, after the method's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError
from fedstruct.privacy.central_dp import CentralDP
from fedstruct.privacy.dp import DPBudget, PrivacyLedger, SitePrivacy, site_budget

__all__ = [
    "CentralDPSettings",
    "DPSGDSettings",
    "LocalTraining",
    "refuse_unused",
    "site_privacy",
]


def refuse_unused(settings: Any, names: Iterable[str], switch: str, why: str) -> None:
    """Refuse a setting of ``names`` changed from its default while ``switch`` is
    ``None``: it would have no effect (``--set dp_noise_multiplier=1`` without
    ``dp_epsilon`` trained without DP, its metrics those of a plain run).

    Raises
    ------
    ConfigError
        Naming the first such setting, ``switch`` and ``why`` it needs it.
    """
    if getattr(settings, switch) is not None:
        return
    defaults = {f.name: f.default for f in dataclasses.fields(settings)}
    for name in names:
        value = getattr(settings, name)
        if value != defaults[name]:
            raise ConfigError(
                f"{name} = {value!r} has no effect without {switch}: {why}; set {switch} "
                f"too, or drop {name}"
            )


def _next_post_init(settings: object, cls: type) -> None:
    """Run the ``__post_init__`` that follows ``cls``'s in ``settings``' MRO, if any."""
    following = getattr(super(cls, settings), "__post_init__", None)
    if following is not None:
        following()


@dataclass(frozen=True)
class DPSGDSettings:
    """DP-SGD at each site (Abadi et al. 2016; docs/privacy.md, "DP-SGD at each site").

    Parameters
    ----------
    dp_epsilon
        If set, every site trains with DP-SGD (Abadi et al. 2016; docs/privacy.md)
        within this total ε over the whole run, accounted by its own ledger
        (:class:`~fedstruct.privacy.dp.SitePrivacy`); ``None`` (default): no DP.
    dp_delta
        δ of each site's ``(ε, δ)``; ``None`` (default): ``1 / n_k``, the inverse of
        the site's training rows.
    dp_clip
        DP-SGD's per-sample gradient clipping norm ``C`` (1.0).
    dp_noise_multiplier
        DP-SGD's noise multiplier ``σ``; ``None`` (default): calibrated per site so
        that ``rounds`` rounds spend ``dp_epsilon``. A value whose rounds would spend
        more is refused before any training.
    """

    dp_epsilon: float | None = None
    dp_delta: float | None = None
    dp_clip: float = 1.0
    dp_noise_multiplier: float | None = None

    def __post_init__(self) -> None:
        check_fields(self, _DPSGD_CONSTRAINTS, "DP-SGD")
        refuse_unused(self, ("dp_delta", "dp_clip", "dp_noise_multiplier"), "dp_epsilon", _SGD_WHY)
        self.dp_budget(n_rows=2)  # with DP: validates ε, δ and C
        _next_post_init(self, DPSGDSettings)

    def dp_budget(self, n_rows: int) -> DPBudget | None:
        """A site's DP-SGD budget for its ``n_rows`` training rows (``δ = 1 / n_k``
        unless ``dp_delta`` is set), or ``None`` without DP."""
        return site_budget(self.dp_epsilon, self.dp_delta, self.dp_clip, n_rows)


class LocalTraining(Protocol):
    """What a site's DP-SGD plan reads from its method's config (FedAvg's, the CAFE
    harness's): the DP settings and the local training schedule."""

    @property
    def batch_size(self) -> int: ...
    @property
    def local_epochs(self) -> int: ...
    @property
    def rounds(self) -> int: ...
    @property
    def dp_noise_multiplier(self) -> float | None: ...
    def dp_budget(self, n_rows: int) -> DPBudget | None: ...


def site_privacy(
    config: LocalTraining, site: str, n_rows: int, ledger: PrivacyLedger
) -> SitePrivacy | None:
    """With DP-SGD (``config.dp_epsilon``): the site's budget, noise and ``ledger`` for
    its ``n_rows`` training rows; ``None`` without DP. A fixed noise multiplier that
    would exceed the budget is refused here, before any training (:class:`SitePrivacy`)."""
    budget = config.dp_budget(n_rows)
    if budget is None:
        return None
    return SitePrivacy(
        site,
        budget,
        n_rows=n_rows,
        batch_size=config.batch_size,
        epochs=config.local_epochs,
        rounds=config.rounds,
        noise_multiplier=config.dp_noise_multiplier,
        ledger=ledger,
    )


#: Why the DP-SGD settings need ``dp_epsilon`` (:func:`refuse_unused`).
_SGD_WHY = (
    "DP-SGD runs only within a site's budget (a noise multiplier whose rounds would spend "
    "more than dp_epsilon is refused; docs/privacy.md)"
)

_DPSGD_CONSTRAINTS = {
    "dp_delta": Interval(float, 0, 1, closed="neither", allow_none=True),
    "dp_clip": Interval(float, 0, closed="neither"),
    "dp_noise_multiplier": Interval(float, 0, closed="neither", allow_none=True),
}


@dataclass(frozen=True)
class CentralDPSettings:
    """Central DP on the aggregate (:mod:`fedstruct.privacy.central_dp`; docs/privacy.md).

    The values are checked (by :class:`CentralDP`) when ``central_dp_noise`` is set.

    Parameters
    ----------
    central_dp_noise
        If set, central DP on the aggregate (:mod:`fedstruct.privacy.central_dp`;
        McMahan et al. 2018): every site clips its update to ``central_dp_clip``, the
        server averages the clipped updates uniformly (not by ``n_k``), with Gaussian
        noise of this noise multiplier ``z`` on their sum, divided by the number of
        sites asked; ε over the rounds in ``central_dp_epsilon``. ``None``
        (default): none.
    central_dp_clip
        ``C``, the updates' clipping norm (with adaptive clipping, its first value).
    central_dp_quantile
        Adaptive clipping (Andrew et al. 2021): the target share ``γ`` of updates
        whose norm is under the clip (0.5: the median); ``None`` (default): fixed.
    central_dp_clip_rate
        ``η_C``, adaptive clipping's geometric learning rate (0.2).
    central_dp_count_noise
        ``σ_b``, the noise on the count of updates under the clip; ``None``
        (default): the number of sites asked / 20.
    central_dp_delta
        ``δ`` of the site-level ``(ε, δ)`` of central DP (1e-5).
    """

    # the defaults are CentralDP's own (one place holds them)
    central_dp_noise: float | None = None
    central_dp_clip: float = CentralDP.clip
    central_dp_quantile: float | None = CentralDP.target_quantile
    central_dp_clip_rate: float = CentralDP.clip_learning_rate
    central_dp_count_noise: float | None = CentralDP.count_noise
    central_dp_delta: float = CentralDP.delta

    def __post_init__(self) -> None:
        self.central_dp()  # with central DP: validates every central_dp_* value
        others = [f.name for f in dataclasses.fields(CentralDPSettings)]
        others.remove("central_dp_noise")
        refuse_unused(
            self, others, "central_dp_noise", "central DP is on only with its noise multiplier"
        )
        _next_post_init(self, CentralDPSettings)

    def central_dp(self) -> CentralDP | None:
        """Central DP's settings (validated), or ``None`` without it."""
        return CentralDP.from_settings(self)
