"""The federated runtime: messages, clients, grids, participation, checkpoints.

Modelled on Flower's Message API so that it maps onto Flower one to one.

The names below are imported from their modules when first read (PEP 562): a
process that needs one module of the runtime (a Flower ClientApp process answering a
secure-aggregation stage needs the messages and the protocol, not the method's data
or pandas) imports that module only.
"""

from typing import TYPE_CHECKING

from fedstruct.fl import flower as _flower  # noqa: F401  (registers the Flower backends)
from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
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
    from fedstruct.fl.federation import ServerAlgorithm, round_rng, run_federation
    from fedstruct.fl.grid import Grid, LateReply, LocalGrid
    from fedstruct.fl.message import Message, from_json_bytes, json_bytes
    from fedstruct.fl.participation import Participation, RoundPlan
    from fedstruct.fl.traffic import Traffic

#: Each exported name -> the module of this package that defines it.
_EXPORTS = {
    **dict.fromkeys(
        [
            "Backend",
            "Federated",
            "LocalBackend",
            "RunResult",
            "backend_names",
            "get_backend",
            "run_on_backend",
        ],
        "backend",
    ),
    **dict.fromkeys(["Client", "handles", "holdout_split"], "client"),
    **dict.fromkeys(["ServerAlgorithm", "round_rng", "run_federation"], "federation"),
    **dict.fromkeys(["Grid", "LateReply", "LocalGrid"], "grid"),
    **dict.fromkeys(["Message", "from_json_bytes", "json_bytes"], "message"),
    **dict.fromkeys(["Participation", "RoundPlan"], "participation"),
    "Traffic": "traffic",
}

__all__ = [
    "Backend",
    "Client",
    "Federated",
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
