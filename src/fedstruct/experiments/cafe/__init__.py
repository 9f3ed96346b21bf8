"""CAFE's slice of the experiments: settings, the paper's federation, run, recipes.

Importing it registers ``fedstruct run cafe`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.cafe.federation.source`) are the paper's
Dirichlet split of an image set, or the user's image sites or table sites (a class
column ``target``).
"""

from typing import TYPE_CHECKING

from fedstruct.data.formats import IMAGES, IMAGES_OR_TABLES
from fedstruct.experiments.cafe.settings import CafeRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.cafe.federation import (
        ImageFederation,
        SiteImages,
        SiteTable,
        SplitImages,
        image_clients,
    )
    from fedstruct.experiments.cafe.run import class_groups, run_cafe

__all__ = [
    "IMAGES",
    "CafeRun",
    "ImageFederation",
    "SiteImages",
    "SiteTable",
    "SplitImages",
    "class_groups",
    "image_clients",
    "run_cafe",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ImageFederation": "federation",
        "SiteImages": "federation",
        "SiteTable": "federation",
        "SplitImages": "federation",
        "image_clients": "federation",
        "class_groups": "run",
        "run_cafe": "run",
    },
)

register(
    Runnable(
        name="cafe",
        summary="CAFE: causal drift-aware federated learning (and FedAvg, FedProx, MOON, FedProto)",
        settings=CafeRun,
        source=lazy_function("fedstruct.experiments.cafe.federation", "source"),
        site_format=IMAGES_OR_TABLES,
        run=lazy_function("fedstruct.experiments.cafe.run", "run_cafe"),
        quick={"clients": 4, "rounds": 3, "local_epochs": 1, "eval_every": 3, "report_rate": 0.5},
        options={
            "dataset": "dataset",
            "data-dir": "data_dir",
            "dirichlet": "skew_alpha",
            "cf": "report_rate",
            "method": "algorithm",
            "knowledge": "knowledge",
            "device": "device",
        },
        missing=("keep", "error", "drop-rows"),
    )
)
