"""What a run produced (shared by in-process runs and submitted deployments)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunOutcome"]


@dataclass
class RunOutcome:
    """What a run produced: its metrics, per-round history and figures, and (for a
    run in this process) the fitted estimator whose artifacts it saved; on a user's
    tables, each column's kind (column -> categorical, ordinal or continuous); with
    ``--track``, where it was logged (one line)."""

    metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    model: Any = None
    kinds: dict[str, str] = field(default_factory=dict)
    tracked: str = ""
