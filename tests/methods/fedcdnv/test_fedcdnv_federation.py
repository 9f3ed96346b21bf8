"""FedCDnv's federations: variable subsets with latent variables (§4.1, App. D.1)."""

from __future__ import annotations

import pytest

from fedstruct.data.networks import load_network
from fedstruct.errors import PartitionError, SampleSizeError, UnknownVariableError
from fedstruct.methods.fedcdnv.sources import variable_subset_clients, variable_subsets


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
