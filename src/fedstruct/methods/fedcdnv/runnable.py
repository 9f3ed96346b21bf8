"""FedCDnv's run: settings, the paper's federations, run, recipes.

Importing it registers ``fedstruct run fedcdnv`` with its settings only: its sources
and run are imported when a run starts, its recipes when ``fedstruct reproduce`` asks
for them (:mod:`fedstruct.runs.recipes`).
Its data (:func:`~fedstruct.methods.fedcdnv.sources.source`) are the paper's
variable subsets (:class:`~fedstruct.methods.fedcdnv.sources.VariableSubsetTask`)
or the user's site files.
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fedcdnv.settings import FedCDnvRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fedcdnv",
        summary="FedCDnv: federated FCI over non-identical variable sets (and its baselines)",
        settings=FedCDnvRun,
        source=lazy_function("fedstruct.methods.fedcdnv.sources", "source"),
        run=lazy_function("fedstruct.methods.fedcdnv.run", "run_fedcdnv"),
        quick={"network": "sachs", "clients": 3, "reference": False, "max_samples": 800},
        options={"network": "network", "knowledge": "knowledge"},
        missing=("keep", "error", "drop-rows"),
    )
)
