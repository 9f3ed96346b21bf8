"""FedAvg's slice of the experiments (the runtime's reference): settings, federation, run, recipe.

Importing it registers ``fedstruct run fedavg`` and its recipes.
"""

from fedstruct.experiments.fedavg import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.fedavg.federation import federation
from fedstruct.experiments.fedavg.run import method, run_fedavg
from fedstruct.experiments.fedavg.settings import FedAvgRun, default_target
from fedstruct.experiments.runs import Runnable, register

__all__ = ["FedAvgRun", "default_target", "federation", "method", "run_fedavg"]

register(
    Runnable(
        name="fedavg",
        summary="FedAvg classifier on a task sampled from a network (runtime reference)",
        settings=FedAvgRun,
        federation=federation,
        method=method,
        run=run_fedavg,
        quick={"clients": 3, "rounds": 2, "samples": 1500, "test_samples": 500},
        options={"network": "network"},
    )
)
