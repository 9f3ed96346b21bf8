"""CAFE's federation: long-tailed images split over clients by a Dirichlet (§VI-A)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.datasets.images import load_digits
from fedstruct.data.images import LABEL, ImageSet, from_rows
from fedstruct.data.partition import long_tail_counts
from fedstruct.errors import PartitionError
from fedstruct.methods.cafe.sources import image_clients


@pytest.fixture(scope="module")
def digits() -> ImageSet:
    return load_digits()


def indexed_set(n_per_class: tuple[int, ...]) -> ImageSet:
    """Image ``i`` holds ``i / N`` in every pixel, so rows reveal which image they are."""
    labels = np.repeat(np.arange(len(n_per_class)), n_per_class).astype(np.int64)
    n = labels.size
    images = np.broadcast_to(
        (np.arange(n) / n).astype(np.float32)[:, None, None, None], (n, 1, 2, 2)
    )
    classes = tuple(f"k{c}" for c in range(len(n_per_class)))
    return ImageSet("indexed", images.copy(), labels, images[:3].copy(), labels[:3], classes)


def test_image_clients_partition_the_long_tail(caplog: pytest.LogCaptureFixture) -> None:
    s = indexed_set((60, 50, 70, 40))
    caplog.set_level(logging.INFO, logger="fedstruct.methods.cafe.sources")
    fed = image_clients(s, 3, alpha=0.5, imbalance_factor=4, min_per_client=5, seed=2)
    assert [c.name for c in fed.clients] == ["client-1", "client-2", "client-3"]
    # n_max = smallest class (40); counts 40, 40*4^(-1/3), 40*4^(-2/3), 10.
    assert fed.split.class_counts.tolist() == long_tail_counts(40, 4, 4) == [40, 25, 15, 10]
    n = len(s.train_labels)
    held = []
    for client, idx in zip(fed.clients, fed.split.clients, strict=True):
        assert client.supervised == (LABEL,)
        x, y = from_rows(client.rows, s.shape)
        which = np.rint(x[:, 0, 0, 0].astype(np.float64) * n).astype(int)
        assert sorted(which.tolist()) == idx.tolist()
        assert np.array_equal(y, s.train_labels[which])
        held.append(which)
    everything = np.concatenate(held)
    assert len(set(everything.tolist())) == everything.size  # pairwise disjoint
    assert sorted(everything.tolist()) == fed.split.kept.tolist()
    counts = np.array([np.bincount(c.rows[LABEL], minlength=4) for c in fed.clients])
    assert np.array_equal(counts, fed.split.client_class_counts(s.train_labels))
    assert counts.sum(axis=0).tolist() == [40, 25, 15, 10]
    assert fed.shape == (1, 2, 2) and fed.n_classes == 4 and fed.classes == s.classes
    assert fed.test[LABEL].tolist() == [0, 0, 0] and len(fed.test.columns) == 5
    assert fed.split.attempts == 1 and not caplog.records


def test_image_clients_logs_redraws(digits: ImageSet, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="fedstruct.methods.cafe.sources")
    fed = image_clients(digits, 10, alpha=0.1, min_per_client=10, seed=1, scheme="class")
    assert fed.split.attempts == 2
    assert [r.getMessage() for r in caplog.records] == [
        "split redrawn 1 times so every client holds >= 10 samples"
    ]
    assert min(c.n_rows for c in fed.clients) >= 10
    assert sum(c.n_rows for c in fed.clients) == 1497  # no long tail: every training image
    assert isinstance(fed.test, pd.DataFrame) and len(fed.test) == 300
    with pytest.raises(PartitionError, match="no Dirichlet"):
        image_clients(digits, 10, alpha=0.01, min_per_client=140, seed=0, scheme="class")
