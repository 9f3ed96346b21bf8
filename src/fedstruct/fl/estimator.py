"""What every method's estimator shares: its identity and how it runs on a backend."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from fedstruct.data.client import ClientData
from fedstruct.fl.backend import Backend, RunResult, run_on_backend
from fedstruct.fl.participation import Participation

__all__ = ["FederatedEstimator"]


class FederatedEstimator:
    """Base of the methods' scikit-learn-style estimators.

    A subclass sets :attr:`method` and, in ``__init__``, ``self.config`` (a
    dataclass), ``self.seed`` and ``self.participation``; it provides
    ``make_client`` and ``make_server`` and calls :meth:`run_federation` from its
    ``fit``.
    """

    #: The method's name (checkpoint identity and progress label).
    method: ClassVar[str]
    config: Any
    seed: int
    participation: Participation | None

    def identity(self) -> dict[str, Any]:
        """Settings outside ``config`` that change the result (default: none)."""
        return {}

    def fingerprint(self) -> str:
        """Identity of this configuration, for checkpoints."""
        return json.dumps(
            {
                "method": self.method,
                **self.identity(),
                "config": dataclasses.asdict(self.config),
                "seed": self.seed,
                "participation": repr(self.participation),
            },
            sort_keys=True,
        )

    def run_federation(
        self,
        clients: Sequence[ClientData] | Sequence[str],
        *,
        backend: str | Backend = "local",
        checkpoint: Path | None = None,
        resume: bool = False,
        progress: bool = False,
        stop_after: int | None = None,
    ) -> RunResult:
        """Run this method over ``clients`` on ``backend`` (see :func:`run_on_backend`)."""
        return run_on_backend(
            self,  # type: ignore[arg-type]
            clients,
            backend=backend,
            participation=self.participation,
            seed=self.seed,
            checkpoint=checkpoint,
            resume=resume,
            fingerprint=self.fingerprint(),
            progress=progress,
            stop_after=stop_after,
            label=self.method,
        )
