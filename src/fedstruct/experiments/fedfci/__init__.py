"""Pooled federated discovery's slice of the experiments: settings, sites, run.

Importing it registers ``fedstruct run fedfci`` with its settings only; its federation
and run are imported when a run starts.
"""

from typing import TYPE_CHECKING

from fedstruct.experiments.fedfci.settings import FedFCIRun
from fedstruct.experiments.runs import Runnable, register
from fedstruct.lazy import lazy_exports, lazy_function

if TYPE_CHECKING:
    from fedstruct.experiments.fedfci.federation import SampledSites, mixed_model
    from fedstruct.experiments.fedfci.run import run_fedfci

__all__ = ["FedFCIRun", "SampledSites", "mixed_model", "run_fedfci"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SampledSites": "federation",
        "mixed_model": "federation",
        "run_fedfci": "run",
    },
)

register(
    Runnable(
        name="fedfci",
        summary="pooled federated discovery: PC/FCI/RFCI on CI tests summed across sites",
        settings=FedFCIRun,
        source=lazy_function("fedstruct.experiments.fedfci.federation", "source"),
        run=lazy_function("fedstruct.experiments.fedfci.run", "run_fedfci"),
        quick={"network": "asia", "clients": 3, "min_samples": 300, "max_samples": 400},
        options={"network": "network", "knowledge": "knowledge"},
        missing=("keep", "error", "drop-rows"),
    )
)
