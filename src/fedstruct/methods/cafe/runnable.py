"""CAFE's run: settings, the paper's federation, run, recipes.

Importing it registers ``fedstruct run cafe`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.cafe.sources.source`) are the paper's
Dirichlet split of an image set, or the user's image sites or table sites (a class
column ``target``).
"""

from fedstruct.data.formats import IMAGES_OR_TABLES
from fedstruct.lazy import lazy_function
from fedstruct.methods.cafe.settings import CafeRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="cafe",
        summary="CAFE: causal drift-aware federated learning (and FedAvg, FedProx, MOON, FedProto)",
        settings=CafeRun,
        source=lazy_function("fedstruct.methods.cafe.sources", "source"),
        site_format=IMAGES_OR_TABLES,
        run=lazy_function("fedstruct.methods.cafe.run", "run_cafe"),
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
