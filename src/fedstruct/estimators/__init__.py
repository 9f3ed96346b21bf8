"""The methods' scikit-learn estimators: a thin base (parameters and ``fit``) and the
capabilities an estimator derives from, which generic verbs ask for instead of
naming methods.

- :mod:`~fedstruct.estimators.base`: :class:`FederatedEstimator`, every method's
  base: explicit parameters (scikit-learn's ``get_params``/``set_params``/``clone``),
  checked together in ``fit`` (``prepare``), the federation run on a backend;
- :mod:`~fedstruct.estimators.parameters`: the parameter names, checked against the
  method's config when a class is defined;
- :mod:`~fedstruct.estimators.persistence`: :class:`Persistent`, what a fit learned
  as arrays plus JSON and back, and the checkpoint fingerprint;
- :mod:`~fedstruct.estimators.secure`: the secure-aggregation policy;
- :mod:`~fedstruct.estimators.prediction`: :class:`Predictor` (``prediction``,
  ``model_rows``, the codebook) with :class:`InputColumns` and :class:`Prediction`;
- :mod:`~fedstruct.estimators.graph_learner`: :class:`GraphLearner`, scored
  against a true graph;
- :mod:`~fedstruct.estimators.bootstrap`: a graph learner's bootstrap replicates;
- :mod:`~fedstruct.estimators.sampling`: :class:`JointModel` (sample, query).

The names below are imported from their modules when first read (PEP 562).
"""

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.estimators.base import FederatedEstimator
    from fedstruct.estimators.graph_learner import GraphLearner
    from fedstruct.estimators.persistence import Persistent
    from fedstruct.estimators.prediction import (
        InputColumns,
        Prediction,
        Predictor,
        check_targets,
    )
    from fedstruct.estimators.sampling import JointModel

__all__ = [
    "FederatedEstimator",
    "GraphLearner",
    "InputColumns",
    "JointModel",
    "Persistent",
    "Prediction",
    "Predictor",
    "check_targets",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FederatedEstimator": "base",
        "GraphLearner": "graph_learner",
        "InputColumns": "prediction",
        "JointModel": "sampling",
        "Persistent": "persistence",
        "Prediction": "prediction",
        "Predictor": "prediction",
        "check_targets": "prediction",
    },
)
