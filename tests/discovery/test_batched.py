"""Batched discrete tests and the Possible-D-SEP phase in worker processes: same results."""

from __future__ import annotations

import multiprocessing as mp
import sys
from functools import partial
from itertools import combinations

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery import pds
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.evidence import SERIAL_HEAD, Evidence
from fedstruct.discovery.fci import circle_marks, fci
from fedstruct.errors import ConfigError

FCI_MODULE = sys.modules[fci.__module__]  # the package exports the function as `fci`


@pytest.fixture(scope="module")
def child_rows():
    net = load_network("child")
    return net.sample(1000, seed=2), dict(net.cardinalities)


@pytest.mark.parametrize(
    ("statistic", "rule", "dof"),
    [("chi2", "none", "adjusted"), ("g2", "toolbox", "adjusted"), ("g2", "pcalg", "plain")],
)
def test_batched_tests_equal_single_tests(child_rows, statistic, rule, dof):
    rows, cards = child_rows
    test = make_ci_test(rows, statistic, cardinalities=cards, small_sample=rule, dof=dof)
    pool = list(range(2, 12))
    for size in (1, 2, 3):
        sets = list(combinations(pool, size))
        batch = test.compute_many(0, 1, sets, pool)
        assert batch is not None
        single = [test._compute(0, 1, s) for s in sets]
        assert [s for _, s in batch] == [s for _, s in single]  # same skipped tests
        np.testing.assert_allclose([p for p, _ in batch], [p for p, _ in single], 1e-9, 1e-12)
    pairs = list(combinations(range(test.n_variables), 2))
    batch = test.compute_unconditional(pairs)
    single = [test._compute(a, b, ()) for a, b in pairs]
    assert [s for _, s in batch] == [s for _, s in single]
    np.testing.assert_allclose([p for p, _ in batch], [p for p, _ in single], 1e-9, 1e-12)
    assert test.n_tests == 0  # computing in a batch neither caches nor counts


def _serial_search(evidence: Evidence, a: int, b: int, sets: list) -> tuple | None:
    for s in sets:
        indep, p = evidence.independent(a, b, s)
        if indep:
            evidence.separate(a, b, s, p)
            return s
    return None


def test_first_independent_records_what_the_serial_loop_records(child_rows):
    rows, cards = child_rows
    seen_late = seen_none = False
    for a, b in combinations(range(20), 2):
        if seen_late and seen_none:
            break
        pool = [v for v in range(20) if v not in (a, b)]
        sets = list(combinations(pool, 2))
        serial = Evidence(make_ci_test(rows, "chi2", cardinalities=cards), 0.05)
        found = _serial_search(serial, a, b, sets)
        late = found is not None and sets.index(found) > SERIAL_HEAD
        if not (late or found is None):
            continue
        seen_late, seen_none = seen_late or late, seen_none or found is None
        batched = Evidence(make_ci_test(rows, "chi2", cardinalities=cards), 0.05)
        assert batched.first_independent(a, b, sets, pool) == found
        assert list(batched.ci_test.cache) == list(serial.ci_test.cache)  # same tests, order
        np.testing.assert_allclose(
            list(batched.ci_test.cache.values()), list(serial.ci_test.cache.values()), 1e-9, 1e-12
        )
        assert batched.queries == serial.queries and batched.sepsets == serial.sepsets
        np.testing.assert_allclose(batched.max_pvalues(), serial.max_pvalues(), 1e-9, 1e-12)
    assert seen_late and seen_none  # both ends of the batched path were exercised


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_possible_dsep_in_two_processes_equals_one(child_rows, monkeypatch):
    rows, cards = child_rows
    monkeypatch.setattr(pds, "PARALLEL_MIN_TESTS", 0)  # use processes however small
    out = {}
    for workers in (1, 2):
        phase = partial(pds.remove_by_possible_dsep, workers=workers)
        monkeypatch.setattr(FCI_MODULE, "remove_by_possible_dsep", phase)
        test = make_ci_test(rows, "g2", cardinalities=cards)
        out[workers] = (fci(test, pds_depth=None), test)
    (one, test_one), (two, test_two) = out[1], out[2]
    assert one.tests_by_phase["possible_dsep"] > 1000
    assert one.graph == two.graph
    assert one.sepsets == two.sepsets
    assert one.tests_by_phase == two.tests_by_phase
    assert one.queries_by_phase == two.queries_by_phase
    assert list(test_one.cache.items()) == list(test_two.cache.items())
    assert test_one.n_cache_hits == test_two.n_cache_hits
    assert test_one.n_skipped == test_two.n_skipped
    np.testing.assert_array_equal(one.pvalues, two.pvalues)


