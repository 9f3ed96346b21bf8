"""Images as a data set type and as client rows.

Images are ``float32`` arrays ``(N, C, H, W)`` scaled to ``[0, 1]``; labels are
``int64`` class codes ``0..K-1``. :class:`ImageSet` holds a data set with its own
train/test split. A client's data is a :class:`~fedstruct.data.ClientData` whose rows
are one ``float32`` column per pixel (:func:`pixel_columns`, channel-major flatten
order) plus the ``int64`` column :data:`LABEL` (:func:`to_rows`, :func:`from_rows`).
Readers of standard image files live in :mod:`fedstruct.data.datasets.images`.

A site's own images (a hospital's folder or ``.npz``) are an :class:`ImageSite`,
labelled by class *name*. Each site sends its :class:`ImageSiteSchema` (metadata
only); :func:`merge_image_schemas` checks the shapes agree and builds the class
codebook (:class:`ImageFederationSchema`); :func:`image_client` codes the site's
labels with it and returns its :class:`~fedstruct.data.ClientData`.

Image files are decoded with Pillow and converted to ``C = 1`` (grey) or ``C = 3``
(RGB) by mode:

* ``L`` -> grey, bytes / 255; ``1`` (bi-level) -> grey 0 or 1; ``LA`` -> grey, alpha
  dropped;
* 16-bit grey (``I;16``, ``I;16B``, ``I;16L``, ``I;16N``, and ``I`` with values in
  ``0..65535``) -> grey, values / 65535;
* ``RGB`` -> RGB, bytes / 255; ``RGBA`` and ``PA`` -> RGB, alpha dropped (not
  composited on a background); ``P`` (palette, even a grey one), ``CMYK``, ``YCbCr``,
  ``LAB``, ``HSV`` -> RGB through Pillow's ``convert("RGB")``;
* any other mode (e.g. 32-bit float ``F``) and multi-frame files are errors.

JPEG EXIF orientation is applied first (the image as a viewer shows it). Pillow
itself reduces 16-bit-per-channel colour PNGs to 8 bits when it opens them.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib.npyio import NpzFile
from numpy.typing import ArrayLike, NDArray

from fedstruct.data.checks import require_regular_file
from fedstruct.data.client import ClientData
from fedstruct.errors import DataError, UnknownVariableError

__all__ = [
    "IMAGE_SUFFIXES",
    "LABEL",
    "ImageFederationSchema",
    "ImageSet",
    "ImageSite",
    "ImageSiteSchema",
    "class_order",
    "from_rows",
    "image_client",
    "merge_image_schemas",
    "pixel_columns",
    "read_image_folder",
    "read_image_npz",
    "read_image_site",
    "to_rows",
    "unit_scale",
]

#: The class-code column of image rows.
LABEL = "label"


# ------------------------------------------------------------------ the data set type
@dataclass(frozen=True, eq=False)
class ImageSet:
    """An image classification data set with its own train/test split.

    Parameters
    ----------
    name
        Short name, e.g. ``"cifar10"``.
    train_images, test_images
        ``float32`` arrays ``(N, C, H, W)`` with values in ``[0, 1]``. They are stored
        as read-only views (the caller's arrays are not changed).
    train_labels, test_labels
        ``int64`` class codes ``0..K-1``, one per image.
    classes
        The ``K`` class names, by code.

    Raises
    ------
    DataError
        For an empty name or class list, duplicate class names, a wrong dtype or
        shape, no images, values outside ``[0, 1]`` (or NaN), labels outside
        ``0..K-1``, or train and test images of different shapes.
    """

    name: str
    train_images: NDArray[np.float32]
    train_labels: NDArray[np.int64]
    test_images: NDArray[np.float32]
    test_labels: NDArray[np.int64]
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataError(f"an image set needs a non-empty name, got {self.name!r}")
        classes = tuple(self.classes)
        if (
            not classes
            or any(not isinstance(c, str) or not c for c in classes)
            or len(set(classes)) != len(classes)
        ):
            raise DataError(
                f"image set {self.name!r}: classes must be unique non-empty strings, "
                f"got {list(classes)[:10]}"
            )
        object.__setattr__(self, "classes", classes)
        for part in ("train", "test"):
            images = _checked_images(
                f"image set {self.name!r}", f"{part}_images", getattr(self, f"{part}_images")
            )
            labels = _checked_labels(
                self.name, part, getattr(self, f"{part}_labels"), len(images), len(classes)
            )
            object.__setattr__(self, f"{part}_images", images)
            object.__setattr__(self, f"{part}_labels", labels)
        if self.train_images.shape[1:] != self.test_images.shape[1:]:
            raise DataError(
                f"image set {self.name!r}: train images are {self.train_images.shape[1:]} but "
                f"test images are {self.test_images.shape[1:]}; both must have one (C, H, W)"
            )

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of every image."""
        c, h, w = self.train_images.shape[1:]
        return int(c), int(h), int(w)

    @property
    def n_classes(self) -> int:
        """Number of classes ``K``."""
        return len(self.classes)


def _checked_images(owner: str, field: str, images: object) -> NDArray[np.float32]:
    """A read-only view of valid ``float32 (N, C, H, W)`` images in ``[0, 1]``.

    ``owner`` and ``field`` start the error message, e.g. ``"image set 'x'"`` and
    ``"train_images"``.
    """
    if not isinstance(images, np.ndarray) or images.dtype != np.float32 or images.ndim != 4:
        got = f"{images.dtype} {images.shape}" if isinstance(images, np.ndarray) else type(images)
        raise DataError(f"{owner}: {field} must be a float32 array (N, C, H, W), got {got}")
    if len(images) == 0 or images.size == 0:
        raise DataError(f"{owner}: {field} is empty, shape {images.shape}")
    lo, hi = float(images.min()), float(images.max())
    if not (lo >= 0.0 and hi <= 1.0):
        raise DataError(
            f"{owner}: {field} must lie in [0, 1] (got min {lo}, max {hi}); "
            "scale raw bytes by 1/255"
        )
    view = images.view()
    view.flags.writeable = False
    return view


def _checked_labels(
    name: str, part: str, labels: object, n_images: int, n_classes: int
) -> NDArray[np.int64]:
    """A read-only view of valid ``int64`` labels ``0..K-1``, one per image."""
    if not isinstance(labels, np.ndarray) or labels.dtype != np.int64:
        got = labels.dtype if isinstance(labels, np.ndarray) else type(labels)
        raise DataError(f"image set {name!r}: {part}_labels must be an int64 array, got {got}")
    if labels.shape != (n_images,):
        raise DataError(
            f"image set {name!r}: {part}_labels has shape {labels.shape} but there are "
            f"{n_images} {part} images; give one label per image"
        )
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= n_classes:
        raise DataError(
            f"image set {name!r}: {part}_labels range over {lo}..{hi} but there are "
            f"{n_classes} classes; labels must be codes 0..{n_classes - 1}"
        )
    view = labels.view()
    view.flags.writeable = False
    return view


def unit_scale(pixels: NDArray[np.uint8]) -> NDArray[np.float32]:
    """Bytes ``0..255`` to ``float32`` in ``[0, 1]``: the correctly rounded ``x / 255``."""
    return np.divide(pixels, np.float32(255), dtype=np.float32)


# ---------------------------------------------------------------------------- rows
def _check_shape(shape: object) -> tuple[int, int, int]:
    if (
        not isinstance(shape, Sequence)
        or len(shape) != 3
        or not all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in shape)
        or not all(s > 0 for s in shape)
    ):
        raise DataError(f"an image shape is three positive ints (C, H, W), got {shape!r}")
    return int(shape[0]), int(shape[1]), int(shape[2])


