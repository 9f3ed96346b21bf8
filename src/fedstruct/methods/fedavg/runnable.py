"""FedAvg's run (the runtime's reference): settings, federation, run, recipe.

Importing it registers ``fedstruct run fedavg`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.fedavg.sources.source`) are rows sampled
from a network or the user's site files.
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fedavg.settings import FedAvgRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fedavg",
        summary="FedAvg classifier or regressor on a network's task or a table (runtime reference)",
        settings=FedAvgRun,
        source=lazy_function("fedstruct.methods.fedavg.sources", "source"),
        run=lazy_function("fedstruct.methods.fedavg.run", "run_fedavg"),
        quick={"clients": 3, "rounds": 2, "samples": 1500, "test_samples": 500},
        options={"network": "network", "knowledge": "knowledge", "device": "device"},
        missing=("keep", "error", "drop-rows"),
    )
)
