"""Pooled federated discovery: PC, FCI or RFCI over statistics summed across sites.

Every CI test of the search is computed from the sites' sufficient statistics (counts
over the cells of the test's variables, or their moments) summed together, through
secure aggregation when the run asks for it, so the graph, separating sets and p-values
are those of the same search on the sites' rows pooled; the sites send sums, never
rows, one batch of tests per exchange (docs/fedfci.md).

Examples
--------
>>> from fedstruct.data import ClientData, load_network
>>> rows = load_network("asia").sample(2000, seed=0)
>>> sites = [ClientData(f"site-{k}", rows.iloc[k::2].reset_index(drop=True)) for k in (0, 1)]
>>> model = FedFCI(algorithm="pc").fit(sites)
>>> model.graph_.n_edges > 0
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedfci.client import FedFCIClient
    from fedstruct.methods.fedfci.config import FedFCIConfig
    from fedstruct.methods.fedfci.estimator import FedFCI
    from fedstruct.methods.fedfci.run import run_fedfci
    from fedstruct.methods.fedfci.server import FedFCIServer
    from fedstruct.methods.fedfci.settings import FedFCIRun
    from fedstruct.methods.fedfci.sources import SampledSites, mixed_model

__all__ = [
    "FedFCI",
    "FedFCIClient",
    "FedFCIConfig",
    "FedFCIRun",
    "FedFCIServer",
    "SampledSites",
    "mixed_model",
    "run_fedfci",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FedFCI": "estimator",
        "FedFCIClient": "client",
        "FedFCIConfig": "config",
        "FedFCIRun": "settings",
        "FedFCIServer": "server",
        "SampledSites": "sources",
        "mixed_model": "sources",
        "run_fedfci": "run",
    },
)
