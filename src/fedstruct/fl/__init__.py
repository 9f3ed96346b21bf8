"""The federated runtime: messages, clients, grids, participation, checkpoints.

Modelled on Flower's Message API so that it maps onto Flower one to one.
"""

from fedstruct.fl import flower as _flower  # noqa: F401  (registers the Flower backends)
from fedstruct.fl.backend import (
    Backend,
    Federated,
    LocalBackend,
    RunResult,
    backend_names,
    get_backend,
    run_on_backend,
)
from fedstruct.fl.client import Client, handles, holdout_split
from fedstruct.fl.estimator import FederatedEstimator
from fedstruct.fl.federation import ServerAlgorithm, round_rng, run_federation
from fedstruct.fl.grid import Grid, LateReply, LocalGrid
from fedstruct.fl.message import Message, from_json_bytes, json_bytes
from fedstruct.fl.participation import Participation, RoundPlan
from fedstruct.fl.traffic import Traffic

__all__ = [
    "Backend",
    "Client",
    "Federated",
    "FederatedEstimator",
    "Grid",
    "LateReply",
    "LocalBackend",
    "LocalGrid",
    "Message",
    "Participation",
    "RoundPlan",
    "RunResult",
    "ServerAlgorithm",
    "Traffic",
    "backend_names",
    "from_json_bytes",
    "get_backend",
    "handles",
    "holdout_split",
    "json_bytes",
    "round_rng",
    "run_federation",
    "run_on_backend",
]
