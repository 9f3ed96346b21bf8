"""Hyper-parameters of the FedAvg reference method.

FedAvg: McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks
from Decentralized Data", Algorithm 1 (``ClientUpdate``: E local epochs of
mini-batch SGD with batch size B and learning rate eta; the server averages the
client models weighted by their sample counts n_k / n).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.errors import ConfigError
from fedstruct.fl.device import AUTO, DeviceName
from fedstruct.privacy.central_dp import CentralDP
from fedstruct.privacy.dp import DPBudget, site_budget

__all__ = ["CATEGORICAL_IMPUTATIONS", "FedAvgConfig"]

#: What a missing categorical value becomes (:mod:`fedstruct.fl.features`; kept here
#: too so that a run's settings import no torch).
CATEGORICAL_IMPUTATIONS = ("missing-level", "mode")


@dataclass(frozen=True)
class FedAvgConfig:
    """Every hyper-parameter of FedAvg on a tabular classification task.

    Parameters
    ----------
    rounds
        Communication rounds.
    local_epochs
        E: passes over the local data per round (Algorithm 1).
    batch_size
        B: local mini-batch size.
    learning_rate
        eta: local SGD step size.
    hidden
        Width of the hidden layer of the classifier; 0 gives multinomial logistic
        regression.
    staleness_exponent
        ``None`` ignores answers that arrive in a later round (FedAvg as published);
        a number ``a`` merges them with weight ``n_k * (1 + staleness) ** -a``.
    test_fraction
        Share of each client's rows it holds out: the federated evaluation after the
        last round scores them (0: it scores the training rows).
    categorical_imputation
        What a missing categorical or ordinal value becomes: ``missing-level`` (no
        level: its one-hot block stays 0 and its missing indicator, 1, acts as a level
        of its own) or ``mode`` (the level most frequent over every site's rows, from
        the federated level counts; the indicator is 1 too). A missing continuous value
        is always the federated mean (:mod:`fedstruct.fl.features`).
    dp_epsilon
        If set, every site trains with DP-SGD (Abadi et al. 2016; docs/privacy.md)
        within this total ε over the whole run, accounted by its own ledger
        (:class:`~fedstruct.privacy.dp.SitePrivacy`); ``None`` (default): no DP.
    dp_delta
        δ of each site's ``(ε, δ)``; ``None`` (default): ``1 / n_k``, the inverse of
        the site's training rows.
    dp_clip
        DP-SGD's per-row gradient clipping norm ``C`` (1.0).
    dp_noise_multiplier
        DP-SGD's noise multiplier ``σ``; ``None`` (default): calibrated per site so
        that ``rounds`` rounds spend ``dp_epsilon``. A value whose rounds would spend
        more is refused before any training.
    central_dp_noise
        If set, central DP on the aggregate (:mod:`fedstruct.privacy.central_dp`;
        McMahan et al. 2018): every site clips its update to ``central_dp_clip``, the
        server averages the clipped updates uniformly (not by ``n_k``), with Gaussian
        noise of this noise multiplier ``z`` on their sum, divided by the number of
        sites asked; ε over the rounds in ``central_dp_epsilon``. ``None``
        (default): none. Cannot be combined with ``staleness_exponent``.
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
    device
        Where the clients train: ``auto`` (a CUDA GPU when torch finds one, else
        the CPU), ``cpu``, ``cuda`` or ``cuda:N`` (:mod:`fedstruct.fl.device`;
        docs/runtime.md). Messages and saved models hold CPU arrays whatever it is.
    """

    rounds: int = 20
    local_epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 0.1
    hidden: int = 32
    staleness_exponent: float | None = None
    test_fraction: float = 0.0
    categorical_imputation: str = "missing-level"
    dp_epsilon: float | None = None
    dp_delta: float | None = None
    dp_clip: float = 1.0
    dp_noise_multiplier: float | None = None
    central_dp_noise: float | None = None
    central_dp_clip: float = 1.0
    central_dp_quantile: float | None = None
    central_dp_clip_rate: float = 0.2
    central_dp_count_noise: float | None = None
    central_dp_delta: float = 1e-5
    device: str = AUTO

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fedavg")
        self.dp_budget(n_rows=2)  # with DP: validates ε, δ and C
        if self.central_dp() is not None and self.staleness_exponent is not None:
            raise ConfigError(
                "fedavg central DP (central_dp_noise) bounds each round's sum of the updates "
                "of the sites asked that round; a late update (staleness_exponent) would add "
                "to another round's: drop one of the two"
            )

    def central_dp(self) -> CentralDP | None:
        """Central DP's settings (validated), or ``None`` without it."""
        return CentralDP.from_settings(self)

    def dp_budget(self, n_rows: int) -> DPBudget | None:
        """A site's DP-SGD budget for its ``n_rows`` training rows (``δ = 1 / n_k``
        unless ``dp_delta`` is set), or ``None`` without DP."""
        return site_budget(self.dp_epsilon, self.dp_delta, self.dp_clip, n_rows)


_CONSTRAINTS = {
    "rounds": Interval(int, 1),
    "local_epochs": Interval(int, 1),
    "batch_size": Interval(int, 1),
    "learning_rate": Interval(float, 0, closed="neither"),
    "hidden": Interval(int, 0),
    "staleness_exponent": Interval(float, 0, allow_none=True),
    "test_fraction": Interval(float, 0, 1, closed="left"),
    "categorical_imputation": OneOf(CATEGORICAL_IMPUTATIONS),
    "dp_delta": Interval(float, 0, 1, closed="neither", allow_none=True),
    "dp_clip": Interval(float, 0, closed="neither"),
    "dp_noise_multiplier": Interval(float, 0, closed="neither", allow_none=True),
    "device": DeviceName(),
}
