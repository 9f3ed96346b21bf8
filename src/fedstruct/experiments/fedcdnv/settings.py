"""Settings of ``fedstruct run fedcdnv`` (defaults: the FedCDnv paper's Table 4)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.data import (
    network_names,
)
from fedstruct.errors import (
    ConfigError,
    unknown_choice_message,
)
from fedstruct.experiments.runs import (
    FederationSettings,
)
from fedstruct.methods.fedcdnv import (
    FedCDnvConfig,
)

__all__ = ["SACHS", "SYNTHETIC", "FedCDnvRun"]

SYNTHETIC = "synthetic"
SACHS = "sachs-cytometry"


@dataclass(frozen=True)
class FedCDnvRun(FederationSettings, FedCDnvConfig):
    """Settings of ``fedstruct run fedcdnv`` (defaults: the paper's Table 4).

    ``rounds`` is fixed by the protocol (Algorithm 1) at 2. ``constant_columns``
    defaults to ``"exclude"`` here: small simulated clients of networks with rare
    states (barley) see some variables constant, which is a property of the sample,
    not bad input (the count is in the history, ``excluded_constant``).
    """

    network: str = SYNTHETIC
    clients: int = 6
    rounds: int = 2
    nodes: int = 30
    edges_per_node: float = 1.0
    cardinality: int = 3
    dirichlet: float = 1.0
    latent_ratio: float | None = None
    overlap: float = 0.85
    min_samples: int = 100
    max_samples: int = 2000
    discretize: str = "hartemink"
    reference: bool = True
    constant_columns: str = "exclude"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rounds != 2:
            raise ConfigError(
                f"fedcdnv setting rounds = {self.rounds}: the protocol has 2 rounds "
                "(Algorithm 1); leave --rounds unset"
            )
        valid = (SYNTHETIC, SACHS, *network_names())
        if self.network not in valid:
            raise ConfigError(unknown_choice_message("fedcdnv data source", self.network, valid))

    @property
    def latent(self) -> float:
        """λ: the given ratio, or the paper's default for the source."""
        if self.latent_ratio is not None:
            return self.latent_ratio
        return 0.0 if self.network == SACHS else 0.15
