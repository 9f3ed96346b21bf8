"""FED-CD: federated causal discovery from observational and interventional data.

Implements "FED-CD: Federated Causal Discovery from Interventional and
Observational Data" (papers/fedcd-interventional-causal-discovery.txt): every client
runs ENCO (Lippe et al. 2021; our own vectorised implementation in
:mod:`fedstruct.methods.fedcd.enco`) from the broadcast belief ``(γ, θ)``; the server
aggregates the beliefs by data-share voting (§5.1) or by proximity to each client's
interventions (§5.2) and prunes the result to a DAG (§7). Only beliefs, intervention
target sets and row counts cross the wire; with continuous columns (``continuous``),
a first exchange cuts them into federated quantile bins from the clients' column
summaries and counts over a shared grid (:mod:`fedstruct.fl.binning`).

Examples
--------
>>> from fedstruct.data import load_network
>>> from fedstruct.methods.fedcd import vertical_interventions
>>> net = load_network("asia")
>>> clients = vertical_interventions(net, 2, n_observational=2000,
...                                  n_per_intervention=200, seed=0)
>>> model = FedCD(rounds=2, model_steps=100, graph_steps=20).fit(clients)
>>> model.graph_.is_dag()
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedcd.client import FedCDClient
    from fedstruct.methods.fedcd.config import FedCDConfig
    from fedstruct.methods.fedcd.enco import ENCO, ENCOConfig
    from fedstruct.methods.fedcd.estimator import FedCD
    from fedstruct.methods.fedcd.learner import (
        Beliefs,
        InterventionalData,
        LocalLearner,
        final_graph,
    )
    from fedstruct.methods.fedcd.run import pooled, run_fedcd
    from fedstruct.methods.fedcd.server import FedCDServer
    from fedstruct.methods.fedcd.settings import FedCDRun
    from fedstruct.methods.fedcd.sources import (
        InterventionTask,
        RegimeSites,
        horizontal_interventions,
        vertical_interventions,
    )

__all__ = [
    "ENCO",
    "Beliefs",
    "ENCOConfig",
    "FedCD",
    "FedCDClient",
    "FedCDConfig",
    "FedCDRun",
    "FedCDServer",
    "InterventionTask",
    "InterventionalData",
    "LocalLearner",
    "RegimeSites",
    "final_graph",
    "horizontal_interventions",
    "pooled",
    "run_fedcd",
    "vertical_interventions",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Beliefs": "learner",
        "ENCO": "enco",
        "ENCOConfig": "enco",
        "FedCD": "estimator",
        "FedCDClient": "client",
        "FedCDConfig": "config",
        "FedCDRun": "settings",
        "FedCDServer": "server",
        "InterventionTask": "sources",
        "InterventionalData": "learner",
        "LocalLearner": "learner",
        "RegimeSites": "sources",
        "final_graph": "learner",
        "horizontal_interventions": "sources",
        "pooled": "run",
        "run_fedcd": "run",
        "vertical_interventions": "sources",
    },
)
