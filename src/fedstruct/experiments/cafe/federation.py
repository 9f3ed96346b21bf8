"""CAFE's federation (§VI-A): long-tailed training images split over clients by a Dirichlet.

The training images get a long tail (``imbalance_factor``: Cao et al. 2019) and are
cut over the clients by ``Dir(alpha)`` (Hsu et al. 2019) with
:func:`fedstruct.data.partition.label_skew`; the test set stays balanced.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from fedstruct.data._shared import SeedLike
from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.data.datasets.images import load_images
from fedstruct.data.formats import IMAGES, ImageSites
from fedstruct.data.images import LABEL, ImageSet, to_rows
from fedstruct.data.partition import LabelSkewSplit, client_names, label_skew
from fedstruct.errors import DataError
from fedstruct.experiments.cafe.settings import CafeRun
from fedstruct.experiments.sites import read_sites

__all__ = [
    "IMAGES",
    "ImageFederation",
    "ImageSites",
    "build_clients",
    "federation",
    "image_clients",
    "image_sites",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class ImageFederation:
    """Clients holding label-skewed shares of an image set's training data.

    Attributes
    ----------
    clients
        One :class:`ClientData` per client, built when first read: rows from
        :func:`to_rows`, supervising ``"label"``.
    split
        The :class:`LabelSkewSplit` (indices into the image set's training data).
    test
        The image set's balanced test images, as rows.
    shape
        ``(C, H, W)``.
    n_classes
        Number of classes.
    classes
        Class names, by code.
    """

    clients: ClientsOnDemand
    split: LabelSkewSplit
    test: pd.DataFrame
    shape: tuple[int, int, int]
    n_classes: int
    classes: tuple[str, ...]


def image_clients(
    images: ImageSet,
    n_clients: int,
    *,
    alpha: float,
    imbalance_factor: float | None = None,
    min_per_client: int = 10,
    scheme: str = "client",
    seed: SeedLike,
) -> ImageFederation:
    """Long-tail then Dirichlet(α) label skew of the training images over clients (CAFE).

    The split is :func:`fedstruct.data.partition.label_skew` on the training labels:
    with ``imbalance_factor`` the classes keep ``⌊n_max·r^(c/(C-1))⌋`` images,
    ``r = 1/imbalance_factor``, ``n_max`` the smallest class size (Cao et al. 2019);
    then a Dirichlet label skew over the clients (CAFE §VI-A, Fig. 3). ``scheme``
    picks how the Dirichlet applies (:func:`label_skew`): ``"client"`` (default; Hsu
    et al. 2019: even client sizes, each client's class mix drawn from ``Dir(α·p)``)
    never leaves a client empty; ``"class"`` (each class cut over the clients) leaves
    most of 100 clients' draws with an empty client at ``α = 0.1`` and is redrawn
    until ``min_per_client`` holds.
    Redraws are logged on the ``fedstruct.data.images`` logger at INFO level. Clients
    are ``client-1 .. client-K``. The test set stays whole and balanced.

    Raises
    ------
    PartitionError
        From :func:`label_skew` (bad ``alpha``/``imbalance_factor``, too few images,
        no draw meeting ``min_per_client``).
    DataError
        If ``images`` is not an :class:`ImageSet`.
    """
    if not isinstance(images, ImageSet):
        raise DataError(f"image_clients needs an ImageSet, got {type(images).__name__}")
    split = label_skew(
        images.train_labels,
        n_clients,
        alpha=alpha,
        seed=seed,
        imbalance_factor=imbalance_factor,
        min_per_client=min_per_client,
        scheme=scheme,
    )
    if split.attempts > 1:
        logger.info(
            "split redrawn %d times so every client holds >= %d samples",
            split.attempts - 1,
            min_per_client,
        )
    names = client_names(len(split.clients))

    def build(k: int) -> ClientData:
        idx = split.clients[k]
        rows = to_rows(images.train_images[idx], images.train_labels[idx])
        return ClientData(names[k], rows, supervised=(LABEL,))

    return ImageFederation(
        clients=ClientsOnDemand(names, build),
        split=split,
        test=to_rows(images.test_images, images.test_labels),
        shape=images.shape,
        n_classes=images.n_classes,
        classes=images.classes,
    )


@lru_cache(maxsize=4)
def _federation(
    dataset: str,
    data_dir: str | None,
    clients: int,
    dirichlet: float,
    imbalance_factor: float | None,
    min_per_client: int,
    seed: int,
) -> ImageFederation:
    images = load_images(dataset, data_dir, seed=seed)
    return image_clients(images, clients, alpha=dirichlet, imbalance_factor=imbalance_factor,
                         min_per_client=min_per_client, seed=seed)  # fmt: skip


def federation(s: CafeRun) -> ImageFederation:
    """The clients and test rows the settings describe (cached)."""
    return _federation(s.dataset, s.data_dir, s.clients, s.skew_alpha, s.imbalance_factor,
                       s.min_per_client, s.seed)  # fmt: skip


def build_clients(s: CafeRun) -> Sequence[ClientData]:
    """The clients' images, as rows (a user's image sites, or the paper's split)."""
    if s.from_files:
        return image_sites(s).clients
    return federation(s).clients


def image_sites(s: CafeRun) -> ImageSites:
    """The sites the settings name, read and coded with one class codebook (with
    ``node_sites``: the sites this process reads, coded with the deployment's)."""
    return read_sites(IMAGES, s, {})
