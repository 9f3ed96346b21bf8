"""FedAvg on a tabular classification task: the runtime's reference method.

McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks from
Decentralized Data", Algorithm 1. It exercises the whole runtime (participation,
late answers, byte accounting, the audit, checkpoints) before the structured
methods exist, and is the fastest method for backend tests.

Examples
--------
>>> from fedstruct.data import load_network, horizontal
>>> net = load_network("asia")
>>> clients = horizontal(net.sample(2000, seed=0), n_clients=4, seed=0)
>>> model = FedAvg("dysp", net.cardinalities, rounds=5).fit(clients)
>>> round(model.score(net.sample(1000, seed=1)), 2) > 0.7
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedavg.client import FedAvgClient
    from fedstruct.methods.fedavg.config import FedAvgConfig
    from fedstruct.methods.fedavg.estimator import FedAvg
    from fedstruct.methods.fedavg.model import TabularSchema
    from fedstruct.methods.fedavg.run import run_fedavg
    from fedstruct.methods.fedavg.server import FedAvgServer
    from fedstruct.methods.fedavg.settings import FedAvgRun, default_target

__all__ = [
    "FedAvg",
    "FedAvgClient",
    "FedAvgConfig",
    "FedAvgRun",
    "FedAvgServer",
    "TabularSchema",
    "default_target",
    "run_fedavg",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FedAvg": "estimator",
        "FedAvgClient": "client",
        "FedAvgConfig": "config",
        "FedAvgRun": "settings",
        "FedAvgServer": "server",
        "TabularSchema": "model",
        "default_target": "settings",
        "run_fedavg": "run",
    },
)