def pixel_columns(shape: Sequence[int]) -> list[str]:
    """Column names ``px_0 .. px_{C·H·W-1}``, in C-order (channel, row, column) flatten order.

    Pixel ``(c, y, x)`` is column ``px_{(c·H + y)·W + x}``.
    """
    c, h, w = _check_shape(shape)
    return [f"px_{i}" for i in range(c * h * w)]


def to_rows(images: NDArray[np.floating[Any]], labels: ArrayLike) -> pd.DataFrame:
    """One row per image: ``float32`` pixel columns (:func:`pixel_columns`) then ``label``.

    The pixels form one 2-D block (no per-column loop).

    Raises
    ------
    DataError
        If ``images`` is not ``(N, C, H, W)`` or there is not one integer label per image.
    """
    x = np.asarray(images)
    y = np.asarray(labels)
    if x.ndim != 4:
        raise DataError(f"images must be an (N, C, H, W) array, got shape {x.shape}")
    if y.shape != (len(x),) or (y.size and y.dtype.kind not in "iu"):
        raise DataError(
            f"labels must be one integer per image ({len(x)}), got {y.dtype} of shape {y.shape}"
        )
    frame = pd.DataFrame(
        x.reshape(len(x), -1).astype(np.float32, copy=False),
        columns=pixel_columns(x.shape[1:]),
    )
    frame[LABEL] = y.astype(np.int64)
    return frame


