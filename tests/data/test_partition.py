"""Partitioners: coverage, disjointness, sizes, overlap, minimum counts, long tail, seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import OBSERVATIONAL
from fedstruct.data.networks import load_network
from fedstruct.data.partition import (
    balanced_sizes,
    horizontal,
    horizontal_interventions,
    label_skew,
    long_tail_counts,
    variable_subset_clients,
    variable_subsets,
    vertical_interventions,
)
from fedstruct.errors import PartitionError, SampleSizeError, UnknownVariableError


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


# --------------------------------------------------------- variable subsets
def check_split(split, n_clients: int, per_client: int) -> None:
    assert len(split.clients) == n_clients
    assert all(len(c) == per_client == len(set(c)) for c in split.clients)
    covered = set().union(*map(set, split.clients))
    assert covered == set(split.observed)
    assert not set(split.latent) & covered
    assert (split.overlap_matrix() >= 1).all()


def test_variable_subsets_fedcdnv_defaults_on_alarm() -> None:
    names = load_network("alarm").names
    split = variable_subsets(names, 6, overlap=0.85, latent=0.15, seed=0)
    # d = floor(37 * 0.85 + 1/2) = 31, d_k = floor(31 * 0.85 + 1/2) = 26.
    assert len(split.observed) == 31 and len(split.latent) == 6
    assert set(split.observed) | set(split.latent) == set(names)
    check_split(split, 6, 26)
    for c in split.clients:  # input order kept
        assert list(c) == sorted(c, key=names.index)
    again = variable_subsets(names, 6, overlap=0.85, latent=0.15, seed=0)
    assert again == split
    assert variable_subsets(names, 6, overlap=0.85, latent=0.15, seed=1) != split


def test_variable_subsets_sachs_nine_of_eleven_and_named_latents() -> None:
    names = load_network("sachs").names
    split = variable_subsets(names, 6, per_client=9, seed=3)
    assert split.latent == ()
    check_split(split, 6, 9)
    named = variable_subsets(names, 3, overlap=0.8, latent=["PKA", "Akt"], seed=3)
    assert set(named.latent) == {"Akt", "PKA"}
    assert list(named.latent) == sorted(named.latent, key=names.index)
    check_split(named, 3, 7)  # d = 9, d_k = floor(7.2 + 1/2) = 7


def test_variable_subsets_low_overlap_uses_the_construction() -> None:
    names = [f"x{i}" for i in range(20)]
    # 5 clients x 5 variables for 20: random draws almost never cover all 20.
    split = variable_subsets(names, 5, overlap=0.25, seed=0, max_attempts=20)
    check_split(split, 5, 5)
    # Only a hub works here: 4 clients x 4 of 13 (4 * 3 >= 12).
    hub = variable_subsets([f"v{i}" for i in range(13)], 4, per_client=4, seed=2)
    check_split(hub, 4, 4)


@pytest.mark.parametrize(
    ("n_vars", "n_clients", "per_client", "fragment"),
    [
        (10, 2, 3, "cannot cover all 10 observed variables"),
        (5, 3, 2, "every two clients share one"),
        (5, 2, 6, "must be between 1 and 5"),
    ],
)
def test_variable_subsets_impossible(n_vars, n_clients, per_client, fragment) -> None:
    with pytest.raises(PartitionError, match=fragment):
        variable_subsets(
            [f"v{i}" for i in range(n_vars)],
            n_clients,
            per_client=per_client,
            seed=0,
            max_attempts=20,
        )


def test_variable_subsets_bad_ratios() -> None:
    with pytest.raises(PartitionError, match="latent ratio"):
        variable_subsets(["a", "b"], 2, overlap=0.5, latent=1.0, seed=0)
    with pytest.raises(PartitionError, match="overlap must lie in"):
        variable_subsets(["a", "b"], 2, overlap=0.0, seed=0)
    with pytest.raises(UnknownVariableError, match="'z'"):
        variable_subsets(["a", "b"], 2, overlap=1.0, latent=["z"], seed=0)
    with pytest.raises(PartitionError, match="exactly one of overlap"):
        variable_subsets(["a", "b"], 2, overlap=1.0, per_client=2, seed=0)


def test_variable_subset_clients_sample_sizes_and_columns() -> None:
    net = load_network("alarm")
    split = variable_subsets(net.names, 6, overlap=0.85, latent=0.15, seed=0)
    clients = variable_subset_clients(net, split, seed=4)
    assert [c.variables for c in clients] == list(split.clients)
    sizes = [c.n_rows for c in clients]
    assert all(100 <= s <= 2000 for s in sizes) and len(set(sizes)) > 1
    again = variable_subset_clients(net, split, seed=4)
    assert all(a.rows.equals(b.rows) for a, b in zip(clients, again, strict=True))
    small = variable_subset_clients(net, split, seed=4, n_range=(50, 50))
    assert {c.n_rows for c in small} == {50}
    with pytest.raises(SampleSizeError, match="n_min <= n_max"):
        variable_subset_clients(net, split, seed=4, n_range=(60, 50))


# ------------------------------------------------- interventional splits
def test_vertical_interventions_disjoint_targets_sixteen_four() -> None:
    net = load_network("child")  # 20 variables, as FED-CD's 16-4 split
    clients = vertical_interventions(
        net, 2, n_observational=1000, n_per_intervention=30, seed=0, targets_per_client=(16, 4)
    )
    t1, t2 = (set(c.intervention_targets) for c in clients)
    assert (len(t1), len(t2)) == (16, 4)
    assert not t1 & t2 and t1 | t2 == set(net.names)
    for c in clients:
        regimes = c.regimes()
        assert (regimes == OBSERVATIONAL).sum() == 500
        assert c.n_rows == 500 + 30 * len(c.intervention_targets)
        for t in c.intervention_targets:
            rows = c.interventional(t)
            assert len(rows) == 30
            assert set(rows[t].unique()) <= set(range(net.cardinalities[t]))
    # Observational rows split without overlap: together the global sample.
    pooled = pd.concat([c.observational() for c in clients]).sort_values(list(net.names))
    full = net.sample(1000, seed=[0, 0]).sort_values(list(net.names))
    np.testing.assert_array_equal(pooled.to_numpy(), full.to_numpy())


def test_vertical_interventions_balanced_by_default_and_seeded() -> None:
    net = load_network("sachs")
    a = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=5)
    assert sorted(len(c.intervention_targets) for c in a) == [3, 4, 4]
    b = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=5)
    assert all(x.rows.equals(y.rows) for x, y in zip(a, b, strict=True))
    c = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=6)
    assert [x.intervention_targets for x in a] != [x.intervention_targets for x in c]


def test_vertical_interventions_uniform_target_and_value_target() -> None:
    net = load_network("asia")
    [client] = vertical_interventions(
        net, 1, n_observational=0, n_per_intervention=4000, seed=1, targets=["lung"]
    )
    assert client.n_rows == 4000 and client.intervention_targets == ("lung",)
    share = client.rows["lung"].mean()
    assert 0.45 < share < 0.55  # uniform, while observationally P(lung = no) = 0.945
    [fixed] = vertical_interventions(
        net, 1, n_observational=10, n_per_intervention=50, seed=1, targets=["lung"], value="yes"
    )
    assert (fixed.interventional("lung")["lung"] == 0).all()


def test_vertical_interventions_errors() -> None:
    net = load_network("asia")
    with pytest.raises(PartitionError, match="summing to the 8 targets"):
        vertical_interventions(
            net, 2, n_observational=10, n_per_intervention=5, seed=0, targets_per_client=(4, 3)
        )
    with pytest.raises(UnknownVariableError, match="'lungs'"):
        vertical_interventions(
            net, 2, n_observational=10, n_per_intervention=5, seed=0, targets=["lungs"]
        )
    with pytest.raises(SampleSizeError, match="n_per_intervention"):
        vertical_interventions(net, 2, n_observational=10, n_per_intervention=0, seed=0)
    with pytest.raises(PartitionError, match="1 observational rows cannot be shared by 2"):
        vertical_interventions(net, 2, n_observational=1, n_per_intervention=5, seed=0)
    with pytest.raises(PartitionError, match="client 'client-2' would get no rows"):
        vertical_interventions(
            net, 2, n_observational=0, n_per_intervention=5, seed=0, targets_per_client=(8, 0)
        )


def test_horizontal_interventions_share_every_target() -> None:
    net = load_network("sachs")
    clients = horizontal_interventions(net, 3, n_observational=301, n_per_intervention=20, seed=2)
    assert [int((c.regimes() == OBSERVATIONAL).sum()) for c in clients] == [101, 100, 100]
    for c in clients:
        assert set(c.intervention_targets) == set(net.names)
    for t in net.names:
        assert sorted(len(c.interventional(t)) for c in clients) == [6, 7, 7]
    # Same global data set as the vertical split with the same seed.
    vertical = vertical_interventions(net, 2, n_observational=301, n_per_intervention=20, seed=2)
    owner = next(c for c in vertical if "Raf" in c.intervention_targets)
    pooled = pd.concat([c.interventional("Raf") for c in clients])
    cols = list(net.names)
    mine = owner.interventional("Raf")
    np.testing.assert_array_equal(
        pooled.sort_values(cols).to_numpy(), mine.sort_values(cols).to_numpy()
    )
    with pytest.raises(PartitionError, match="2 rows per target cannot give each of 3"):
        horizontal_interventions(net, 3, n_observational=30, n_per_intervention=2, seed=0)


# ----------------------------------------------------------------- label skew
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
