"""Recipes, runs and reports (top layer): ``fedstruct run`` / ``reproduce`` / ``demo``.

Importing this package registers every runnable method.
"""

from fedstruct.experiments import fedavg as _fedavg  # noqa: F401  (registers "fedavg")
from fedstruct.experiments.runs import (
    FederationSettings,
    RunContext,
    Runnable,
    RunOutcome,
    execute,
    runnable,
    runnable_names,
)

__all__ = [
    "FederationSettings",
    "RunContext",
    "RunOutcome",
    "Runnable",
    "execute",
    "runnable",
    "runnable_names",
]