def from_rows(
    rows: pd.DataFrame, shape: Sequence[int]
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """Images ``float32 (N, C, H, W)`` and labels ``int64`` back from :func:`to_rows` rows.

    Columns other than the pixels and ``label`` are ignored.

    Raises
    ------
    UnknownVariableError
        If a pixel column or the ``label`` column is missing (the message names it).
    DataError
        If ``rows`` is not a DataFrame, ``shape`` is not three positive ints, or a
        label is not an integer.
    """
    c, h, w = _check_shape(shape)
    if not isinstance(rows, pd.DataFrame):
        raise DataError(f"rows must be a pandas DataFrame, got {type(rows).__name__}")
    columns = pixel_columns((c, h, w))
    present = set(rows.columns)
    missing = [col for col in columns if col not in present]
    if missing:
        raise UnknownVariableError(
            f"rows have no pixel column {missing[0]!r} ({len(missing)} of {len(columns)} "
            f"missing); images of shape {(c, h, w)} need columns px_0..px_{len(columns) - 1}"
        )
    if LABEL not in present:
        raise UnknownVariableError(
            f"rows have no {LABEL!r} column; add the class codes 0..K-1 as column {LABEL!r}"
        )
    images = rows.loc[:, columns].to_numpy(dtype=np.float32).reshape(-1, c, h, w)
    raw = rows[LABEL].to_numpy()
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind != "f" or not np.all(raw == np.round(raw)):
            raise DataError(f"column {LABEL!r} must hold integer class codes, got {raw.dtype}")
    return images, raw.astype(np.int64)


# ------------------------------------------------------------------ a site's own images
#: File suffixes read as images in a site folder (any case).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")

_FOLDER_LAYOUT = "expected SITE/CLASS/*.png|jpg|jpeg, one sub-folder per class named by the class"
_NPZ_LAYOUT = "save it with np.savez(path, images=..., labels=...)"
_INTEGER_NAME = re.compile(r"-?[0-9]+")
_GREY_MODES = frozenset({"1", "L", "LA"})
_COLOUR_MODES = frozenset({"RGB", "RGBA", "RGBa", "RGBX", "P", "PA", "CMYK", "YCbCr", "LAB", "HSV"})
_WIDE_GREY_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I"})
_MAX_LISTED = 10


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _listed(names: Sequence[str]) -> str:
    """At most ten names, as a list, with a count of the rest."""
    shown = list(names[:_MAX_LISTED])
    more = len(names) - len(shown)
    return f"{shown} and {more} more" if more else f"{shown}"


def class_order(names: Iterable[str]) -> tuple[str, ...]:
    """The distinct class names, sorted: by number when every name is an integer.

    ``"2" < "10"`` when all names are integers written in decimal (``-?[0-9]+``), so
    integer labels ``0..K-1`` keep their value as code; otherwise names sort as strings.
    Ties between equal numbers (``"1"``, ``"01"``) are broken by the string.
    """
    unique = set(names)
    if unique and all(_INTEGER_NAME.fullmatch(n) for n in unique):
        return tuple(sorted(unique, key=lambda n: (int(n), n)))
    return tuple(sorted(unique))


def _checked_names(owner: str, labels: object, n_images: int) -> NDArray[np.str_]:
    """A read-only view of one non-empty class name per image."""
    names = np.asarray(labels)
    if names.dtype.kind != "U":
        raise DataError(
            f"{owner}: labels must be class names (strings), got dtype {names.dtype}; "
            "write integer labels as their decimal names, e.g. '3'"
        )
    if names.shape != (n_images,):
        raise DataError(
            f"{owner}: labels have shape {names.shape} but there are {n_images} images; "
            "give one class name per image"
        )
    empty = np.flatnonzero(names == "")
    if empty.size:
        raise DataError(f"{owner}: label {int(empty[0])} is an empty string; name its class")
    view = names.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False)
