"""The adjacency search on a wide table shows signs of life: what it will cost, said
before it starts, then its progress (pairs done at each conditioning-set size) as
plain lines when stderr is not a terminal. A FedCDnv run's progress is tested in
tests/methods/fedcdnv/test_fit_progress.py."""

from __future__ import annotations

import re

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery import fci, make_ci_test
from fedstruct.discovery import skeleton as skeleton_module
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.skeleton import adjacency_search


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
