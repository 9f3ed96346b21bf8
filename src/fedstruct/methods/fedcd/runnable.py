"""FED-CD's run: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcd`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.fedcd.sources.source`) are the paper's
interventional federation (:class:`~fedstruct.methods.fedcd.sources.InterventionTask`)
or the user's site files with their ``regime`` column
(:class:`~fedstruct.methods.fedcd.sources.RegimeSites`).
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fedcd.settings import FedCDRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fedcd",
        summary="FED-CD: federated ENCO over observational + interventional data",
        settings=FedCDRun,
        source=lazy_function("fedstruct.methods.fedcd.sources", "source"),
        roles=lazy_function("fedstruct.methods.fedcd.sources", "roles"),
        run=lazy_function("fedstruct.methods.fedcd.run", "run_fedcd"),
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
