"""Images as a data set type and as client rows.

Images are ``float32`` arrays ``(N, C, H, W)`` scaled to ``[0, 1]``; labels are
``int64`` class codes ``0..K-1``. :class:`ImageSet` holds a data set with its own
train/test split. A client's data is a :class:`~fedstruct.data.ClientData` whose rows
are one ``float32`` column per pixel (:func:`pixel_columns`, channel-major flatten
order) plus the ``int64`` column :data:`LABEL` (:func:`to_rows`, :func:`from_rows`).
Readers of standard image files live in :mod:`fedstruct.data.datasets.images`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import DataError, UnknownVariableError

__all__ = ["LABEL", "ImageSet", "from_rows", "pixel_columns", "to_rows", "unit_scale"]

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
            images = _checked_images(self.name, part, getattr(self, f"{part}_images"))
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


def _checked_images(name: str, part: str, images: object) -> NDArray[np.float32]:
    """A read-only view of valid ``float32 (N, C, H, W)`` images in ``[0, 1]``."""
    if not isinstance(images, np.ndarray) or images.dtype != np.float32 or images.ndim != 4:
        got = f"{images.dtype} {images.shape}" if isinstance(images, np.ndarray) else type(images)
        raise DataError(
            f"image set {name!r}: {part}_images must be a float32 array (N, C, H, W), got {got}"
        )
    if len(images) == 0 or images.size == 0:
        raise DataError(f"image set {name!r}: {part}_images is empty, shape {images.shape}")
    lo, hi = float(images.min()), float(images.max())
    if not (lo >= 0.0 and hi <= 1.0):
        raise DataError(
            f"image set {name!r}: {part}_images must lie in [0, 1] (got min {lo}, max {hi}); "
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
