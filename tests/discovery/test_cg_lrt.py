"""The conditional-Gaussian test (``"cg"``): closed forms, sparse cells, missing values,
calibration under true independences, recovery of a known mixed DAG, errors."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import chdtrc
from tests.discovery.test_degenerate import mixed_model, skeleton_errors, small_mixed_frame

from fedstruct.discovery import ConditionalGaussianTest, OracleTest, make_ci_test, pc
from fedstruct.discovery.fisherz import partial_correlation
from fedstruct.errors import ConfigError, DataError


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


def test_per_cell_given_one_discrete_variable_the_statistic_sums_the_cells_correlation_tests():
    # G = sum_k -n_k log(1 - r_k^2), df = the number of cells (one slope per cell).
    frame = small_mixed_frame(600, seed=2).assign(e=lambda f: f["b"] * (f["a"] - 1) + f["d"])
    by_hand = 0.0
    for _, cell in frame.groupby("a"):
        r = np.corrcoef(cell["b"], cell["e"])[0, 1]
        by_hand += -len(cell) * math.log(1.0 - r * r)
    test = cg(frame, covariance="cell")
    expected = chdtrc(3, by_hand)
    assert test.pvalue_of("b", "e", ["a"]) == pytest.approx(expected, rel=1e-8, abs=1e-300)
    # Slopes of opposite sign in the cells: the pooled partial correlation misses what
    # the per-cell fits see.
    assert test.pvalue_of("b", "e", ["a", "d"]) < 1e-6
    assert make_ci_test(frame, "dg").pvalue_of("b", "e", ["a", "d"]) > 0.01


def test_per_cell_a_discrete_and_a_continuous_variable_compare_one_gaussian_with_one_per_level():
    frame = small_mixed_frame(300, seed=3)
    n, groups = len(frame), frame.groupby("a")["b"]
    stat = n * math.log(frame["b"].var(ddof=0)) - sum(
        len(g) * math.log(g.var(ddof=0)) for _, g in groups
    )
    expected = chdtrc(2 * (3 - 1), stat)  # a mean and a variance per extra level
    per_cell = cg(frame, covariance="cell")
    assert per_cell.pvalue_of("a", "b") == pytest.approx(expected, rel=1e-8)
    assert per_cell.pvalue_of("b", "a") == per_cell.pvalue_of("a", "b")


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


def regression_statistic(frame: pd.DataFrame, y: str, x: str, cells: list[str], z: list[str]):
    """``n log(RSS(y | cells, z) / RSS(y | x, cells, z))`` by least squares: an intercept
    per cell of the discrete columns (``x`` among them when it is integer-typed) and
    common slopes on the continuous ones: the pooled CG test computed apart."""

    def rss(discrete: list[str], continuous: list[str]) -> float:
        groups = frame.groupby(discrete).ngroup() if discrete else pd.Series(0, frame.index)
        design = [pd.get_dummies(groups).to_numpy(dtype=float)]
        design += [frame[[c]].to_numpy(dtype=float) for c in continuous]
        design_matrix = np.column_stack(design)
        coef, *_ = np.linalg.lstsq(design_matrix, frame[y].to_numpy(), rcond=None)
        return float(((frame[y].to_numpy() - design_matrix @ coef) ** 2).sum())

    x_discrete = frame[x].dtype.kind == "i"
    with_x = ([*cells, x], z) if x_discrete else (cells, [*z, x])
    return len(frame) * math.log(rss(cells, z) / rss(*with_x))


def test_pooled_against_a_continuous_variable_it_is_the_regression_likelihood_ratio():
    frame = small_mixed_frame(500, seed=8)
    frame["e"] = (np.random.default_rng(8).random(len(frame)) < 0.4).astype(np.int64)
    test = cg(frame)
    # (y, x, discrete Z, continuous Z, df): an intercept per cell, common slopes.
    for y, x, cells, z, df in [
        ("b", "d", [], [], 1),
        ("d", "a", [], ["b"], 2),
        ("d", "b", ["a", "e"], [], 1),
        ("d", "a", ["e"], ["b"], 2 * 2),  # a's 3 levels within each of e's 2
        ("d", "c", ["a", "e"], ["b"], 3 * 6),
    ]:
        expected = chdtrc(df, regression_statistic(frame, y, x, cells, z))
        p = test.pvalue_of(x, y, [*cells, *z])
        assert p == pytest.approx(expected, rel=1e-7, abs=1e-300)
    # With a continuous Z it is the degenerate-Gaussian test; with two discrete
    # variables in Z they are crossed into cells, where "dg" adds them.
    dg = make_ci_test(frame, "dg")
    assert test.pvalue_of("a", "d", ["b"]) == pytest.approx(dg.pvalue_of("a", "d", ["b"]), rel=1e-7)
    assert test.pvalue_of("b", "d", ["a", "e"]) != pytest.approx(
        dg.pvalue_of("b", "d", ["a", "e"]), rel=1e-3, abs=0
    )


def test_pooled_crossed_cells_see_an_interaction_the_additive_test_misses():
    # w and x both depend on u XOR v, and on nothing else: independent given u and v.
    rng = np.random.default_rng(9)
    n = 2000
    u, v = rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = ((u ^ v) + (rng.random(n) < 0.1)) % 2  # a discrete child of the interaction
    frame = pd.DataFrame({"u": u, "v": v, "w": w, "x": rng.standard_normal(n) + 1.5 * (u ^ v)})
    # The cells of (u, v) carry the interaction; indicators of u and v added cannot.
    assert cg(frame).pvalue_of("x", "w", ["u", "v"]) > 0.01
    assert make_ci_test(frame, "dg").pvalue_of("x", "w", ["u", "v"]) < 1e-6


def test_per_cell_rows_of_cells_below_the_minimum_are_left_out_of_the_test():
    frame = small_mixed_frame(400, seed=5)
    frame["e"] = np.random.default_rng(5).standard_normal(len(frame))  # independent noise
    frame.loc[frame.index[:3], "c"] = 7  # a level seen in 3 rows only: a sparse cell
    test = cg(frame, covariance="cell", min_cell_rows=5)
    alone = cg(frame[frame["c"] != 7], covariance="cell")
    for x, y, z in [("b", "e", ["c"]), ("c", "e", []), ("b", "e", ["a", "c"])]:
        expected = alone.pvalue_of(x, y, z)
        assert 0.01 < expected < 0.99
        assert test.pvalue_of(x, y, z) == pytest.approx(expected, rel=1e-9, abs=0)
    # Without a discrete variable in the cells no row is left out.
    whole = cg(frame, covariance="cell").pvalue_of("b", "e")
    assert test.pvalue_of("b", "e") == whole != alone.pvalue_of("b", "e")
    # Whatever min_cell_rows says, a cell needs a_max + 1 rows: 3 rows fit the Gaussian of
    # (b, e) in c's cells, not that of (b, e, d).
    low = cg(frame, covariance="cell", min_cell_rows=2)
    assert low.pvalue_of("b", "e", ["c"]) != pytest.approx(alone.pvalue_of("b", "e", ["c"]))
    assert low.pvalue_of("b", "e", ["c", "d"]) == pytest.approx(
        alone.pvalue_of("b", "e", ["c", "d"]), rel=1e-9, abs=0
    )


def test_a_test_with_no_cell_large_enough_or_no_degree_of_freedom_is_skipped():
    rng = np.random.default_rng(6)
    frame = pd.DataFrame(
        {"a": np.arange(12) % 6, "x": rng.standard_normal(12), "y": rng.standard_normal(12)}
    )
    per_cell = cg(frame, covariance="cell")  # 6 levels of 2 rows: no cell reaches 5 rows
    assert per_cell.query(1, 2, (0,)) == (0.0, True)
    assert per_cell.query(1, 2)[1] is False
    pooled = cg(frame)  # 12 rows - 6 cells - 2 columns: 4 residual degrees of freedom
    assert pooled.query(1, 2, (0,))[1] is False
    tiny = cg(frame.assign(a=np.arange(12) % 11))  # 12 - 11 cells - 2 columns < 1
    assert tiny.query(1, 2, (0,)) == (0.0, True)
    for covariance in ("pooled", "cell"):
        twin = cg(small_mixed_frame().assign(e=lambda f: f["b"] * 2.0), covariance=covariance)
        assert twin.query(1, 4, (0,)) == (0.0, True)  # a singular covariance
        assert twin.n_skipped == 1
    # Learners enumerate no set that could only be skipped: pooled, a test on 12 rows
    # holds at most 10 continuous variables; a discrete candidate costs nothing.
    assert pooled.max_testable_size(1, 2, [0]) == 1
    wide = cg(np.random.default_rng(7).standard_normal((6, 8)))
    assert wide.max_testable_size(0, 1, range(2, 8)) == 2  # 6 rows: a <= 4
    assert cg(frame.iloc[:4], covariance="cell").max_testable_size(1, 2, [0]) == -1  # < 5
    # A discrete variable with one level on a test's complete rows: df = 0.
    holed = small_mixed_frame().assign(e=lambda f: (f.index % 3 == 0).astype(np.int64))
    holed.loc[holed["e"] == 1, "b"] = np.nan
    one_level = cg(holed)
    assert one_level.query(1, 4) == (0.0, True)  # e is 0 wherever b is observed
    assert one_level.query(3, 4)[1] is False


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
        expected = alone.pvalue_of(x, y, z)
        assert test.pvalue_of(x, y, z) == pytest.approx(expected, rel=1e-7, abs=1e-300)
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
        learned = pc(model.sample(2000, seed=7).frame, test="cg")
        errors.append(skeleton_errors(learned, model.dag))
    assert max(errors) <= 3 and sum(errors) <= 6  # of ~48 true adjacencies; 5 when written


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
    with pytest.raises(ConfigError, match=r"ordinal mode.*scores"):
        cg(frame, ordinal="ranks")
    with pytest.raises(ConfigError, match="min_cell_rows must be an integer >= 2"):
        cg(frame, min_cell_rows=1)
