"""FED-CD's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcd`` and its recipes.
"""

from fedstruct.experiments.fedcd import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.fedcd.federation import (
    build_federation,
    horizontal_interventions,
    site_roles_of,
    source,
    vertical_interventions,
)
from fedstruct.experiments.fedcd.run import method, pooled, run_fedcd
from fedstruct.experiments.fedcd.settings import FedCDRun
from fedstruct.experiments.runs import Runnable, register

__all__ = [
    "FedCDRun",
    "build_federation",
    "horizontal_interventions",
    "method",
    "pooled",
    "run_fedcd",
    "source",
    "vertical_interventions",
]

register(
    Runnable(
        name="fedcd",
        summary="FED-CD: federated ENCO over observational + interventional data",
        settings=FedCDRun,
        federation=build_federation,
        roles=site_roles_of,
        method=method,
        run=run_fedcd,
        quick={
            "network": "asia",
            "rounds": 2,
            "epochs_per_round": 1,
            "model_steps": 60,
            "graph_steps": 10,
            "samples": 1000,
            "samples_per_intervention": 50,
            "alone": "none",
        },
        options={"network": "network"},
    )
)
