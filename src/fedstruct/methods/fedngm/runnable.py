"""FedNGM's run: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedngm`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.fedngm.sources.source`) are the paper's
federation of a data set (:class:`~fedstruct.methods.fedngm.sources.SubpopulationSource`)
or the user's site files.
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fedngm.settings import FedNGMRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fedngm",
        summary="FedNGM: federated neural graphical models, distillation and stitching",
        settings=FedNGMRun,
        source=lazy_function("fedstruct.methods.fedngm.sources", "source"),
        run=lazy_function("fedstruct.methods.fedngm.run", "run_fedngm"),
        quick={
            "dataset": "synthetic",
            "variables": 8,
            "samples": 3000,
            "epochs": 3,
            "burn_in": 5,
            "fidelity_samples": 500,
        },
        options={
            "dataset": "dataset",
            "graph": "graph",
            "knowledge": "knowledge",
            "device": "device",
        },
        missing=("keep", "error", "drop-rows"),
    )
)
