"""FED-CD's slice of the experiments: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcd`` with its settings only: its federation
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.experiments.recipes`), and the names below when first read.
Its data (:func:`~fedstruct.experiments.fedcd.federation.source`) are the paper's
interventional federation (:class:`~fedstruct.experiments.fedcd.federation.InterventionTask`)
or the user's site files with their ``regime`` column
(:class:`~fedstruct.experiments.fedcd.federation.RegimeSites`).
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedcd.settings import FedCDRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedcd.federation import (
        InterventionTask,
        RegimeSites,
        horizontal_interventions,
        vertical_interventions,
    )
    from fedstruct.experiments.fedcd.run import pooled, run_fedcd

__all__ = [
    "FedCDRun",
    "InterventionTask",
    "RegimeSites",
    "horizontal_interventions",
    "pooled",
    "run_fedcd",
    "vertical_interventions",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "InterventionTask": "federation",
        "RegimeSites": "federation",
        "horizontal_interventions": "federation",
        "vertical_interventions": "federation",
        "pooled": "run",
        "run_fedcd": "run",
    },
)

register(
    Runnable(
        name="fedcd",
        summary="FED-CD: federated ENCO over observational + interventional data",
        settings=FedCDRun,
        source=lazy_function("fedstruct.experiments.fedcd.federation", "source"),
        roles=lazy_function("fedstruct.experiments.fedcd.federation", "roles"),
        run=lazy_function("fedstruct.experiments.fedcd.run", "run_fedcd"),
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
        options={"network": "network", "knowledge": "knowledge", "device": "device"},
        # ENCO's likelihood of a row needs every variable: a row missing a value
        # leaves its regime (counted per site in metrics.json)
        missing=("drop-rows", "error"),
    )
)