def test_workers_must_be_positive(child_rows):
    rows, cards = child_rows
    evidence = Evidence(make_ci_test(rows, cardinalities=cards), 0.05)
    marks = circle_marks(~np.eye(evidence.ci_test.n_variables, dtype=bool))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="workers"):
            pds.remove_by_possible_dsep(evidence, marks, workers=bad)
    assert pds.available_workers() >= 1


@pytest.mark.parametrize(
    ("statistic", "rule", "dof"),
    [("chi2", "none", "adjusted"), ("g2", "toolbox", "adjusted"), ("g2", "pcalg", "plain")],
)
def test_level_one_centre_tables_equal_single_tests(child_rows, statistic, rule, dof):
    """Issue 51: level 1's tests around a centre, computed from one product per level of
    the centre (discovery/centre_tables.py), are the one-at-a-time tests: the same
    skipped tests and p-values to rounding."""
    rows, cards = child_rows
    centred = make_ci_test(rows, statistic, cardinalities=cards, small_sample=rule, dof=dof)
    single = make_ci_test(rows, statistic, cardinalities=cards, small_sample=rule, dof=dof)
    d = centred.n_variables
    neighbours = [[v for v in range(d) if v != x and (v + x) % 3] for x in range(d)]
    centred.prepare_level(1, neighbours)
    checked = 0
    for x in range(d):
        for y, z in combinations(neighbours[x], 2):
            for a, b in ((y, z), (z, y)):
                i, j = min(x, a), max(x, a)
                got = centred._compute(i, j, (b,))
                want = single._compute(i, j, (b,))
                assert got[1] == want[1]
                assert got[0] == pytest.approx(want[0], rel=1e-9, abs=1e-12)
                checked += 1
    assert checked > 1000 and centred._centres  # the centres answered
    centred.prepare_level(-1, ())
    assert not centred._centres  # dropped after the level


@pytest.mark.parametrize("network", ["alarm", "insurance"])
def test_a_search_with_centre_tables_is_the_search_without(network):
    rows = load_network(network).sample(3000, seed=1)
    with_centres = make_ci_test(rows, "g2")
    without = make_ci_test(rows, "g2")
    without.prepare_level = lambda level, neighbours: None  # type: ignore[method-assign]
    a, b = fci(with_centres, workers=1), fci(without, workers=1)
    assert np.array_equal(a.graph.marks, b.graph.marks) and a.sepsets == b.sepsets
    assert set(with_centres.cache) == set(without.cache)
    for key, p in without.cache.items():
        assert with_centres.cache[key] == pytest.approx(p, rel=1e-9, abs=1e-12)


def test_counts_on_a_torch_device_are_the_numpy_counts(child_rows):
    """``device=``: the batched products in torch (here torch's CPU, the same code a
    GPU runs) give the very same p-values and search as numpy."""
    rows, cards = child_rows
    plain = make_ci_test(rows, "g2", cardinalities=cards)
    torch_test = make_ci_test(rows, "g2", cardinalities=cards, device="cpu")
    pool = list(range(2, 14))
    for size in (1, 2):
        sets = list(combinations(pool, size))
        assert torch_test.compute_many(0, 1, sets, pool) == plain.compute_many(0, 1, sets, pool)
    pairs = list(combinations(range(plain.n_variables), 2))
    assert torch_test.compute_unconditional(pairs) == plain.compute_unconditional(pairs)
    assert torch_test._device_counts is not None  # the products ran in torch
    on_device = fci(torch_test, workers=1)
    on_cpu = fci(make_ci_test(rows, "g2", cardinalities=cards), workers=1)
    assert np.array_equal(on_device.graph.marks, on_cpu.graph.marks)
    assert on_device.ci_test.cache == on_cpu.ci_test.cache  # every p-value, bit for bit


def test_a_device_this_machine_lacks_is_one_line(child_rows, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows, cards = child_rows
    with pytest.raises(ConfigError, match="no CUDA GPU"):
        make_ci_test(rows, "g2", cardinalities=cards, device="cuda")


def test_a_test_on_a_device_is_never_forked(child_rows, monkeypatch):
    rows, cards = child_rows
    monkeypatch.setattr(pds, "PARALLEL_MIN_TESTS", 1)
    forked = []
    monkeypatch.setattr(pds, "_in_processes", lambda *a: forked.append(1) or iter(()))
    test = make_ci_test(rows, "g2", cardinalities=cards, device="cpu")
    assert not test.forks and make_ci_test(rows, "g2", cardinalities=cards).forks
    fci(test, workers=2)
    assert forked == []
