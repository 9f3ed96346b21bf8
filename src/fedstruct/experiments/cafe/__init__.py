"""CAFE's slice of the experiments: settings, the paper's federation, run, recipes.

Importing it registers ``fedstruct run cafe`` and its recipes.
"""

from fedstruct.experiments.cafe import recipes as _recipes  # noqa: F401  (registers)
from fedstruct.experiments.cafe.federation import (
    IMAGES,
    ImageFederation,
    build_clients,
    federation,
    image_clients,
)
from fedstruct.experiments.cafe.run import class_groups, method, run_cafe
from fedstruct.experiments.cafe.settings import CafeRun
from fedstruct.experiments.runs import Runnable, register

__all__ = [
    "CafeRun",
    "ImageFederation",
    "build_clients",
    "class_groups",
    "federation",
    "image_clients",
    "method",
    "run_cafe",
]

register(
    Runnable(
        name="cafe",
        summary="CAFE: causal drift-aware federated learning (and FedAvg, FedProx, MOON, FedProto)",
        settings=CafeRun,
        federation=build_clients,
        site_format=IMAGES,
        method=method,
        run=run_cafe,
        quick={"clients": 4, "rounds": 3, "local_epochs": 1, "eval_every": 3, "report_rate": 0.5},
        options={
            "dataset": "dataset",
            "data-dir": "data_dir",
            "dirichlet": "skew_alpha",
            "cf": "report_rate",
            "method": "algorithm",
        },
    )
)
