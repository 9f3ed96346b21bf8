"""Recipes, runs and reports (top layer): ``fedstruct run`` / ``reproduce`` / ``demo``.

Importing this package imports no method: ``runnable(NAME)`` imports the run package
of method NAME only (:mod:`fedstruct.registry`), and the names below are imported when
first read.
"""

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.runs.contract import (
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

__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(__all__, "contract"))
