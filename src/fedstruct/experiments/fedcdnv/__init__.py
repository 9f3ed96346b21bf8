"""FedCDnv's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcdnv`` and the ``fedcdnv-*`` recipes.
"""

from fedstruct.experiments.fedcdnv import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.fedcdnv.federation import (
    Setting,
    VariableSplit,
    build_setting,
    federation,
    variable_subset_clients,
    variable_subsets,
)
from fedstruct.experiments.fedcdnv.run import method, run_fedcdnv, score
from fedstruct.experiments.fedcdnv.settings import FedCDnvRun
from fedstruct.experiments.runs import Runnable, register

__all__ = [
    "FedCDnvRun",
    "Setting",
    "VariableSplit",
    "build_setting",
    "federation",
    "method",
    "run_fedcdnv",
    "score",
    "variable_subset_clients",
    "variable_subsets",
]

register(
    Runnable(
        name="fedcdnv",
        summary="FedCDnv: federated FCI over non-identical variable sets (and its baselines)",
        settings=FedCDnvRun,
        federation=federation,
        method=method,
        run=run_fedcdnv,
        quick={"network": "sachs", "clients": 3, "reference": False, "max_samples": 800},
        options={"network": "network"},
    )
)
