"""Pooled federated discovery's run: settings, sites, run.

Importing it registers ``fedstruct run fedfci`` with its settings only; its sources
and run are imported when a run starts.
"""

from fedstruct.lazy import lazy_function
from fedstruct.methods.fedfci.settings import FedFCIRun
from fedstruct.runs.contract import Runnable, register

register(
    Runnable(
        name="fedfci",
        summary="pooled federated discovery: PC/FCI/RFCI on CI tests summed across sites",
        settings=FedFCIRun,
        source=lazy_function("fedstruct.methods.fedfci.sources", "source"),
        run=lazy_function("fedstruct.methods.fedfci.run", "run_fedfci"),
        quick={"network": "asia", "clients": 3, "min_samples": 300, "max_samples": 400},
        options={"network": "network", "knowledge": "knowledge"},
        missing=("keep", "error", "drop-rows"),
    )
)
