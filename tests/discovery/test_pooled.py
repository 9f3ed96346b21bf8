"""Pooled discovery: a search on sites' summed statistics is the search on their rows pooled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import load_network
from fedstruct.data.gaussian import load_gaussian_network
from fedstruct.discovery import fci, make_ci_test, pc, rfci
from fedstruct.discovery.pooled import PooledSites, PooledTest, search_step
from fedstruct.discovery.statistics import Frame, Plan, SiteTable, site_statistics
from fedstruct.methods.fedfci.sources import mixed_model


def split(rows: pd.DataFrame, k: int) -> list[pd.DataFrame]:
    parts = np.array_split(np.arange(len(rows)), k)
    return [rows.iloc[p].reset_index(drop=True) for p in parts]


def with_holes(rows: pd.DataFrame, share: float, seed: int = 1) -> pd.DataFrame:
    """``share`` of the entries missing at random (NaN, or -1 in an integer column)."""
    rng = np.random.default_rng(seed)
    out = rows.copy()
    for c in out.columns:
        hole = rng.random(len(out)) < share
        out.loc[hole, c] = np.nan if out[c].dtype.kind == "f" else -1
    return out


def frame_of(rows: pd.DataFrame, discrete: dict[str, bool]) -> Frame:
    """The frame the margins exchange builds: levels, pooled means and deviations."""
    names = tuple(rows.columns)
    cards, centre, scale = [], [], []
    for c in names:
        values = rows[c].to_numpy(dtype=float)
        values = values[~np.isnan(values) & (values != -1 if discrete[c] else True)]
        cards.append(int(values.max()) + 1 if discrete[c] else 1)
        centre.append(0.0 if discrete[c] else float(values.mean()))
        scale.append(1.0 if discrete[c] else float(values.std()))
    return Frame(
        names, tuple(discrete[c] for c in names), tuple(cards), tuple(centre), tuple(scale)
    )


def pooled_run(
    sites,
    frame,
    test,
    learner,
    measured=None,
    max_batch_entries=None,
    pair_window="default",
    batches=None,
    **kwargs,
):
    """The search on a PooledTest, each batch's statistics summed over ``sites``
    (each batch's noted tests appended to ``batches`` when a list is given)."""
    k = len(sites)
    if measured is None:
        measured = np.array([[c in s.columns for c in frame.names] for s in sites])
    complete = measured.all(axis=0) & np.array(
        [
            all(not _missing(s[c], frame.discrete[v]).any() for s in sites if c in s.columns)
            for v, c in enumerate(frame.names)
        ]
    )
    pooled = PooledTest(
        frame, PooledSites(measured, np.array([len(s) for s in sites]), complete), test
    )
    if max_batch_entries is not None:
        pooled.max_batch_entries = max_batch_entries
    if pair_window != "default":
        pooled.ask_window = pair_window
    tables = [SiteTable(s, frame, 1) for s in sites]
    exchanges = 0
    while True:
        step = search_step(lambda t: learner(t, **kwargs), pooled)
        if not isinstance(step, Plan):
            return step, pooled, exchanges
        exchanges += 1
        if batches is not None:
            batches.append(pooled.pending_tests())
        parts = [site_statistics(t, step) for t in tables]
        pooled.absorb_statistics(step, sum(p[0] for p in parts), sum(p[1] for p in parts))
        assert exchanges <= 500 * k


def _missing(column: pd.Series, discrete: bool) -> np.ndarray:
    values = column.to_numpy(dtype=float)
    return np.isnan(values) | ((values == -1) if column.dtype.kind in "iu" else False)


def assert_same_search(pooled_result, local_result) -> None:
    assert np.array_equal(pooled_result.graph.marks, local_result.graph.marks)
    assert pooled_result.sepsets == local_result.sepsets
    a = np.nan_to_num(pooled_result.pvalues, nan=-1.0)
    b = np.nan_to_num(local_result.pvalues, nan=-1.0)
    assert np.abs(a - b).max() < 1e-9


@pytest.mark.parametrize("holes", [0.0, 0.1])
@pytest.mark.parametrize("learner", [fci, rfci, pc])
def test_g2_on_pooled_statistics_is_the_pooled_search(learner, holes) -> None:
    rows = load_network("alarm").sample(1500, seed=3)
    rows = with_holes(rows, holes) if holes else rows
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    extra = {"workers": 1} if learner is fci else {}
    found, pooled, exchanges = pooled_run(split(rows, 5), frame, "g2", learner, **extra)
    local = learner(make_ci_test(rows, "g2", cardinalities=frame.cards), **extra)
    assert_same_search(found, local)
    # every test of a level in one exchange: a few per level and phase, not per test
    assert exchanges <= 12 < pooled.n_tests
    for key, p in local.ci_test.cache.items():
        assert abs(pooled.cache[key] - p) < 1e-9


@pytest.mark.parametrize("holes", [0.0, 0.1])
def test_fisher_z_reads_one_moment_matrix_without_holes(holes) -> None:
    rows = load_gaussian_network("ecoli70").sample(2000, seed=0)
    rows = with_holes(rows, holes) if holes else rows
    frame = frame_of(rows, dict.fromkeys(rows.columns, False))
    found, _, exchanges = pooled_run(split(rows, 4), frame, "fisherz", fci, workers=1)
    assert_same_search(found, fci(make_ci_test(rows, "fisherz"), workers=1))
    if not holes:
        assert exchanges == 1  # every site measures every variable: one moment matrix


def mixed_rows(n: int, seed: int = 0, d: int = 10) -> tuple[pd.DataFrame, dict[str, str]]:
    rows = mixed_model(d, seed).sample(n, seed=1)
    rows = rows.frame if hasattr(rows, "frame") else rows
    return rows, {c: "continuous" if rows[c].dtype.kind == "f" else "categorical" for c in rows}


@pytest.mark.parametrize("holes", [0.0, 0.1])
@pytest.mark.parametrize("test", ["dg", "cg"])
def test_mixed_tests_on_pooled_statistics(test, holes) -> None:
    rows, kinds = mixed_rows(2000)
    rows = with_holes(rows, holes) if holes else rows
    frame = frame_of(rows, {c: k == "categorical" for c, k in kinds.items()})
    found, _, _ = pooled_run(split(rows, 4), frame, test, fci, workers=1)
    assert_same_search(found, fci(make_ci_test(rows, test, kinds=kinds), workers=1))


def test_a_variable_a_site_lacks_is_a_block_of_missing_values() -> None:
    """Sites measuring different variables: the pooled test is the test on the
    concatenated table, each site's unmeasured columns missing there."""
    rows = load_network("asia").sample(4000, seed=0)
    parts = split(rows, 4)
    parts[0] = parts[0].drop(columns=["smoke"])
    parts[1] = parts[1].drop(columns=["asia", "tub"])
    concatenated = pd.concat(parts, ignore_index=True).fillna(-1).astype(np.int64)
    concatenated = concatenated[list(rows.columns)]
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    found, pooled, _ = pooled_run(parts, frame, "g2", fci, workers=1)
    local = fci(make_ci_test(concatenated, "g2", cardinalities=frame.cards), workers=1)
    assert_same_search(found, local)
    assert pooled.undecided_pairs() == []  # every pair is measured together by 2 sites


def test_a_pair_one_site_measures_is_undecided_and_never_asked() -> None:
    rows = load_network("asia").sample(2000, seed=0)
    parts = split(rows, 3)
    parts[0] = parts[0].drop(columns=["asia"])
    parts[1] = parts[1].drop(columns=["asia"])  # asia: only site 3
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    found, pooled, _ = pooled_run(parts, frame, "g2", fci, workers=1)
    a = frame.names.index("asia")
    assert {p for p in pooled.undecided_pairs()} == {
        (min(a, v), max(a, v)) for v in range(8) if v != a
    }
    assert not any(a in (i, j, *z) for i, j, z in pooled.cache if not pooled.is_skipped(i, j, z))
    # an undecided pair is never searched (its subsets used to be settled one by one)
    assert not any(a in (i, j) and len(z) > 0 for i, j, z in pooled.cache)
    assert all(found.graph.is_adjacent("asia", v) for v in rows.columns if v != "asia")


def test_a_level_too_large_for_one_batch_takes_several_and_finds_the_same_graph() -> None:
    rows = load_network("asia").sample(2000, seed=5)
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    whole, _, one = pooled_run(split(rows, 3), frame, "g2", fci, workers=1)
    capped, _, many = pooled_run(split(rows, 3), frame, "g2", fci, workers=1, max_batch_entries=64)
    assert np.array_equal(capped.graph.marks, whole.graph.marks)
    assert capped.sepsets == whole.sepsets
    assert many > one  # the levels were asked in several batches of at most 64 counts


@pytest.mark.parametrize("learner", [fci, pc])
def test_a_pair_asks_its_next_sets_in_a_window_that_doubles(learner) -> None:
    """With a pair window, a batch holds each pair's next few sets (the window, then as
    many as are computed), not every set of the level; the search is the same."""
    rows = load_network("alarm").sample(1500, seed=3)
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    extra = {"workers": 1} if learner is fci else {}
    whole, whole_test, one = pooled_run(
        split(rows, 4), frame, "g2", learner, pair_window=None, **extra
    )
    batches: list = []
    windowed, test, many = pooled_run(
        split(rows, 4), frame, "g2", learner, pair_window=2, batches=batches, **extra
    )
    assert_same_search(windowed, whole)
    assert_same_search(
        windowed, learner(make_ci_test(rows, "g2", cardinalities=frame.cards), **extra)
    )
    assert many > one and test.n_tests < whole_test.n_tests  # more exchanges, fewer tests
    computed: dict[tuple[int, int, int], int] = {}  # per pair and set size: sets computed
    for batch in batches:
        asked: dict[tuple[int, int, int], int] = {}
        for i, j, z in batch:
            asked[(i, j, len(z))] = asked.get((i, j, len(z)), 0) + 1
        for step, n in asked.items():
            assert n <= max(2, computed.get(step, 0)), (step, n)
            computed[step] = computed.get(step, 0) + n


def test_sets_the_small_sample_rule_cannot_perform_are_never_asked() -> None:
    """G² under the "dependent" toolbox rule: a set too large for the pair's rows is
    skipped without being asked or cached, as in the one-process search."""
    rows = load_network("alarm").sample(400, seed=2)
    frame = frame_of(rows, dict.fromkeys(rows.columns, True))
    found, pooled, _ = pooled_run(split(rows, 4), frame, "g2", fci, workers=1)
    local = fci(make_ci_test(rows, "g2", cardinalities=frame.cards), workers=1)
    assert_same_search(found, local)
    d = len(frame.names)
    for i, j, z in pooled.cache:
        others = [v for v in range(d) if v not in (i, j)]
        assert len(z) <= pooled.max_testable_size(i, j, others), (i, j, z)
    assert max(len(z) for _, _, z in pooled.cache) >= 1


def test_a_batch_takes_at_most_its_megabytes_over_all_sites() -> None:
    from fedstruct.discovery.pooled import MAX_SITE_ENTRIES, batch_entries

    assert batch_entries(512, 10) == 512 * 2**20 // 80  # 10 replies of 8-byte entries
    assert batch_entries(512, 100) * 8 * 100 <= 512 * 2**20
    assert batch_entries(512, 2) == MAX_SITE_ENTRIES  # never more than this a site
