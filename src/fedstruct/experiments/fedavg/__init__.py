"""FedAvg's slice of the experiments (the runtime's reference): settings, federation, run, recipe.

Importing it registers ``fedstruct run fedavg`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.fedavg.federation.source`) are rows sampled
from a network or the user's site files.
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedavg.settings import FedAvgRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedavg.run import run_fedavg
    from fedstruct.experiments.fedavg.settings import default_target

__all__ = [
    "FedAvgRun",
    "default_target",
    "run_fedavg",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "run_fedavg": "run",
        "default_target": "settings",
    },
)

register(
    Runnable(
        name="fedavg",
        summary="FedAvg classifier or regressor on a network's task or a table (runtime reference)",
        settings=FedAvgRun,
        source=lazy_function("fedstruct.experiments.fedavg.federation", "source"),
        run=lazy_function("fedstruct.experiments.fedavg.run", "run_fedavg"),
        quick={"clients": 3, "rounds": 2, "samples": 1500, "test_samples": 500},
        options={"network": "network", "knowledge": "knowledge", "device": "device"},
        missing=("keep", "error", "drop-rows"),
    )
)
