"""Partitioners: coverage, disjointness, sizes, overlap, minimum counts, long tail, seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import OBSERVATIONAL
from fedstruct.data.partition import balanced_sizes, horizontal, label_skew, long_tail_counts
from fedstruct.errors import PartitionError


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"x": np.arange(n), "y": np.arange(n) % 3})


# --------------------------------------------------------------- horizontal
def test_horizontal_covers_every_row_once_in_balanced_sizes() -> None:
    clients = horizontal(frame(103), 4, seed=0)
    assert [c.name for c in clients] == ["client-1", "client-2", "client-3", "client-4"]
    assert [c.n_rows for c in clients] == [26, 26, 26, 25]
    values = np.concatenate([c.rows["x"].to_numpy() for c in clients])
    assert sorted(values.tolist()) == list(range(103))
    # Index labels are kept and rows stay aligned with them.
    for c in clients:
        assert np.array_equal(c.rows.index.to_numpy(), c.rows["x"].to_numpy())
    # Shuffled, not consecutive blocks.
    assert clients[0].rows["x"].max() > 30


def test_horizontal_sizes_proportions_and_seed() -> None:
    sized = horizontal(frame(10), 3, seed=1, sizes=[5, 3, 2])
    assert [c.n_rows for c in sized] == [5, 3, 2]
    prop = horizontal(frame(10), 3, seed=1, proportions=[1, 1, 1])
    assert [c.n_rows for c in prop] == [4, 3, 3]  # largest remainder, ties to the first
    prop = horizontal(frame(100), 3, seed=1, proportions=[0.5, 0.3, 0.2])
    assert [c.n_rows for c in prop] == [50, 30, 20]
    a = horizontal(frame(50), 3, seed=7)
    b = horizontal(frame(50), 3, seed=7)
    c = horizontal(frame(50), 3, seed=8)
    assert all(x.rows.equals(y.rows) for x, y in zip(a, b, strict=True))
    assert not all(x.rows.equals(y.rows) for x, y in zip(a, c, strict=True))


def test_horizontal_keeps_intervention_codes_with_their_rows() -> None:
    rows = frame(30)
    codes = np.where(rows["x"] % 2 == 0, OBSERVATIONAL, 1)
    for c in horizontal(rows, 3, seed=2, intervention=codes, supervised=["y"]):
        assert np.array_equal(c.regimes(), np.where(c.rows["x"] % 2 == 0, -1, 1))
        assert c.supervised == ("y",)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"sizes": [5, 3, 1]}, "sizes sum to 9 but there are 10 rows"),
        ({"sizes": [10, 0, 0]}, "client 2 would get 0 rows"),
        ({"proportions": [1, -1, 1]}, "positive proportions"),
        ({"sizes": [5, 5], "proportions": [1, 1]}, "either sizes or proportions"),
    ],
)
def test_horizontal_errors(kwargs: dict, fragment: str) -> None:
    n_clients = 2 if "proportions" in kwargs and "sizes" in kwargs else 3
    with pytest.raises(PartitionError, match=fragment):
        horizontal(frame(10), n_clients, seed=0, **kwargs)


def test_horizontal_more_clients_than_rows() -> None:
    with pytest.raises(PartitionError, match="cannot give 5 clients at least one of 3 rows"):
        horizontal(frame(3), 5, seed=0)
    with pytest.raises(PartitionError, match="n_clients must be a positive integer"):
        horizontal(frame(3), 0, seed=0)


def test_long_tail_counts_follow_the_formula() -> None:
    # floor(100 * 0.1 ** (c / 9)), worked out by hand.
    assert long_tail_counts(100, 10, 10.0) == [100, 77, 59, 46, 35, 27, 21, 16, 12, 10]
    assert long_tail_counts(500, 3, 100.0) == [500, 50, 5]
    assert long_tail_counts(40, 4, 1.0) == [40, 40, 40, 40]
    assert long_tail_counts(7, 1, 50.0) == [7]


def test_label_skew_long_tail_and_dirichlet_invariants() -> None:
    labels = np.repeat(np.arange(10), 120)[np.random.default_rng(0).permutation(1200)]
    split = label_skew(
        labels, 5, alpha=0.5, imbalance_factor=10, n_max=100, seed=3, min_per_client=20
    )
    expected = [100, 77, 59, 46, 35, 27, 21, 16, 12, 10]
    assert split.class_counts.tolist() == expected
    assert np.bincount(labels[split.kept], minlength=10).tolist() == expected
    joined = np.concatenate(split.clients)
    assert np.array_equal(np.sort(joined), split.kept)  # disjoint and covering
    assert len(np.unique(joined)) == joined.size
    assert min(c.size for c in split.clients) >= 20
    counts = split.client_class_counts(labels)
    assert counts.shape == (5, 10) and counts.sum(axis=0).tolist() == expected
    again = label_skew(
        labels, 5, alpha=0.5, imbalance_factor=10, n_max=100, seed=3, min_per_client=20
    )
    assert all(np.array_equal(a, b) for a, b in zip(split.clients, again.clients, strict=True))


def test_label_skew_small_alpha_is_skewed_and_large_alpha_is_even() -> None:
    labels = np.repeat(np.arange(4), 500)
    skewed = label_skew(labels, 4, alpha=0.05, seed=1, min_per_client=1)
    even = label_skew(labels, 4, alpha=1000.0, seed=1, min_per_client=1)
    share = lambda s: (s.client_class_counts(labels) / 500).max(axis=0)  # noqa: E731
    assert share(skewed).mean() > 0.8
    assert share(even).max() < 0.35
    assert skewed.kept.size == 2000  # no long tail: every sample kept
    assert skewed.class_counts.tolist() == [500] * 4


def test_label_skew_default_n_max_is_the_smallest_class() -> None:
    labels = np.array([0] * 50 + [1] * 30 + [2] * 80)
    split = label_skew(labels, 2, alpha=1.0, imbalance_factor=2.0, seed=0, min_per_client=1)
    assert split.class_counts.tolist() == [30, 21, 15]  # 30 * 2 ** (-c / 2)
    balanced = label_skew(labels, 2, alpha=1.0, imbalance_factor=1.0, seed=0, min_per_client=1)
    assert balanced.class_counts.tolist() == [30, 30, 30]
    whole = label_skew(labels, 2, alpha=1.0, seed=0, min_per_client=1)
    assert whole.class_counts.tolist() == [50, 30, 80] and whole.kept.size == 160


def test_label_skew_errors() -> None:
    labels = np.repeat(np.arange(3), 20)
    with pytest.raises(PartitionError, match="class 0 would keep 30 samples but has 20"):
        label_skew(labels, 2, alpha=1.0, imbalance_factor=1.0, n_max=30, seed=0)
    with pytest.raises(PartitionError, match="give imbalance_factor too"):
        label_skew(labels, 2, alpha=1.0, n_max=10, seed=0)
    with pytest.raises(PartitionError, match="raise alpha, lower min_per_client"):
        label_skew(labels, 3, alpha=0.01, seed=0, min_per_client=15, max_attempts=5)
    with pytest.raises(PartitionError, match="cannot give 4 clients 16 each"):
        label_skew(labels, 4, alpha=1.0, seed=0, min_per_client=16)
    with pytest.raises(PartitionError, match="imbalance_factor must be >= 1"):
        label_skew(labels, 2, alpha=1.0, imbalance_factor=0.5, seed=0)


def test_balanced_sizes() -> None:
    assert balanced_sizes(10, 4) == [3, 3, 2, 2]
    assert sum(balanced_sizes(1234, 7)) == 1234


def test_per_client_dirichlet_gives_even_sizes_and_skewed_classes():
    labels = np.repeat(np.arange(10), [100, 80, 60, 50, 40, 30, 20, 15, 10, 5])
    split = label_skew(labels, 40, alpha=0.1, seed=0, min_per_client=1, scheme="client")
    sizes = sorted(len(c) for c in split.clients)
    assert sizes[0] == 10 and sizes[-1] == 11  # 410 samples over 40 clients
    everything = np.concatenate(split.clients)
    assert np.array_equal(np.sort(everything), np.arange(410))  # each sample once
    counts = split.client_class_counts(labels)
    assert counts.sum(axis=0).tolist() == [100, 80, 60, 50, 40, 30, 20, 15, 10, 5]
    assert np.mean(counts.max(axis=1) / counts.sum(axis=1)) > 0.8  # Dir(0.1): one class dominates
    iid = label_skew(labels, 40, alpha=1000.0, seed=0, min_per_client=1, scheme="client")
    assert np.mean(iid.client_class_counts(labels).max(axis=1) / 10.25) < 0.5
    with pytest.raises(PartitionError, match="unknown scheme 'rows'"):
        label_skew(labels, 4, alpha=1.0, seed=0, scheme="rows")


def test_horizontal_applies_min_per_client() -> None:
    assert [c.n_rows for c in horizontal(frame(40), 4, seed=0, min_per_client=10)] == [10] * 4
    with pytest.raises(
        PartitionError,
        match=r"client 'client-4' would get 9 of the 39 rows, fewer than min_per_client=10",
    ):
        horizontal(frame(39), 4, seed=0, min_per_client=10)


def test_fedavg_iid_split_applies_min_per_client() -> None:
    from fedstruct.methods.fedavg.settings import FedAvgRun
    from fedstruct.methods.fedavg.sources import NetworkTask

    fine = FedAvgRun(clients=4, samples=80, min_per_client=20)
    assert [c.n_rows for c in NetworkTask(fine).clients()] == [20] * 4
    with pytest.raises(PartitionError, match="fewer than min_per_client=21"):
        NetworkTask(FedAvgRun(clients=4, samples=80, min_per_client=21)).clients()