class ImageSite:
    """One site's own images, labelled by class name.

    The class codes are not the site's to choose: they come from the federation's
    codebook (:func:`merge_image_schemas`), so a site keeps names and
    :func:`image_client` codes them.

    Parameters
    ----------
    name
        The site's name (the client's name), e.g. ``"hospital-2"``.
    images
        ``float32 (N, C, H, W)`` in ``[0, 1]``; stored as a read-only view.
    labels
        The class name of each image (a numpy string array, or a sequence of ``str``);
        stored as a read-only view.

    Raises
    ------
    DataError
        For an empty name, images that are not a non-empty ``float32 (N, C, H, W)``
        array in ``[0, 1]``, labels that are not strings, an empty class name, or not
        one label per image.
    """

    name: str
    images: NDArray[np.float32]
    labels: NDArray[np.str_]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataError(f"an image site needs a non-empty name, got {self.name!r}")
        owner = f"image site {self.name!r}"
        images = _checked_images(owner, "images", self.images)
        object.__setattr__(self, "images", images)
        object.__setattr__(self, "labels", _checked_names(owner, self.labels, len(images)))

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of every image."""
        c, h, w = self.images.shape[1:]
        return int(c), int(h), int(w)

    @property
    def n_images(self) -> int:
        """Number of images ``N``."""
        return len(self.images)

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names present, in :func:`class_order`."""
        return class_order(np.unique(self.labels).tolist())

    def schema(self) -> ImageSiteSchema:
        """What the site tells the federation: its name, size, image shape and class counts.

        Metadata only: no pixel value and no per-image label is in it. The per-class
        counts are aggregates, as in a data set's description.
        """
        names, counts = np.unique(self.labels, return_counts=True)
        count = dict(zip(names.tolist(), counts.tolist(), strict=True))
        classes = class_order(count)
        return ImageSiteSchema(
            site=self.name,
            n_images=self.n_images,
            shape=self.shape,
            classes=classes,
            counts=tuple(int(count[c]) for c in classes),
        )


def _config_value(config: Mapping[str, Any], key: str, what: str) -> Any:
    if not isinstance(config, Mapping):
        raise DataError(f"{what} config must be a mapping, got {type(config).__name__}")
    if key not in config:
        raise DataError(
            f"{what} config has no {key!r} (it has {sorted(config)}); build it with to_config()"
        )
    return config[key]


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _checked_classes(owner: str, classes: object) -> tuple[str, ...]:
    if isinstance(classes, str) or not isinstance(classes, Sequence):
        raise DataError(f"{owner}: classes must be a sequence of names, got {classes!r}")
    names = tuple(classes)
    if (
        not names
        or any(not isinstance(c, str) or not c for c in names)
        or len(set(names)) != len(names)
    ):
        raise DataError(
            f"{owner}: classes must be unique non-empty strings, got {_listed(list(names))}"
        )
    return names


