"""FedNGM: federated neural graphical models, distillation and stitching.

Implements "Federated Learning with Neural Graphical Models"
(papers/fedngm-neural-graphical-models.txt): clients with overlapping variable sets
recover local graphs, the master merges them (common nodes, union of edges), every
client trains an NGM under the merged graph, and the master trains the global NGM on
samples drawn from the client models (eq. 2; eq. 3 adds public data). The NGR variant
learns the graph with the model (§2.5). Clients personalise the released model with
their own variables by stitching (§2.4).

Examples
--------
>>> import numpy as np, pandas as pd
>>> from fedstruct.data.client import ClientData
>>> rng = np.random.default_rng(0)
>>> a = rng.standard_normal(600); b = a + 0.3 * rng.standard_normal(600)
>>> c = (b > 0).astype(int)
>>> frame = pd.DataFrame({"a": a, "b": b, "c": c})
>>> clients = [ClientData(f"h{i}", frame.iloc[i::2].reset_index(drop=True)) for i in range(2)]
>>> est = FedNGM(kinds={"a": "real", "b": "real", "c": "binary"}, epochs=5).fit(clients)
>>> est.model_.names
('a', 'b', 'c')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedngm.client import FedNGMClient, local_graph
    from fedstruct.methods.fedngm.config import FedNGMConfig
    from fedstruct.methods.fedngm.estimator import FedNGM
    from fedstruct.methods.fedngm.metrics import prediction_metrics, sample_fidelity
    from fedstruct.methods.fedngm.model import NGM, fit_ngm, stitch
    from fedstruct.methods.fedngm.run import CLEAR_LOSS, run_fedngm
    from fedstruct.methods.fedngm.schema import KINDS, Schema
    from fedstruct.methods.fedngm.server import FedNGMServer
    from fedstruct.methods.fedngm.settings import DATASETS, FedNGMRun
    from fedstruct.methods.fedngm.sources import (
        SubpopulationSource,
        health_insurance_federation,
        targets,
    )
    from fedstruct.methods.fedngm.structure import glasso_graph, merge_graphs

__all__ = [
    "CLEAR_LOSS",
    "DATASETS",
    "KINDS",
    "NGM",
    "FedNGM",
    "FedNGMClient",
    "FedNGMConfig",
    "FedNGMRun",
    "FedNGMServer",
    "Schema",
    "SubpopulationSource",
    "fit_ngm",
    "glasso_graph",
    "health_insurance_federation",
    "local_graph",
    "merge_graphs",
    "prediction_metrics",
    "run_fedngm",
    "sample_fidelity",
    "stitch",
    "targets",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CLEAR_LOSS": "run",
        "DATASETS": "settings",
        "FedNGM": "estimator",
        "FedNGMClient": "client",
        "FedNGMConfig": "config",
        "FedNGMRun": "settings",
        "FedNGMServer": "server",
        "KINDS": "schema",
        "NGM": "model",
        "Schema": "schema",
        "SubpopulationSource": "sources",
        "fit_ngm": "model",
        "glasso_graph": "structure",
        "health_insurance_federation": "sources",
        "local_graph": "client",
        "merge_graphs": "structure",
        "prediction_metrics": "metrics",
        "run_fedngm": "run",
        "sample_fidelity": "metrics",
        "stitch": "model",
        "targets": "sources",
    },
)
