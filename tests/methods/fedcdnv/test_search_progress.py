"""FedCDnv on a wide table shows signs of life: what the adjacency search will cost,
said before it starts, then its progress (pairs done at each conditioning-set size)
as plain lines when stderr is not a terminal."""

from __future__ import annotations

import re

import numpy as np

from fedstruct.data import load_network
from fedstruct.data.client import ClientData
from fedstruct.experiments.fedcdnv import variable_subset_clients, variable_subsets
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedcdnv.local import fci, make_ci_test
from fedstruct.methods.fedcdnv.local import skeleton as skeleton_module
from fedstruct.methods.fedcdnv.local.evidence import Evidence
from fedstruct.methods.fedcdnv.local.skeleton import adjacency_search


def asia(n=500, seed=0):
    return load_network("asia").sample(n, seed=seed)


def test_the_search_reports_pairs_done_per_depth_and_finds_the_same_skeleton(capsys):
    data = asia()
    silent = adjacency_search(Evidence(make_ci_test(data, "g2"), 0.05))
    assert capsys.readouterr().err == ""
    shown = adjacency_search(Evidence(make_ci_test(data, "g2"), 0.05), progress="site-1")
    np.testing.assert_array_equal(shown, silent)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("site-1, depth 0: pairs ")  # a sign of life at once
    last = {}  # depth -> (done, total) of its last line
    for line in lines:
        found = re.fullmatch(r"site-1, depth (\d+): pairs (\d+)/(\d+) · \d+:\d\d:\d\d elapsed",
                             line)  # fmt: skip
        assert found, line
        depth, done, total = map(int, found.groups())
        last[depth] = (done, total)
    assert last[0] == (28, 28)  # 8 variables: 28 pairs given the empty set
    assert sorted(last) == list(range(len(last))) and len(last) >= 2
    assert all(done == total for done, total in last.values())


def test_a_wide_table_says_what_it_will_cost_before_the_search(capsys, monkeypatch):
    monkeypatch.setattr(skeleton_module, "WIDE", 8)
    adjacency_search(Evidence(make_ci_test(asia(), "g2"), 0.05), depth=1, progress="site-1")
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("site-1: 8 variables, 500 rows: 28 pairs to test given the empty set")
    assert "(conditioning sets: at most 1)" in first and "--set depth=1" in first


def test_a_narrow_table_starts_without_a_cost_message(capsys):
    adjacency_search(Evidence(make_ci_test(asia(), "g2"), 0.05), progress="site-1")
    assert "pairs to test given the empty set" not in capsys.readouterr().err


def test_fci_passes_its_progress_label_on(capsys):
    fci(asia(), progress="hospital-a: FCI adjacency search")
    assert "hospital-a: FCI adjacency search, depth 0: pairs 28/28" in capsys.readouterr().err


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
