"""F-CMs' run: settings, concept data, the paper's federation, run, recipes.

Importing it registers ``fedstruct run fcm`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.fcm.sources.source`) are the paper's concept
data set split over the clients, or the user's site files with concepts and a task.
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fcm",
        summary="F-CMs: federated concept-based models with evolving concept spaces",
        settings=FCMRun,
        source=lazy_function("fedstruct.methods.fcm.sources", "source"),
        roles=lazy_function("fedstruct.methods.fcm.sources", "roles"),
        run=lazy_function("fedstruct.methods.fcm.run", "run_fcm"),
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
