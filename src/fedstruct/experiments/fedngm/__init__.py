"""FedNGM's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedngm`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.fedngm.federation.source`) are the paper's
federation of a data set (:class:`~fedstruct.experiments.fedngm.federation.SubpopulationSource`)
or the user's site files.
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedngm.settings import FedNGMRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedngm.federation import (
        SubpopulationSource,
        health_insurance_federation,
        targets,
    )
    from fedstruct.experiments.fedngm.run import CLEAR_LOSS, run_fedngm
    from fedstruct.experiments.fedngm.settings import DATASETS

__all__ = [
    "CLEAR_LOSS",
    "DATASETS",
    "FedNGMRun",
    "SubpopulationSource",
    "health_insurance_federation",
    "run_fedngm",
    "targets",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SubpopulationSource": "federation",
        "targets": "federation",
        "CLEAR_LOSS": "run",
        "run_fedngm": "run",
        "DATASETS": "settings",
        "health_insurance_federation": "federation",
    },
)

register(
    Runnable(
        name="fedngm",
        summary="FedNGM: federated neural graphical models, distillation and stitching",
        settings=FedNGMRun,
        source=lazy_function("fedstruct.experiments.fedngm.federation", "source"),
        run=lazy_function("fedstruct.experiments.fedngm.run", "run_fedngm"),
        quick={
            "dataset": "synthetic",
            "variables": 8,
            "samples": 3000,
            "epochs": 3,
            "burn_in": 5,
            "fidelity_samples": 500,
        },
        options={
            "dataset": "dataset",
            "graph": "graph",
            "knowledge": "knowledge",
            "device": "device",
        },
        missing=("keep", "error", "drop-rows"),
    )
)
