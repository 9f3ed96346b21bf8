"""FedNGM's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedngm`` and its recipes.
"""

from fedstruct.experiments.fedngm import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.fedngm.federation import build_clients, federation, targets
from fedstruct.experiments.fedngm.run import CLEAR_LOSS, method, run_fedngm
from fedstruct.experiments.fedngm.settings import DATASETS, FedNGMRun
from fedstruct.experiments.runs import Runnable, register

__all__ = [
    "CLEAR_LOSS",
    "DATASETS",
    "FedNGMRun",
    "build_clients",
    "federation",
    "method",
    "run_fedngm",
    "targets",
]

register(
    Runnable(
        name="fedngm",
        summary="FedNGM: federated neural graphical models, distillation and stitching",
        settings=FedNGMRun,
        federation=build_clients,
        method=method,
        run=run_fedngm,
        quick={
            "dataset": "synthetic",
            "variables": 8,
            "samples": 3000,
            "epochs": 3,
            "burn_in": 5,
            "fidelity_samples": 500,
        },
        options={"dataset": "dataset", "graph": "graph"},
    )
)
