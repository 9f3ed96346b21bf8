"""The conditional-Gaussian test (``"cg"``): closed forms, sparse cells, missing values,
calibration under true independences, recovery of a known mixed DAG, errors."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import chdtrc

from fedstruct.discovery import ConditionalGaussianTest, OracleTest, make_ci_test, pc
from fedstruct.discovery.fisherz import partial_correlation
from fedstruct.errors import ConfigError, DataError
from tests.discovery.test_degenerate import mixed_model, skeleton_errors, small_mixed_frame


def cg(frame, **options) -> ConditionalGaussianTest:
    return ConditionalGaussianTest(frame, **options)


def test_on_continuous_data_the_statistic_is_minus_n_log_one_minus_r_squared():
    rng = np.random.default_rng(1)
    n = 500
    x = rng.standard_normal((n, 4))
    x[:, 1] += 0.3 * x[:, 0]
    x[:, 2] += 0.5 * x[:, 1]
    test, corr = make_ci_test(x, "cg"), np.corrcoef(x, rowvar=False)
    for i, j, z in [(0, 1, ()), (0, 2, (1,)), (0, 2, (1, 3)), (2, 3, (0,))]:
        r = partial_correlation(corr, i, j, z)
        expected = float(chdtrc(1, -n * math.log(1.0 - r * r)))
        assert test.pvalue(i, j, z) == pytest.approx(expected, rel=1e-8, abs=1e-300)


def test_given_one_discrete_variable_the_statistic_sums_the_cells_correlation_tests():
    # G = sum_k -n_k log(1 - r_k^2), df = the number of cells (one slope per cell).
    frame = small_mixed_frame(600, seed=2).assign(e=lambda f: f["b"] * (f["a"] - 1) + f["d"])
    by_hand = 0.0
    for _, cell in frame.groupby("a"):
        r = np.corrcoef(cell["b"], cell["e"])[0, 1]
        by_hand += -len(cell) * math.log(1.0 - r * r)
    test = cg(frame)
    expected = chdtrc(3, by_hand)
    assert test.pvalue_of("b", "e", ["a"]) == pytest.approx(expected, rel=1e-8, abs=1e-300)
    # Slopes of opposite sign in the cells: the pooled partial correlation misses what
    # the per-cell fits see.
    assert test.pvalue_of("b", "e", ["a", "d"]) < 1e-6
    assert make_ci_test(frame, "dg").pvalue_of("b", "e", ["a", "d"]) > 0.01


def test_a_discrete_against_a_continuous_variable_compares_one_gaussian_with_one_per_level():
    frame = small_mixed_frame(300, seed=3)
    n, groups = len(frame), frame.groupby("a")["b"]
    stat = n * math.log(frame["b"].var(ddof=0)) - sum(
        len(g) * math.log(g.var(ddof=0)) for _, g in groups
    )
    expected = chdtrc(2 * (3 - 1), stat)  # a mean and a variance per extra level
    assert cg(frame).pvalue_of("a", "b") == pytest.approx(expected, rel=1e-8)
    assert cg(frame).pvalue_of("b", "a") == cg(frame).pvalue_of("a", "b")


def g_squared(table: pd.DataFrame, x: str, y: str, z: list[str]) -> tuple[float, int]:
    """G² of ``x ⊥ y | z`` from the counts, and the observed-cell degrees of freedom."""
    stat, df = 0.0, 0
    strata = table.groupby(z) if z else [((), table)]
    for _, rows in strata:
        counts = pd.crosstab(rows[x], rows[y]).to_numpy(dtype=float)
        expected = counts.sum(1, keepdims=True) * counts.sum(0, keepdims=True) / counts.sum()
        seen = counts > 0
        stat += 2.0 * float((counts[seen] * np.log(counts[seen] / expected[seen])).sum())
        df += seen.sum() + 1 - counts.shape[0] - counts.shape[1]
    return stat, df


def test_on_discrete_data_it_is_g_squared_with_observed_cell_degrees_of_freedom():
    rng = np.random.default_rng(4)
    n = 800
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (rng.random(n) < 0.3 + 0.2 * (b == 1)).astype(np.int64)
    frame = pd.DataFrame({"a": a, "b": b, "c": c})
    frame.loc[(frame["a"] == 2) & (frame["b"] == 0), "b"] = 1  # a structural zero
    test = cg(frame)
    for x, y, z in [("a", "b", []), ("a", "c", ["b"]), ("b", "c", []), ("a", "c", [])]:
        stat, df = g_squared(frame, x, y, z)
        assert test.pvalue_of(x, y, z) == pytest.approx(chdtrc(df, stat), rel=1e-8, abs=1e-300)


def test_rows_of_cells_below_the_minimum_are_left_out_of_the_test():
    frame = small_mixed_frame(400, seed=5)
    frame.loc[frame.index[:3], "c"] = 7  # a level seen in 3 rows only: a sparse cell
    test = cg(frame, min_cell_rows=5)
    kept = frame[frame["c"] != 7]
    alone = cg(kept)
    for x, y, z in [("b", "d", ["c"]), ("c", "d", []), ("b", "d", ["a", "c"])]:
        assert test.pvalue_of(x, y, z) == pytest.approx(alone.pvalue_of(x, y, z), rel=1e-10)
    # Without a discrete variable in the cells nothing is left out.
    assert test.pvalue_of("b", "d") == cg(frame).pvalue_of("b", "d") != alone.pvalue_of("b", "d")
    # A cell needs a_max + 1 rows whatever min_cell_rows says: 3 rows for (b, d | c).
    assert cg(frame, min_cell_rows=2).pvalue_of("b", "d", ["c"]) == pytest.approx(
        cg(frame[frame["c"] != 7]).pvalue_of("b", "d", ["c"]), rel=1e-10
    ) or cg(frame, min_cell_rows=2).pvalue_of("b", "d", ["c"]) != test.pvalue_of("b", "d", ["c"])


def test_a_test_with_no_cell_large_enough_or_no_degree_of_freedom_is_skipped():
    rng = np.random.default_rng(6)
    frame = pd.DataFrame(
        {"a": np.arange(12) % 6, "x": rng.standard_normal(12), "y": rng.standard_normal(12)}
    )
    test = cg(frame)  # 6 levels of 2 rows: no cell reaches 5 rows
    assert test.query(1, 2, (0,)) == (0.0, True)
    assert test.query(1, 2)[1] is False
    twin = cg(small_mixed_frame().assign(e=lambda f: f["b"] * 2.0))  # a continuous copy
    assert twin.query(1, 4, (0,)) == (0.0, True)  # singular cell covariances
    assert twin.n_skipped == 1


def test_testwise_deletion_runs_each_test_on_its_complete_rows():
    frame = small_mixed_frame(500, seed=7)
    holed = frame.copy()
    holed.loc[holed.index[::7], "b"] = np.nan
    holed.loc[holed.index[::5], "a"] = -1
    test = cg(holed)
    assert test.has_missing
    for x, y, z in [("a", "b", []), ("c", "d", ["a"]), ("a", "d", ["b", "c"]), ("c", "d", [])]:
        rows = (holed[[x, y, *z]] != -1).all(axis=1) & holed[[x, y, *z]].notna().all(axis=1)
        alone = cg(frame[rows.to_numpy()])
        assert test.pvalue_of(x, y, z) == pytest.approx(alone.pvalue_of(x, y, z), rel=1e-7)
        assert test.rows_used(test.index(x), test.index(y), [test.index(v) for v in z]) == (
            rows.sum()
        )


def test_ordinal_variables_are_scores_or_categories():
    frame = small_mixed_frame().assign(a=lambda f: f["a"].astype(float))
    assert cg(frame, kinds={"a": "ordinal"}).discrete == (False, False, True, False)
    assert cg(frame, kinds={"a": "ordinal"}, ordinal="categories").discrete == (
        True,
        False,
        True,
        False,
    )
    # As scores an ordinal variable is a continuous one.
    scores = cg(frame, kinds={"a": "ordinal"}).pvalue_of("a", "d", ["b"])
    assert scores == cg(frame, kinds={"a": "continuous"}).pvalue_of("a", "d", ["b"])


def test_p_values_are_calibrated_under_the_oracle_graphs_independences():
    rejected = total = 0
    for seed in range(5):
        model = mixed_model(seed)
        test = make_ci_test(model.sample(1000, seed=100 + seed).frame, "cg")
        oracle, rng, d = OracleTest(model.dag), np.random.default_rng(seed), 12
        found = 0
        while found < 100:
            i, j = (int(v) for v in rng.choice(d, 2, replace=False))
            rest = [k for k in range(d) if k not in (i, j)]
            z = tuple(int(v) for v in rng.choice(rest, rng.integers(0, 3), replace=False))
            if oracle.pvalue(i, j, z) == 1.0:
                before = test.n_tests
                p = test.pvalue(i, j, z)
                if test.n_tests > before:  # a new independence, not a repeat
                    rejected += p <= 0.05
                    found += 1
        total += found
    assert total == 500
    assert 0.02 <= rejected / total <= 0.08


def test_pc_with_cg_recovers_mixed_dags():
    errors = []
    for seed in range(4):
        model = mixed_model(seed)
        errors.append(skeleton_errors(pc(model.sample(2000, seed=7).frame, test="cg"), model.dag))
    assert max(errors) <= 2


def test_the_cache_round_trips_and_the_pair_order_does_not_matter():
    frame = small_mixed_frame()
    first = make_ci_test(frame, "cg")
    assert first.kind == "cg"
    pvals = [first.pvalue(0, 1, (2,)), first.pvalue(1, 3), first.pvalue(0, 3, (1, 2))]
    second = make_ci_test(frame, "cg")
    second.absorb_arrays(first.cache_arrays())
    assert [second.pvalue(0, 1, (2,)), second.pvalue(1, 3), second.pvalue(0, 3, (1, 2))] == pvals
    assert cg(frame)._compute(3, 0, (1, 2)) == cg(frame)._compute(0, 3, (1, 2))


def test_bad_input_names_the_variable_or_option_and_the_fix():
    frame = small_mixed_frame()
    with pytest.raises(DataError, match=r"'b' is categorical but holds the value .*continuous"):
        cg(frame, kinds={"b": "categorical"})
    with pytest.raises(ConfigError, match="ordinal mode.*scores"):
        cg(frame, ordinal="ranks")
    with pytest.raises(ConfigError, match="min_cell_rows must be an integer >= 2"):
        cg(frame, min_cell_rows=1)
