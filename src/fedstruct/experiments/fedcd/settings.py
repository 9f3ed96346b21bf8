"""Settings of ``fedstruct run fedcd`` (defaults: FED-CD's ER setting, §6)."""

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
from fedstruct.graphs.random import (
    GRAPH_KINDS,
)
from fedstruct.methods.fedcd import (
    FedCDConfig,
)

__all__ = ["ALONE", "ER", "SPLITS", "FedCDRun"]

ER = "er"
SPLITS = ("horizontal", "vertical")
ALONE = ("none", "first", "all")


@dataclass(frozen=True)
class FedCDRun(FederationSettings, FedCDConfig):
    """Settings of ``fedstruct run fedcd`` (defaults: ENCO's data sizes, FED-CD's 2 clients)."""

    network: str = ER
    clients: int = 2
    rounds: int = 5
    nodes: int = 20
    edges_per_node: float = 2.0
    categories: int = 10
    split: str = "horizontal"
    targets_per_client: str = ""
    n_observational: int = 5000
    n_per_intervention: int = 200
    alone: str = "first"
    centralized: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.split not in SPLITS:
            raise ConfigError(unknown_choice_message("fedcd split", self.split, SPLITS))
        known = (ER, *GRAPH_KINDS[1:], *network_names())
        if self.network not in known:
            raise ConfigError(unknown_choice_message("fedcd network", self.network, known))
        if self.alone not in ALONE:
            raise ConfigError(unknown_choice_message("fedcd alone", self.alone, ALONE))
        if self.targets_per_client and self.split != "vertical":
            raise ConfigError("targets_per_client applies to split = 'vertical' only")

    def blocks(self) -> list[int] | None:
        """``targets_per_client`` as counts (``None``: balanced)."""
        if not self.targets_per_client:
            return None
        try:
            return [int(p) for p in str(self.targets_per_client).split(",")]
        except ValueError:
            raise ConfigError(
                f"targets_per_client {self.targets_per_client!r} must be counts like '16,4'"
            ) from None
