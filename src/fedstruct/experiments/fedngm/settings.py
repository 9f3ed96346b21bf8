"""Settings of ``fedstruct run fedngm`` (defaults: the health-insurance setting)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.errors import (
    ConfigError,
    unknown_choice_message,
)
from fedstruct.experiments.runs import (
    FederationSettings,
)
from fedstruct.methods.fedngm import (
    FedNGMConfig,
)

__all__ = ["DATASETS", "FedNGMRun"]

#: Data sets ``fedstruct run fedngm`` knows.
DATASETS = ("health", "synthetic")


@dataclass(frozen=True)
class FedNGMRun(FederationSettings, FedNGMConfig):
    """Settings of ``fedstruct run fedngm`` (defaults: the health-insurance setting)."""

    dataset: str = "health"
    clients: int = 3
    rounds: int = 4
    n_variables: int = 30
    n_samples: int = 50_000
    fidelity_samples: int = 5000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dataset not in DATASETS:
            raise ConfigError(unknown_choice_message("dataset", self.dataset, DATASETS))
        if self.dataset == "health" and self.clients != 3:
            raise ConfigError(
                "the health data set has exactly 3 clients (§3.2); drop --clients or use "
                "--set dataset=synthetic"
            )
