"""Recipes, runs and reports (top layer): ``fedstruct run`` / ``reproduce`` / ``demo``.

Importing this package registers every runnable method.
"""

from fedstruct.experiments import cafe as _cafe  # noqa: F401  (registers "cafe" and its recipes)
from fedstruct.experiments import compositions as _compositions  # noqa: F401  (their recipes)
from fedstruct.experiments import fcm as _fcm  # noqa: F401  (registers "fcm" and its recipes)
from fedstruct.experiments import fedavg as _fedavg  # noqa: F401  (registers "fedavg" ...)
from fedstruct.experiments import fedcd as _fedcd  # noqa: F401  (registers "fedcd" ...)
from fedstruct.experiments import fedcdnv as _fedcdnv  # noqa: F401  (registers "fedcdnv" ...)
from fedstruct.experiments import fedngm as _fedngm  # noqa: F401  (registers "fedngm" ...)
from fedstruct.experiments import robustness as _robustness  # noqa: F401  (its recipe)
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
