"""Settings of ``fedstruct run fcm`` (defaults: the F-CMs paper's asia protocol)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.errors import (
    ConfigError,
    unknown_choice_message,
)
from fedstruct.experiments.fcm.concepts import (
    TASKS,
)
from fedstruct.experiments.runs import (
    FederationSettings,
)
from fedstruct.methods.fcm import (
    FCMConfig,
)

__all__ = ["ARRIVALS", "DEFAULT_ARRIVAL", "FCMRun"]

#: Round at which the late cohort joins (App. D.3).
ARRIVALS = {"asia": 10, "sachs": 10}
DEFAULT_ARRIVAL = 20


@dataclass(frozen=True)
class FCMRun(FederationSettings, FCMConfig):
    """Settings of ``fedstruct run fcm`` (defaults: the paper's asia protocol)."""

    network: str = "asia"
    clients: int = 20
    rounds: int = 200
    initial_clients: int = 10
    arrival_round: int = 0
    n_samples: int = 0
    latent_dim: int = 0
    autoencoder_epochs: int = 30
    noise: float = 0.5
    standardise_latent: bool = False
    paths_per_client: int = 2
    extra_concepts: int = 1
    task_missing: float = 0.2
    new_concept_fraction: float = 0.3
    perturbed_clients: float = 0.0
    perturbed_edges: float = 0.0
    max_epochs: int = 200

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.network not in TASKS:
            raise ConfigError(unknown_choice_message("fcm network", self.network, tuple(TASKS)))
        if not 1 <= self.initial_clients <= self.clients:
            raise ConfigError(
                f"initial_clients = {self.initial_clients} must lie in 1..clients ({self.clients})"
            )
        if self.arrival_round < 0 or self.max_epochs < 1:
            raise ConfigError("arrival_round must be >= 0 (0: the paper's) and max_epochs >= 1")

    @property
    def arrival(self) -> int:
        """The late cohort's first round."""
        return self.arrival_round or ARRIVALS.get(self.network, DEFAULT_ARRIVAL)
