"""FedCDnv: federated causal discovery over non-identical variable sets.

Implements "Federated Causal Structure Learning with Non-identical Variable Sets"
(papers/fedcdnv-non-identical-variable-sets.txt): local FCI (our own, from the
shared :mod:`fedstruct.discovery`), the definite-relation theory (§3.1,
:mod:`~fedstruct.methods.fedcdnv.theory`), C-Update (Algorithm 2,
:mod:`~fedstruct.methods.fedcdnv.update`) and the two-level priority selection
strategy TPSS (§3.2, :mod:`~fedstruct.methods.fedcdnv.aggregate`), with the
FedCDnv-vote and FCI-base baselines as strategies.

Examples
--------
>>> from fedstruct.data import load_network
>>> from fedstruct.methods.fedcdnv import variable_subset_clients, variable_subsets
>>> net = load_network("child")
>>> split = variable_subsets(net.names, 6, seed=0, overlap=0.85, latent=0.15)
>>> clients = variable_subset_clients(net, split, seed=0)
>>> model = FedCDnv().fit(clients)
>>> model.graph_.n_edges > 0
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedcdnv.client import FedCDnvClient
    from fedstruct.methods.fedcdnv.config import FedCDnvConfig
    from fedstruct.methods.fedcdnv.estimator import FedCDnv, graph_scores
    from fedstruct.methods.fedcdnv.run import run_fedcdnv, score
    from fedstruct.methods.fedcdnv.server import FedCDnvServer
    from fedstruct.methods.fedcdnv.settings import FedCDnvRun
    from fedstruct.methods.fedcdnv.sources import (
        VariableSplit,
        VariableSubsetTask,
        variable_subset_clients,
        variable_subsets,
    )

__all__ = [
    "FedCDnv",
    "FedCDnvClient",
    "FedCDnvConfig",
    "FedCDnvRun",
    "FedCDnvServer",
    "VariableSplit",
    "VariableSubsetTask",
    "graph_scores",
    "run_fedcdnv",
    "score",
    "variable_subset_clients",
    "variable_subsets",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FedCDnv": "estimator",
        "FedCDnvClient": "client",
        "FedCDnvConfig": "config",
        "FedCDnvRun": "settings",
        "FedCDnvServer": "server",
        "VariableSplit": "sources",
        "VariableSubsetTask": "sources",
        "graph_scores": "estimator",
        "run_fedcdnv": "run",
        "score": "run",
        "variable_subset_clients": "sources",
        "variable_subsets": "sources",
    },
)
