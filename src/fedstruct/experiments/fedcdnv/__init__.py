"""FedCDnv's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcdnv`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.fedcdnv.federation.source`) are the paper's
variable subsets (:class:`~fedstruct.experiments.fedcdnv.federation.VariableSubsetTask`)
or the user's site files.
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedcdnv.settings import FedCDnvRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedcdnv.federation import (
        VariableSplit,
        VariableSubsetTask,
        variable_subset_clients,
        variable_subsets,
    )
    from fedstruct.experiments.fedcdnv.run import run_fedcdnv, score

__all__ = [
    "FedCDnvRun",
    "VariableSplit",
    "VariableSubsetTask",
    "run_fedcdnv",
    "score",
    "variable_subset_clients",
    "variable_subsets",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "VariableSplit": "federation",
        "VariableSubsetTask": "federation",
        "variable_subset_clients": "federation",
        "variable_subsets": "federation",
        "run_fedcdnv": "run",
        "score": "run",
    },
)

register(
    Runnable(
        name="fedcdnv",
        summary="FedCDnv: federated FCI over non-identical variable sets (and its baselines)",
        settings=FedCDnvRun,
        source=lazy_function("fedstruct.experiments.fedcdnv.federation", "source"),
        run=lazy_function("fedstruct.experiments.fedcdnv.run", "run_fedcdnv"),
        quick={"network": "sachs", "clients": 3, "reference": False, "max_samples": 800},
        options={"network": "network", "knowledge": "knowledge"},
        missing=("keep", "error", "drop-rows"),
    )
)
