"""What a run produced (shared by in-process runs and submitted deployments)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RunOutcome"]


@dataclass
class RunOutcome:
    """What a run produced."""

    metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