@dataclass(frozen=True)
class ImageSiteSchema:
    """A site's image metadata, sent to the server to build the federation's codebook.

    Parameters
    ----------
    site
        The site's name.
    n_images
        Number of images.
    shape
        ``(C, H, W)`` of its images.
    classes
        The class names it holds, in :func:`class_order`.
    counts
        Images per class, aligned with ``classes``; they sum to ``n_images``.

    Raises
    ------
    DataError
        For an empty site name, a non-positive ``n_images``, a shape that is not three
        positive ints, duplicate or empty class names, or counts that are not one
        positive int per class summing to ``n_images``.
    """

    site: str
    n_images: int
    shape: tuple[int, int, int]
    classes: tuple[str, ...]
    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.site, str) or not self.site:
            raise DataError(f"an image site schema needs a non-empty site name, got {self.site!r}")
        owner = f"image site schema {self.site!r}"
        if not _is_int(self.n_images) or self.n_images < 1:
            raise DataError(f"{owner}: n_images must be a positive int, got {self.n_images!r}")
        object.__setattr__(self, "n_images", int(self.n_images))
        object.__setattr__(self, "shape", _check_shape(self.shape))
        classes = _checked_classes(owner, self.classes)
        object.__setattr__(self, "classes", classes)
        counts = tuple(self.counts) if isinstance(self.counts, Sequence) else None
        if (
            counts is None
            or len(counts) != len(classes)
            or not all(_is_int(n) and n > 0 for n in counts)
            or sum(counts) != self.n_images
        ):
            raise DataError(
                f"{owner}: counts must be one positive int per class ({len(classes)}) summing "
                f"to n_images={self.n_images}, got {self.counts!r}"
            )
        object.__setattr__(self, "counts", tuple(int(n) for n in counts))

    def to_config(self) -> dict[str, str | int | list[int] | list[str]]:
        """A JSON-able dict (and a valid message config): str, int and lists of one type."""
        return {
            "site": self.site,
            "n_images": self.n_images,
            "shape": list(self.shape),
            "classes": list(self.classes),
            "counts": list(self.counts),
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ImageSiteSchema:
        """The schema back from :meth:`to_config` (after a JSON or message round trip).

        Raises
        ------
        DataError
            If a key is missing or a value is not valid.
        """
        what = "image site schema"
        return cls(
            site=_config_value(config, "site", what),
            n_images=_config_value(config, "n_images", what),
            shape=tuple(_config_value(config, "shape", what)),
            classes=tuple(_config_value(config, "classes", what)),
            counts=tuple(_config_value(config, "counts", what)),
        )


@dataclass(frozen=True)
class ImageFederationSchema:
    """The federation's image shape, class codebook and sites.

    Parameters
    ----------
    shape
        ``(C, H, W)`` shared by every site.
    classes
        The class codebook: class ``classes[k]`` has code ``k``.
    sites
        Site name -> number of images (copied).

    Raises
    ------
    DataError
        For a bad shape, duplicate or empty class names, or no sites, an empty site
        name or a non-positive image count.
    """

    shape: tuple[int, int, int]
    classes: tuple[str, ...]
    sites: dict[str, int]

    def __post_init__(self) -> None:
        owner = "image federation schema"
        object.__setattr__(self, "shape", _check_shape(self.shape))
        object.__setattr__(self, "classes", _checked_classes(owner, self.classes))
        sites = dict(self.sites) if isinstance(self.sites, Mapping) else None
        if (
            not sites
            or any(not isinstance(s, str) or not s for s in sites)
            or any(not _is_int(n) or n < 1 for n in sites.values())
        ):
            raise DataError(
                f"{owner}: sites must map each site's name to its positive number of images, "
                f"got {self.sites!r}"
            )
        object.__setattr__(self, "sites", {s: int(n) for s, n in sites.items()})

    @property
    def n_classes(self) -> int:
        """Number of classes ``K``."""
        return len(self.classes)

    def codes(self, labels: ArrayLike) -> NDArray[np.int64]:
        """The codebook's ``int64`` code of each class name.

        Raises
        ------
        UnknownVariableError
            If a name is not in :attr:`classes` (the message names it).
        """
        names, inverse = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
        lookup = {c: k for k, c in enumerate(self.classes)}
        unknown = [n for n in names.tolist() if n not in lookup]
        if unknown:
            raise UnknownVariableError(
                f"class {unknown[0]!r} is not in the federation's classes "
                f"{_listed(self.classes)}; merge every site's schema (merge_image_schemas)"
            )
        coded = np.array([lookup[n] for n in names.tolist()], dtype=np.int64)
        return coded[inverse.reshape(-1)]

    def to_config(self) -> dict[str, list[int] | list[str]]:
        """A JSON-able dict (and a valid message config): lists of one type each."""
        return {
            "shape": list(self.shape),
            "classes": list(self.classes),
            "site_names": list(self.sites),
            "site_images": list(self.sites.values()),
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ImageFederationSchema:
        """The schema back from :meth:`to_config`.

        Raises
        ------
        DataError
            If a key is missing, site names and counts differ in length, or a value is
            not valid.
        """
        what = "image federation schema"
        names = list(_config_value(config, "site_names", what))
        counts = list(_config_value(config, "site_images", what))
        if len(names) != len(counts) or len(set(names)) != len(names):
            raise DataError(
                f"{what} config: site_names ({len(names)}) must be unique and match "
                f"site_images ({len(counts)}) one to one; build it with to_config()"
            )
        return cls(
            shape=tuple(_config_value(config, "shape", what)),
            classes=tuple(_config_value(config, "classes", what)),
            sites=dict(zip(names, counts, strict=True)),
        )


def merge_image_schemas(schemas: Iterable[ImageSiteSchema]) -> ImageFederationSchema:
    """The federation's schema from every site's: one shape, the class codebook, the sites.

    The codebook is the union of the sites' classes in :func:`class_order` (by number
    when every name is an integer, else as strings), so it does not depend on the
    order of the sites.

    Raises
    ------
    DataError
        If there is no schema, an item is not an :class:`ImageSiteSchema`, two share a
        site name, or two sites' images differ in shape (naming both sites and shapes).
    """
    items = list(schemas)
    if not items:
        raise DataError("merge_image_schemas needs at least one site's schema")
    for item in items:
        if not isinstance(item, ImageSiteSchema):
            raise DataError(
                f"merge_image_schemas takes ImageSiteSchema values, got {type(item).__name__}; "
                "use ImageSite.schema() or ImageSiteSchema.from_config()"
            )
    names = [s.site for s in items]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"site names must be unique; repeated: {repeated}")
    first = items[0]
    for other in items[1:]:
        if other.shape != first.shape:
            raise DataError(
                f"site {other.site!r} has images of shape (C, H, W) = {other.shape} but site "
                f"{first.site!r} has {first.shape}; resize or convert one site's images so "
                "every site has one size and channel count"
            )
    return ImageFederationSchema(
        shape=first.shape,
        classes=class_order(c for s in items for c in s.classes),
        sites={s.site: s.n_images for s in items},
    )


def image_client(site: ImageSite, schema: ImageFederationSchema) -> ClientData:
    """The site's :class:`~fedstruct.data.ClientData`: pixel rows and codebook labels.

    Rows come from :func:`to_rows`; the ``label`` column holds each image's code in
    ``schema.classes`` and is the supervised column.

    Raises
    ------
    DataError
        If the site's image shape is not the federation's.
    UnknownVariableError
        If the site has a class the codebook lacks (naming the site and the classes).
    """
    if site.shape != schema.shape:
        raise DataError(
            f"image site {site.name!r} has images of shape {site.shape} but the federation's "
            f"are {schema.shape}; resize or convert them, or rebuild the federation's schema"
        )
    known = set(schema.classes)
    unknown = [c for c in site.classes if c not in known]
    if unknown:
        raise UnknownVariableError(
            f"image site {site.name!r} has classes {_listed(unknown)} that the federation's "
            f"codebook {_listed(schema.classes)} lacks; build the schema with "
            "merge_image_schemas over every site's schema, this one's included"
        )
    rows = to_rows(site.images, schema.codes(site.labels))
    return ClientData(site.name, rows, supervised=(LABEL,))


# ------------------------------------------------------------------ reading site files
def _visible(folder: Path) -> list[Path]:
    """The folder's entries whose names do not start with ``.``, sorted by name."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _class_folders(site: Path) -> list[Path]:
    entries = _visible(site)
    stray = [p for p in entries if not p.is_dir()]
    if stray:
        raise DataError(
            f"{stray[0]} is a file outside any class folder of site {site}; move it into "
            f"its class's sub-folder or rename it to start with '.'; {_FOLDER_LAYOUT}"
        )
    if not entries:
        raise DataError(f"site folder {site} has no class sub-folders; {_FOLDER_LAYOUT}")
    return entries


def _image_files(class_folder: Path) -> list[Path]:
    entries = _visible(class_folder)
    for entry in entries:
        require_regular_file(entry, "image")
        if entry.is_dir():
            raise DataError(
                f"{entry} is a folder inside class folder {class_folder}; a class folder holds "
                "image files only: move its images up or rename it to start with '.'"
            )
        if entry.suffix.lower() not in IMAGE_SUFFIXES:
            raise DataError(
                f"{entry} is not a .png, .jpg or .jpeg image; remove or convert it, or rename "
                "it to start with '.' (hidden files are skipped)"
            )
    if not entries:
        raise DataError(
            f"class folder {class_folder} holds no images; add .png/.jpg/.jpeg files to it "
            "or remove it"
        )
    return entries


def _open_image(path: Path) -> Any:
    """The decoded Pillow image, turned upright by its EXIF orientation."""
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as opened:
            frames = int(getattr(opened, "n_frames", 1))
            opened.load()
            image = ImageOps.exif_transpose(opened)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as err:
        raise DataError(
            f"{path} cannot be decoded as an image ({_one_line(err)}); re-save it as PNG or "
            "JPEG, or remove it"
        ) from err
    if frames > 1:
        raise DataError(f"{path} holds {frames} frames; save the one image as a single frame")
    return image


def _decoded_pixels(path: Path) -> NDArray[np.float32]:
    """One image file as ``float32 (C, H, W)`` in ``[0, 1]`` (conversions: module docs)."""
    image = _open_image(path)
    mode = image.mode
    if mode in _WIDE_GREY_MODES:
        raw = np.asarray(image)
        lo, hi = int(raw.min()), int(raw.max())
        if lo < 0 or hi > 65535:
            raise DataError(
                f"{path} is a {mode!r} integer image with values {lo}..{hi}, outside 16-bit "
                "0..65535; save it as 8- or 16-bit grey"
            )
        return np.divide(raw, np.float32(65535), dtype=np.float32)[None]
    if mode in _GREY_MODES:
        return unit_scale(np.asarray(image.convert("L")))[None]
    if mode in _COLOUR_MODES:
        return unit_scale(np.asarray(image.convert("RGB"))).transpose(2, 0, 1)
    raise DataError(
        f"{path} has Pillow mode {mode!r}, which fedstruct does not read; save it as 8-bit "
        "grey, 16-bit grey or RGB"
    )


def _stacked(files: Sequence[Path]) -> NDArray[np.float32]:
    """The decoded images ``(N, C, H, W)``; all must match the first file's shape."""
    first = _decoded_pixels(files[0])
    out = np.empty((len(files), *first.shape), dtype=np.float32)
    out[0] = first
    for i, file in enumerate(files[1:], start=1):
        pixels = _decoded_pixels(file)
        if pixels.shape != first.shape:
            raise DataError(
                f"{file} is (C, H, W) = {pixels.shape} but {files[0]} is {first.shape}; every "
                "image of a site needs one size and channel count, so resize or convert it"
            )
        out[i] = pixels
    return out


def read_image_folder(path: str | Path, *, name: str | None = None) -> ImageSite:
    """A site's images from ``SITE/CLASS/*.png|jpg|jpeg`` (one sub-folder per class).

    Each sub-folder's name is its class name. Folders and files are read in sorted
    name order, so the image order is deterministic. Entries whose names start with
    ``.`` are skipped; any other file that is not ``.png``, ``.jpg`` or ``.jpeg`` (any
    case), a file directly in ``SITE`` or a folder inside a class folder is an error,
    so nothing is silently left out. Pillow decodes the files; modes are converted as
    the module documentation says, and every image must have the first one's
    ``(C, H, W)``.

    Parameters
    ----------
    path
        The site folder.
    name
        The site's name; default the folder's name.

    Raises
    ------
    DataError
        If the folder does not exist, has no class sub-folders, holds a stray or
        non-image file, an empty class folder, a file that does not decode, or an image
        whose size or channel count differs from the first (naming both files).
    """
    site = Path(path).expanduser()
    if not site.is_dir():
        raise DataError(f"image site folder {site} does not exist; {_FOLDER_LAYOUT}")
    files: list[Path] = []
    labels: list[str] = []
    for class_folder in _class_folders(site):
        found = _image_files(class_folder)
        files += found
        labels += [class_folder.name] * len(found)
    images = _stacked(files)
    return ImageSite(name or site.resolve().name, images, np.array(labels, dtype=str))


def _npz_arrays(file: Path) -> tuple[NDArray[Any], NDArray[Any]]:
    """The ``images`` and ``labels`` arrays of an ``.npz`` (no pickles)."""
    try:
        archive = np.load(file, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        reason = "it looks like a pickle, which is never loaded" if "pickle" in str(err) else ""
        raise DataError(
            f"{file} cannot be read as an .npz archive ({reason or _one_line(err)}); {_NPZ_LAYOUT}"
        ) from err
    if not isinstance(archive, NpzFile):
        raise DataError(f"{file} holds one array, not an .npz archive; {_NPZ_LAYOUT}")
    with archive:
        for key in ("images", "labels"):
            if key not in archive.files:
                raise DataError(
                    f"{file} has no {key!r} array (it has {sorted(archive.files)}); {_NPZ_LAYOUT}"
                )
        try:
            return archive["images"], archive["labels"]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise DataError(
                f"{file}: its arrays cannot be read ({_one_line(err)}); save numeric images "
                "and integer or string labels (no object arrays)"
            ) from err


def _channels_first(file: Path, raw: NDArray[Any]) -> NDArray[Any]:
    """``(N, H, W)``, ``(N, C, H, W)`` or ``(N, H, W, C)`` as ``(N, C, H, W)``, C in (1, 3).

    When both axis 1 and axis 3 have length 1 or 3, axis 1 is taken as the channels
    (fedstruct's own layout).
    """
    if raw.ndim == 3:
        return raw[:, None]
    if raw.ndim == 4 and raw.shape[1] in (1, 3):
        return raw
    if raw.ndim == 4 and raw.shape[3] in (1, 3):
        return raw.transpose(0, 3, 1, 2)
    raise DataError(
        f"{file}: 'images' has shape {raw.shape}; expected (N, H, W) grey, or (N, C, H, W) "
        "or (N, H, W, C) with C = 1 or 3"
    )


def _npz_images(file: Path, raw: NDArray[Any]) -> NDArray[np.float32]:
    if raw.dtype != np.uint8 and raw.dtype.kind != "f":
        raise DataError(
            f"{file}: 'images' has dtype {raw.dtype}; save uint8 bytes 0..255 or floats in [0, 1]"
        )
    arranged = _channels_first(file, raw)
    if arranged.size == 0:
        raise DataError(f"{file} holds no images ('images' has shape {raw.shape})")
    if raw.dtype == np.uint8:
        return np.ascontiguousarray(unit_scale(arranged))
    lo, hi = float(arranged.min()), float(arranged.max())
    if not (lo >= 0.0 and hi <= 1.0):
        raise DataError(
            f"{file}: float 'images' must lie in [0, 1] (got min {lo}, max {hi}); scale them "
            "or save uint8 bytes 0..255"
        )
    return np.ascontiguousarray(arranged, dtype=np.float32)


def _npz_labels(file: Path, raw: NDArray[Any]) -> NDArray[np.str_]:
    """Class names: integers become their decimal names, bytes are decoded as UTF-8."""
    if raw.ndim != 1:
        raise DataError(f"{file}: 'labels' has shape {raw.shape}; save one label per image (1-D)")
    kind = raw.dtype.kind
    if kind in "iu":
        return raw.astype(str)
    if kind == "U":
        return raw
    if kind == "S":
        try:
            return np.char.decode(raw, "utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{file}: 'labels' are bytes that are not UTF-8 text") from err
    raise DataError(
        f"{file}: 'labels' has dtype {raw.dtype}; save integer labels or class names (strings)"
    )


def read_image_npz(path: str | Path, *, name: str | None = None) -> ImageSite:
    """A site's images from an ``.npz`` with arrays ``images`` and ``labels``.

    ``images`` is ``uint8`` (scaled by 1/255) or float in ``[0, 1]``, shaped
    ``(N, H, W)`` (grey), ``(N, C, H, W)`` or ``(N, H, W, C)`` with ``C`` 1 or 3. When
    both axis 1 and axis 3 have length 1 or 3 (e.g. ``(N, 3, 8, 3)``), axis 1 is the
    channels: store such channels-last images transposed to ``(N, C, H, W)``.
    ``labels`` is 1-D: integers become their decimal names (``3`` -> ``"3"``), strings
    are class names. The file is read without unpickling.

    Parameters
    ----------
    path
        The ``.npz`` file.
    name
        The site's name; default the file's stem.

    Raises
    ------
    DataError
        If the file does not exist or is not an ``.npz``, an array is missing, a dtype
        or shape is not one of the above, float values lie outside ``[0, 1]``, or the
        label and image counts differ (each naming the file).
    """
    file = Path(path).expanduser()
    require_regular_file(file, "image site file")
    if not file.is_file():
        raise DataError(
            f"image site file {file} does not exist; check the path to the site's .npz "
            "(arrays 'images' and 'labels')"
        )
    raw_images, raw_labels = _npz_arrays(file)
    images = _npz_images(file, raw_images)
    labels = _npz_labels(file, raw_labels)
    if len(labels) != len(images):
        raise DataError(
            f"{file} holds {len(images)} images but {len(labels)} labels; give one label per image"
        )
    return ImageSite(name or file.stem, images, labels)


def read_image_site(path: str | Path, *, name: str | None = None) -> ImageSite:
    """A site's images from a folder (:func:`read_image_folder`) or an ``.npz``
    (:func:`read_image_npz`).

    Raises
    ------
    DataError
        If ``path`` does not exist or is neither a folder nor an ``.npz`` file, and
        whatever the reader raises.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        return read_image_folder(target, name=name)
    if target.suffix.lower() == ".npz":
        return read_image_npz(target, name=name)
    if not target.exists():
        raise DataError(
            f"image site {target} does not exist; give a folder ({_FOLDER_LAYOUT}) or an .npz"
        )
    raise DataError(
        f"{target} is neither a folder of class sub-folders nor an .npz file; "
        f"{_FOLDER_LAYOUT}, or {_NPZ_LAYOUT}"
    )
