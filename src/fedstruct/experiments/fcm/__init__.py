"""F-CMs' slice of the experiments: settings, concept data, the paper's federation, run, recipes.

Importing it registers ``fedstruct run fcm`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.fcm.federation.source`) are the paper's concept
data set split over the clients, or the user's site files with concepts and a task.
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fcm.settings import FCMRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fcm.concepts import TASKS, ConceptDataset, make_concept_dataset
    from fedstruct.experiments.fcm.federation import (
        ConceptPartition,
        ConceptSource,
        SiteConcepts,
        concept_clients,
        source,
    )
    from fedstruct.experiments.fcm.run import pooled, run_fcm

__all__ = [
    "TASKS",
    "ConceptDataset",
    "ConceptPartition",
    "ConceptSource",
    "FCMRun",
    "SiteConcepts",
    "concept_clients",
    "make_concept_dataset",
    "pooled",
    "run_fcm",
    "source",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TASKS": "concepts",
        "ConceptDataset": "concepts",
        "make_concept_dataset": "concepts",
        "ConceptPartition": "federation",
        "ConceptSource": "federation",
        "SiteConcepts": "federation",
        "concept_clients": "federation",
        "source": "federation",
        "pooled": "run",
        "run_fcm": "run",
    },
)

register(
    Runnable(
        name="fcm",
        summary="F-CMs: federated concept-based models with evolving concept spaces",
        settings=FCMRun,
        source=lazy_function("fedstruct.experiments.fcm.federation", "source"),
        roles=lazy_function("fedstruct.experiments.fcm.federation", "roles"),
        run=lazy_function("fedstruct.experiments.fcm.run", "run_fcm"),
        quick={
            "network": "asia",
            "clients": 4,
            "initial_clients": 2,
            "arrival_round": 2,
            "clients_per_round": 3,
            "rounds": 3,
            "samples": 2000,
            "autoencoder_epochs": 5,
        },
        options={
            "network": "network",
            "model": "model",
            "regime": "regime",
            "graph": "graph",
            "knowledge": "knowledge",
            "device": "device",
        },
        # missing inputs are imputed by the statistics step; a missing label is unsupervised
        missing=("keep", "error", "drop-rows"),
    )
)
