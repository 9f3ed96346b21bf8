"""CAFE: causal drift-aware federated learning, with FedAvg, FedProx, MOON, FedProto.

Implements papers/cafe-drift-aware-federated-learning.txt through the reconstruction
of its lost formulas in METHODS.md § CAFE: a multi-head cosine classifier whose
weights are normalised by ``‖w‖ + γ`` (Parameter Calibration), features with the
global and local drift directions removed during training (Feature Calibration), a
momentum over the aggregated updates at the server (History-Aware Average), and
drift-free inference that removes the global drift direction (TDE). The four
baselines of the paper's §VI run on the same harness (same data, backbone,
participation and local optimiser), each with its published objective.

Examples
--------
>>> from fedstruct.data.datasets.images import load_digits
>>> from fedstruct.methods.cafe import image_clients
>>> digits = load_digits(seed=0)
>>> fed = image_clients(digits, 5, alpha=1.0, seed=0)
>>> est = CAFE(digits.shape, digits.n_classes, rounds=3, local_epochs=1).fit(fed.clients)
>>> 0.0 <= est.score(fed.test) <= 1.0
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.cafe.classifier import cosine_logits, drift_basis, remove_drift
    from fedstruct.methods.cafe.client import CafeClient
    from fedstruct.methods.cafe.config import ALGORITHMS, BACKBONES, CafeConfig
    from fedstruct.methods.cafe.estimator import CAFE
    from fedstruct.methods.cafe.networks import DriftNet
    from fedstruct.methods.cafe.run import class_groups, run_cafe
    from fedstruct.methods.cafe.server import CafeServer, CafeState
    from fedstruct.methods.cafe.settings import CafeRun
    from fedstruct.methods.cafe.sources import (
        ImageFederation,
        SiteImages,
        SiteTable,
        SplitImages,
        image_clients,
    )

__all__ = [
    "ALGORITHMS",
    "BACKBONES",
    "CAFE",
    "CafeClient",
    "CafeConfig",
    "CafeRun",
    "CafeServer",
    "CafeState",
    "DriftNet",
    "ImageFederation",
    "SiteImages",
    "SiteTable",
    "SplitImages",
    "class_groups",
    "cosine_logits",
    "drift_basis",
    "image_clients",
    "remove_drift",
    "run_cafe",
]

# the classes and functions are imported when first read: importing the config
# (a run's settings, its --help) imports no torch
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ALGORITHMS": "config",
        "BACKBONES": "config",
        "CAFE": "estimator",
        "CafeClient": "client",
        "CafeConfig": "config",
        "CafeRun": "settings",
        "CafeServer": "server",
        "CafeState": "server",
        "DriftNet": "networks",
        "ImageFederation": "sources",
        "SiteImages": "sources",
        "SiteTable": "sources",
        "SplitImages": "sources",
        "class_groups": "run",
        "cosine_logits": "classifier",
        "drift_basis": "classifier",
        "image_clients": "sources",
        "remove_drift": "classifier",
        "run_cafe": "run",
    },
)
