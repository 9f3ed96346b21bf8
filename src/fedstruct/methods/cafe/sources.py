"""CAFE's data (§VI-A): long-tailed training images split over clients by a Dirichlet,
or a user's image sites.

The training images get a long tail (``imbalance_factor``: Cao et al. 2019) and are
cut over the clients by ``Dir(alpha)`` (Hsu et al. 2019) with
:func:`fedstruct.data.partition.label_skew`; the test set stays balanced
(:class:`SplitImages`). A user's sites are read in the
:data:`~fedstruct.data.formats.IMAGES_OR_TABLES` site format: image folders or
``.npz`` files (:class:`SiteImages`), or tables whose class column is ``target``
(:class:`SiteTable`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from fedstruct.data._shared import SeedLike
from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.data.datasets.images import load_images
from fedstruct.data.formats import IMAGES, ImageSites
from fedstruct.data.images import LABEL, ImageFederationSchema, ImageSet, to_rows
from fedstruct.data.partition import LabelSkewSplit, client_names, label_skew
from fedstruct.data.sites import LEVELLED
from fedstruct.errors import DataError
from fedstruct.methods.cafe.config import continuous_target_message
from fedstruct.methods.cafe.settings import CafeRun
from fedstruct.runs.source import OnSites, SiteFiles, Source, TableTask

__all__ = [
    "IMAGES",
    "ImageFederation",
    "SiteImages",
    "SiteTable",
    "SplitImages",
    "image_clients",
    "source",
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


def source(s: CafeRun, sites: SiteFiles | None) -> SplitImages | SiteImages | SiteTable:
    """The run's data: the user's image ``sites`` or table ``sites``, else the paper's
    split of ``s.dataset`` (:class:`SplitImages`)."""
    if sites is None:
        return SplitImages(s)
    return SiteImages(s, sites) if isinstance(sites.read, ImageSites) else SiteTable(s, sites)


class SplitImages(Source):
    """The paper's federation (§VI-A): ``settings.dataset``'s training images with a
    long tail, cut over ``client-1 .. client-K`` by ``Dir(skew_alpha)``
    (:func:`image_clients`), and its balanced test set on the server; built once,
    when first read."""

    #: Share of each client's images it keeps out itself: none, the server has a test set.
    held_out = 0.0

    def __init__(self, settings: CafeRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def federation(self) -> ImageFederation:
        """The clients' images, the split and the test rows."""
        s = self.settings
        images = load_images(s.dataset, s.data_dir, seed=s.seed)
        return image_clients(images, s.clients, alpha=s.skew_alpha,
                             imbalance_factor=s.imbalance_factor,
                             min_per_client=s.min_per_client, seed=s.seed)  # fmt: skip

    def clients(self) -> ClientsOnDemand:
        """The clients' images, as rows (each client built when read)."""
        return self.federation.clients

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of every image."""
        return self.federation.shape

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return self.federation.n_classes

    @property
    def test(self) -> pd.DataFrame:
        """The balanced test images, as rows (the server's)."""
        return self.federation.test

    def data_params(self) -> dict[str, Any]:
        """What CAFE's constructor takes from the data: the images' shape and classes."""
        return {"shape": self.shape, "n_classes": self.n_classes}


class SiteImages(OnSites):
    """A user's image sites (folders ``SITE/CLASS/*.png`` or ``.npz`` files), read as
    :class:`~fedstruct.data.formats.ImageSites` with one class codebook (a deployed
    node: its own site; its ServerApp: the schema only). Each site keeps
    ``test_fraction`` of its images out to score the final model on. CAFE learns no
    graph: there is no truth."""

    @property
    def held_out(self) -> float:
        """Share of each site's images it keeps out of training."""
        return self.settings.test_fraction

    @property
    def schema(self) -> ImageFederationSchema:
        """The image shape, the class codebook and every site's number of images."""
        return self.sites.schema

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of every image."""
        return self.schema.shape

    @property
    def n_classes(self) -> int:
        """Number of classes of the codebook."""
        return len(self.schema.classes)

    def data_params(self) -> dict[str, Any]:
        """What CAFE's constructor takes from the data: the images' shape and classes."""
        return {"shape": self.shape, "n_classes": self.n_classes}


class SiteTable(TableTask):
    """A user's table sites (CSV, TSV, Parquet) and the class column to predict
    (``target``: the setting, else the manifest's), for hospitals whose rows are
    records rather than images. Categorical and ordinal columns are one-hot,
    continuous ones standardised and missing values (kept by default:
    ``missing=keep``) imputed, from federated statistics
    (:mod:`fedstruct.fl.features`); each site keeps ``test_fraction`` of its rows out
    to score the final model on."""

    @property
    def held_out(self) -> float:
        """Share of each site's rows it keeps out of training."""
        return self.settings.test_fraction

    @cached_property
    def target(self) -> str:
        """The class column (:meth:`~fedstruct.runs.source.TableTask.checked_target`).

        Raises
        ------
        DataError
            Also if the target is continuous: CAFE classifies.
        """
        target = self.checked_target("CAFE", regression=False)
        if self.sites.schema.kinds[target] not in LEVELLED:
            raise DataError(continuous_target_message(target))
        return target

    def data_params(self) -> dict[str, Any]:
        """What CAFE's constructor takes from the data: the class column and how the
        other columns are encoded."""
        return {
            "target": self.target,
            "cardinalities": self.cardinalities,
            "continuous": self.continuous,
            "missing_values": self.missing_values,
        }
