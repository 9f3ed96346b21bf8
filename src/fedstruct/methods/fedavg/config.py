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
from fedstruct.privacy.settings import CentralDPSettings, DPSGDSettings

__all__ = ["CATEGORICAL_IMPUTATIONS", "FedAvgConfig"]

#: What a missing categorical value becomes (:mod:`fedstruct.fl.features`; kept here
#: too so that a run's settings import no torch).
CATEGORICAL_IMPUTATIONS = ("missing-level", "mode")


@dataclass(frozen=True)
class FedAvgConfig(CentralDPSettings, DPSGDSettings):
    """Every hyper-parameter of FedAvg on a tabular classification task.

    DP-SGD at the sites (``dp_*``) and central DP on the aggregate
    (``central_dp_*``) are the shared settings of :class:`DPSGDSettings` and
    :class:`CentralDPSettings` (:mod:`fedstruct.privacy.settings`), which declare,
    document and check them; as base classes, their fields come first.

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
        A number cannot be combined with central DP (``central_dp_noise``).
    test_fraction
        Share of each client's rows it holds out: the federated evaluation after the
        last round scores them (0: it scores the training rows).
    categorical_imputation
        What a missing categorical or ordinal value becomes: ``missing-level`` (no
        level: its one-hot block stays 0 and its missing indicator, 1, acts as a level
        of its own) or ``mode`` (the level most frequent over every site's rows, from
        the federated level counts; the indicator is 1 too). A missing continuous value
        is always the federated mean (:mod:`fedstruct.fl.features`).
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
    device: str = AUTO

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fedavg")
        super().__post_init__()  # the DP settings' own checks
        if self.central_dp() is not None and self.staleness_exponent is not None:
            raise ConfigError(
                "fedavg central DP (central_dp_noise) bounds each round's sum of the updates "
                "of the sites asked that round; a late update (staleness_exponent) would add "
                "to another round's: drop one of the two"
            )


_CONSTRAINTS = {
    "rounds": Interval(int, 1),
    "local_epochs": Interval(int, 1),
    "batch_size": Interval(int, 1),
    "learning_rate": Interval(float, 0, closed="neither"),
    "hidden": Interval(int, 0),
    "staleness_exponent": Interval(float, 0, allow_none=True),
    "test_fraction": Interval(float, 0, 1, closed="left"),
    "categorical_imputation": OneOf(CATEGORICAL_IMPUTATIONS),
    "device": DeviceName(),
}
