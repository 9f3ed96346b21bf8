"""Settings of ``fedstruct run fedavg``: the federation, FedAvg's hyper-parameters, the data."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.data.discrete import (
    DiscreteNetwork,
)
from fedstruct.errors import (
    UnknownVariableError,
)
from fedstruct.experiments.runs import (
    FederationSettings,
)
from fedstruct.methods.fedavg import (
    FedAvgConfig,
)

__all__ = ["TASKS", "FedAvgRun", "default_target", "task_variable"]

#: The task variable of each network in the F-CMs experiments (App. B.1), reused here.
TASKS = {
    "asia": "dysp",
    "sachs": "Akt",
    "alarm": "BP",
    "insurance": "PropCost",
    "hailfinder": "R5Fcst",
}


def default_target(network: DiscreteNetwork) -> str:
    """The network's task variable: the F-CMs task if it has one, else its last variable
    in topological order (a sink)."""
    return TASKS.get(network.name, network.graph.topological_order()[-1])


@dataclass(frozen=True)
class FedAvgRun(FederationSettings, FedAvgConfig):
    """Settings of ``fedstruct run fedavg``: the federation, FedAvg's hyper-parameters
    (:class:`FedAvgConfig`) and the data.

    ``samples`` training rows are sampled from ``network`` and split over the
    clients (``partition``: ``iid``, or ``label-skew`` = Dirichlet(``dirichlet_alpha``)
    over the target's classes with at least ``min_per_client`` rows each);
    ``test_samples`` more rows form the server's test set.
    """

    network: str = "asia"
    target: str = ""
    samples: int = 5000
    test_samples: int = 2000
    partition: str = "iid"
    dirichlet_alpha: float = 0.5
    min_per_client: int = 20


def task_variable(settings: FedAvgRun, network: DiscreteNetwork) -> str:
    """The task variable: the ``target`` setting, else the network's default.

    Raises
    ------
    UnknownVariableError
        If it is not a variable of the network.
    """
    target = settings.target or default_target(network)
    if target not in network.names:
        raise UnknownVariableError(
            f"target {target!r} is not a variable of {network.name}; "
            f"pick one of {list(network.names)}"
        )
    return target
