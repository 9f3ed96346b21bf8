"""A FedCDnv run shows each site's adjacency search when asked to, and prints nothing
otherwise (the search's own progress lines: tests/discovery/test_search_progress.py)."""

from __future__ import annotations

from fedstruct.data import load_network
from fedstruct.data.client import ClientData
from fedstruct.methods.fedcdnv import FedCDnv, variable_subset_clients, variable_subsets


def asia(n=500, seed=0):
    return load_network("asia").sample(n, seed=seed)


def test_a_run_that_shows_progress_shows_each_sites_search(capsys):
    net = load_network("asia")
    split = variable_subsets(net.names, 2, seed=1, overlap=0.8)
    clients = variable_subset_clients(net, split, seed=1, n_range=(300, 400))
    FedCDnv().fit(clients, progress=True)
    err = capsys.readouterr().err
    for client in clients:
        assert f"{client.name}: FCI adjacency search, depth 0" in err
    assert "fedcdnv: round 1/2" in err


def test_a_quiet_run_prints_nothing(capsys):
    frame = asia(300)
    clients = [ClientData(f"s{k}", frame.iloc[k::2].reset_index(drop=True)) for k in range(2)]
    FedCDnv().fit(clients)
    assert capsys.readouterr().err == ""
