"""FedCDnv's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcdnv`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
The ``federation`` function is ``federation.federation`` (the module has its name).
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedcdnv.settings import FedCDnvRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedcdnv.federation import (
        Setting,
        VariableSplit,
        build_setting,
        variable_subset_clients,
        variable_subsets,
    )
    from fedstruct.experiments.fedcdnv.run import method, run_fedcdnv, score

__all__ = [
    "FedCDnvRun",
    "Setting",
    "VariableSplit",
    "build_setting",
    "method",
    "run_fedcdnv",
    "score",
    "variable_subset_clients",
    "variable_subsets",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Setting": "federation",
        "VariableSplit": "federation",
        "build_setting": "federation",
        "variable_subset_clients": "federation",
        "variable_subsets": "federation",
        "method": "run",
        "run_fedcdnv": "run",
        "score": "run",
    },
)

register(
    Runnable(
        name="fedcdnv",
        summary="FedCDnv: federated FCI over non-identical variable sets (and its baselines)",
        settings=FedCDnvRun,
        federation=lazy_function("fedstruct.experiments.fedcdnv.federation", "federation"),
        method=lazy_function("fedstruct.experiments.fedcdnv.run", "method"),
        run=lazy_function("fedstruct.experiments.fedcdnv.run", "run_fedcdnv"),
        quick={"network": "sachs", "clients": 3, "reference": False, "max_samples": 800},
        options={"network": "network"},
    )
)
