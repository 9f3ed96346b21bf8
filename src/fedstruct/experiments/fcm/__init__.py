"""F-CMs' slice of the experiments: settings, concept data, the paper's federation, run, recipes.

Importing it registers ``fedstruct run fcm`` and its recipes.
"""

from fedstruct.experiments.fcm import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.fcm.concepts import TASKS, ConceptDataset, make_concept_dataset
from fedstruct.experiments.fcm.federation import (
    ConceptPartition,
    build_federation,
    concept_clients,
    concept_data,
    dataset,
    site_roles_of,
)
from fedstruct.experiments.fcm.run import method, pooled, run_fcm
from fedstruct.experiments.fcm.settings import FCMRun
from fedstruct.experiments.runs import Runnable, register

__all__ = [
    "TASKS",
    "ConceptDataset",
    "ConceptPartition",
    "FCMRun",
    "build_federation",
    "concept_clients",
    "concept_data",
    "dataset",
    "make_concept_dataset",
    "method",
    "pooled",
    "run_fcm",
]

register(
    Runnable(
        name="fcm",
        summary="F-CMs: federated concept-based models with evolving concept spaces",
        settings=FCMRun,
        federation=build_federation,
        roles=site_roles_of,
        method=method,
        run=run_fcm,
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
        options={"network": "network", "model": "model", "regime": "regime", "graph": "graph"},
    )
)
