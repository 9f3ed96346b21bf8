"""Hyper-parameters of the FedAvg reference method.

FedAvg: McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks
from Decentralized Data", Algorithm 1 (``ClientUpdate``: E local epochs of
mini-batch SGD with batch size B and learning rate eta; the server averages the
client models weighted by their sample counts n_k / n).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.errors import ConfigError

__all__ = ["FedAvgConfig"]


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
    """

    rounds: int = 20
    local_epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 0.1
    hidden: int = 32
    staleness_exponent: float | None = None

    def __post_init__(self) -> None:
        for name in ("rounds", "local_epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"fedavg {name} = {getattr(self, name)} must be at least 1")
        if self.learning_rate <= 0:
            raise ConfigError(f"fedavg learning_rate = {self.learning_rate} must be positive")
        if self.hidden < 0:
            raise ConfigError(f"fedavg hidden = {self.hidden} must be 0 or more")
        if self.staleness_exponent is not None and self.staleness_exponent < 0:
            raise ConfigError("fedavg staleness_exponent must be non-negative")
