"""Settings of ``fedstruct run cafe`` (defaults: digits-LT, Dir 0.1, CF 0.1)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.data.datasets.images import (
    IMAGE_DATASETS,
)
from fedstruct.errors import (
    ConfigError,
    unknown_choice_message,
)
from fedstruct.experiments.runs import (
    FederationSettings,
)
from fedstruct.methods.cafe import (
    CafeConfig,
)

__all__ = ["CafeRun"]


@dataclass(frozen=True)
class CafeRun(FederationSettings, CafeConfig):
    """Settings of ``fedstruct run cafe`` (defaults: digits-LT, Dir 0.1, CF 0.1)."""

    dataset: str = "digits"
    data_dir: str | None = None
    clients: int = 100
    rounds: int = 100
    sample_rate: float = 0.1
    report_rate: float = 0.1
    always_report: float = 0.2
    dirichlet: float = 0.1
    imbalance_factor: float | None = 10.0
    min_per_client: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dataset not in IMAGE_DATASETS:
            raise ConfigError(unknown_choice_message("dataset", self.dataset, IMAGE_DATASETS))
