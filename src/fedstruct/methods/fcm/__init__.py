"""F-CMs: federated concept-based models with evolving concept spaces.

Implements "Federated Concept-Based Models: Interpretable models with distributed
supervision" (papers/fcm-federated-concept-based-models.txt): clients with different
concept supervision (and optional concept graphs) train one shared concept model
(CBM, CEM, CGM, C2BM or the opaque baseline). Each round the server grows the concept
set, aggregates the clients' graphs into a DAG, adapts the architecture module by
module, and averages each module over the clients that trained it (Algorithm 1).

Examples
--------
>>> from fedstruct.methods.fcm import concept_clients, make_concept_dataset
>>> data = make_concept_dataset("asia", n_samples=2000, autoencoder_epochs=5)
>>> part = concept_clients(data, n_clients=4, n_initial=2)
>>> model = FCM(task="dysp", cardinalities=data.cardinalities, rounds=3,
...             model="cbm").fit(part.clients)
>>> model.spec_.task
'dysp'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fcm.client import FCMClient, LocalConceptData
    from fedstruct.methods.fcm.concepts import TASKS, ConceptDataset, make_concept_dataset
    from fedstruct.methods.fcm.config import ARCHITECTURES, REGIMES, FCMConfig
    from fedstruct.methods.fcm.estimator import FCM
    from fedstruct.methods.fcm.evaluate import accuracy_metrics, intervention_curve
    from fedstruct.methods.fcm.model import ConceptModel, ModelSpec, adapt, parameter_change
    from fedstruct.methods.fcm.run import pooled, run_fcm
    from fedstruct.methods.fcm.server import FCMServer, aggregate_graphs
    from fedstruct.methods.fcm.settings import FCMRun
    from fedstruct.methods.fcm.sources import (
        ConceptPartition,
        ConceptSource,
        SiteConcepts,
        concept_clients,
        source,
    )
    from fedstruct.methods.fcm.standalone import StandaloneFit, fit_standalone

__all__ = [
    "ARCHITECTURES",
    "FCM",
    "REGIMES",
    "TASKS",
    "ConceptDataset",
    "ConceptModel",
    "ConceptPartition",
    "ConceptSource",
    "FCMClient",
    "FCMConfig",
    "FCMRun",
    "FCMServer",
    "LocalConceptData",
    "ModelSpec",
    "SiteConcepts",
    "StandaloneFit",
    "accuracy_metrics",
    "adapt",
    "aggregate_graphs",
    "concept_clients",
    "fit_standalone",
    "intervention_curve",
    "make_concept_dataset",
    "parameter_change",
    "pooled",
    "run_fcm",
    "source",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ARCHITECTURES": "config",
        "ConceptDataset": "concepts",
        "ConceptModel": "model",
        "ConceptPartition": "sources",
        "ConceptSource": "sources",
        "FCM": "estimator",
        "FCMClient": "client",
        "FCMConfig": "config",
        "FCMRun": "settings",
        "FCMServer": "server",
        "LocalConceptData": "client",
        "ModelSpec": "model",
        "REGIMES": "config",
        "SiteConcepts": "sources",
        "StandaloneFit": "standalone",
        "TASKS": "concepts",
        "accuracy_metrics": "evaluate",
        "adapt": "model",
        "aggregate_graphs": "server",
        "concept_clients": "sources",
        "fit_standalone": "standalone",
        "intervention_curve": "evaluate",
        "make_concept_dataset": "concepts",
        "parameter_change": "model",
        "pooled": "run",
        "run_fcm": "run",
        "source": "sources",
    },
)
