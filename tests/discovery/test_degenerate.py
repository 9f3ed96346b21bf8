"""The degenerate-Gaussian test (``"dg"``) and ``ci_test="auto"``: closed forms,
calibration under true independences, recovery of a known mixed DAG, kinds, errors."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import chdtrc

from fedstruct.data import ClientData
from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.discovery import (
    ConditionalGaussianTest,
    DegenerateGaussianTest,
    DiscreteTest,
    FisherZTest,
    OracleTest,
    choose_ci_test,
    fci,
    make_ci_test,
    pc,
)
from fedstruct.discovery.fisherz import partial_correlation
from fedstruct.discovery.kinds import CG_MIN_ROWS, median_pair_rows
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.methods.fedcdnv import FedCDnv, FedCDnvClient
from fedstruct.methods.fedcdnv.config import FedCDnvConfig


def mixed_model(seed: int, d: int = 12) -> ConditionalGaussianSCM:
    """A random DAG, half of its variables categorical (3 levels) or binary."""
    dag = erdos_renyi_dag(d, seed=seed, edges_per_node=1.0)
    rng = np.random.default_rng(seed)
    chosen = set(rng.permutation(d)[: d // 2].tolist())
    kinds = {
        v: ("real" if i not in chosen else "categorical" if i % 2 else "binary")
        for i, v in enumerate(dag.names)
    }
    return ConditionalGaussianSCM(dag, kinds, seed=seed)


def small_mixed_frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = rng.standard_normal(n) + 0.4 * a
    c = (b + rng.standard_normal(n) > 0).astype(np.int64) + 2 * (rng.random(n) < 0.3)
    d = rng.standard_normal(n) + 0.5 * b
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


def regression_statistic(frame: pd.DataFrame, y: str, x: str, z: list[str]) -> float:
    """``n log(det S(Y|Z) / det S(Y|X,Z))`` by least squares on indicator columns
    (categorical = integer dtype), the regression form of the test, computed apart."""

    def columns(names: list[str]) -> np.ndarray:
        out = [np.ones(len(frame))]
        for name in names:
            col = frame[name].to_numpy()
            if frame[name].dtype.kind == "i":
                out += [(col == level).astype(float) for level in np.unique(col)[1:]]
            else:
                out.append(col.astype(float))
        return np.column_stack(out)

    target = columns([y])[:, 1:]

    def logdet_residual(names: list[str]) -> float:
        design = columns(names)
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        resid = target - design @ coef
        return float(np.linalg.slogdet(resid.T @ resid / len(frame))[1])

    return len(frame) * (logdet_residual(z) - logdet_residual([x, *z]))


def test_on_continuous_data_the_statistic_is_minus_n_log_one_minus_r_squared():
    rng = np.random.default_rng(1)
    n = 500
    x = rng.standard_normal((n, 5))
    x[:, 1] += 0.3 * x[:, 0]
    x[:, 2] += 0.5 * x[:, 1]
    x[:, 4] += 0.2 * x[:, 3] + 0.2 * x[:, 2]
    dg, fz = make_ci_test(x, "dg"), make_ci_test(x, "fisherz")
    corr = np.corrcoef(x, rowvar=False)
    for i, j, z in [(0, 1, ()), (0, 2, (1,)), (0, 2, (1, 3)), (3, 4, (0, 1, 2)), (2, 4, (3,))]:
        r = partial_correlation(corr, i, j, z)
        expected = float(chdtrc(1, -n * math.log(1.0 - r * r)))
        assert dg.pvalue(i, j, z) == pytest.approx(expected, rel=1e-9, abs=1e-300)
        # Same partial correlation, another calibration: close to Fisher-z's p-value.
        assert dg.pvalue(i, j, z) == pytest.approx(fz.pvalue(i, j, z), abs=0.01)


def test_the_statistic_is_the_regression_likelihood_ratio_in_either_direction():
    frame = small_mixed_frame()
    test = make_ci_test(frame, "dg")
    assert test.widths == (2, 1, 3, 1)  # a: 3 levels, c: 4 -> k - 1 indicator columns
    for x, y, z in [("a", "b", []), ("a", "c", ["b"]), ("b", "c", ["a", "d"]), ("a", "d", ["c"])]:
        i, j = test.index(x), test.index(y)
        df = test.widths[i] * test.widths[j]
        for first, second in [(x, y), (y, x)]:  # Y on (X, Z) against Y on Z, and reversed
            stat = regression_statistic(frame, second, first, z)
            p = test.pvalue(i, j, [test.index(v) for v in z])
            assert p == pytest.approx(float(chdtrc(df, stat)), rel=1e-7, abs=1e-300)


def test_a_categorical_against_a_continuous_variable_is_one_way_anova():
    # Closed form: G = -n log(1 - R^2), R^2 = between-group / total sum of squares, df = k-1.
    frame = small_mixed_frame(300, seed=3)
    groups = frame.groupby("a")["b"]
    between = (groups.count() * (groups.mean() - frame["b"].mean()) ** 2).sum()
    total = ((frame["b"] - frame["b"].mean()) ** 2).sum()
    expected = chdtrc(2, -len(frame) * math.log(1.0 - between / total))
    assert make_ci_test(frame, "dg").pvalue_of("a", "b") == pytest.approx(expected, rel=1e-9)


def test_p_values_are_calibrated_under_the_oracle_graphs_independences():
    rejected = total = 0
    for seed in range(5):
        model = mixed_model(seed)
        test = make_ci_test(model.sample(1000, seed=100 + seed).frame, "dg")
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


def skeleton_errors(result, dag) -> int:
    index = {v: k for k, v in enumerate(result.names)}
    truth = np.zeros_like(result.skeleton, dtype=bool)
    for child in dag.names:
        for parent in dag.parents(child):
            truth[index[child], index[parent]] = truth[index[parent], index[child]] = True
    learned = np.asarray(result.graph.marks) != 0
    return int((learned ^ truth).sum() // 2)


def test_pc_with_dg_recovers_mixed_dags_better_than_fisherz_on_codes():
    dg_errors, fisherz_errors = [], []
    for seed in range(6):
        model = mixed_model(seed)
        data = model.sample(2000, seed=7).frame
        dg_errors.append(skeleton_errors(pc(data, test="dg"), model.dag))
        fisherz_errors.append(skeleton_errors(pc(data, test="fisherz"), model.dag))
    assert max(dg_errors) <= 2  # at most 2 wrong adjacencies of ~12 edges
    assert sum(dg_errors) < sum(fisherz_errors)  # 4 against 8 when written


def test_fci_with_dg_recovers_a_mixed_dags_skeleton():
    model = mixed_model(0)
    result = fci(model.sample(2000, seed=7).frame, test="dg")
    assert skeleton_errors(result, model.dag) == 0


def test_auto_chooses_from_the_kinds():
    frame = small_mixed_frame()
    codes = frame[["a", "c"]]
    assert isinstance(make_ci_test(frame, "auto"), DegenerateGaussianTest)  # 400 rows
    assert isinstance(make_ci_test(frame, "auto", cg_min_rows=400), ConditionalGaussianTest)
    assert isinstance(make_ci_test(frame, "dg"), DegenerateGaussianTest)
    assert isinstance(make_ci_test(frame[["b", "d"]], "auto"), FisherZTest)
    auto = make_ci_test(codes, "auto")
    assert isinstance(auto, DiscreteTest) and auto.kind == "g2"
    assert auto.pvalue(0, 1) == make_ci_test(codes, "g2").pvalue(0, 1)  # bnlearn unchanged
    # the rows never turn categorical or continuous data away from G² or Fisher-z
    assert make_ci_test(codes, "auto", cg_min_rows=10**9).kind == "g2"
    assert make_ci_test(frame[["b", "d"]], "auto", cg_min_rows=0).kind == "fisherz"
    # kinds win over dtypes; ordinal goes with categorical to G², with continuous to Fisher-z.
    assert choose_ci_test(frame, kinds={"a": "continuous", "c": "real"}) == "fisherz"
    assert choose_ci_test(codes, kinds={"a": "ordinal"}) == "g2"
    assert choose_ci_test(frame, kinds={"a": "ordinal", "c": "ordinal"}) == "fisherz"
    assert choose_ci_test(np.arange(12.0).reshape(6, 2)) == "fisherz"
    assert choose_ci_test(np.arange(12).reshape(6, 2), names=["u", "v"]) == "g2"
    # In the mixed test an ordinal variable is one column of scores.
    assert make_ci_test(frame, "dg", kinds={"a": "ordinal"}).widths == (1, 1, 3, 1)


def test_auto_on_mixed_data_runs_dg_below_cg_min_rows_and_cg_from_it():
    """The rows decide between the two mixed tests: "dg" on few rows, where "cg"'s
    crossed cells cost power, "cg" from CG_MIN_ROWS (1,500) rows per variable pair."""
    assert CG_MIN_ROWS == 1500
    frame = small_mixed_frame(1500)
    assert choose_ci_test(frame) == "cg"
    assert choose_ci_test(frame.iloc[:1499]) == "dg"
    assert choose_ci_test(frame, cg_min_rows=1501) == "dg"
    # missing values: the median over the pairs of the rows observed on both
    holed = small_mixed_frame(2000)
    holed.loc[:599, "b"] = np.nan
    holed.loc[1400:, "d"] = np.nan
    holed.loc[1000:1099, "c"] = -1
    # rows on both, per pair: ab 1400, ac 1900, ad 1400, bc 1300, bd 800, cd 1300
    # -> median 1350, below 1,500 although the complete data (2,000 rows) are above
    assert median_pair_rows(holed) == 1350.0
    assert median_pair_rows(small_mixed_frame(700)) == 700.0
    assert choose_ci_test(holed) == "dg" and choose_ci_test(small_mixed_frame(2000)) == "cg"
    assert choose_ci_test(holed, cg_min_rows=1350) == "cg"
    assert choose_ci_test(holed, cg_min_rows=1351) == "dg"
    assert pc(holed, test="auto").ci_test.kind == "dg"  # the learners resolve auto so


def test_learners_and_fedcdnv_accept_dg_cg_and_auto():
    frame = small_mixed_frame()
    assert pc(frame, test="auto").ci_test.kind == "dg"  # the mixed test auto chooses: 400 rows
    assert pc(frame, test="cg").ci_test.kind == "cg"
    assert pc(frame, test="dg").ci_test.kind == "dg"
    assert FedCDnvConfig(ci_test="dg").ci_test == "dg"
    assert FedCDnvConfig(ci_test="cg").ci_test == "cg"
    assert FedCDnvConfig().ci_test == "auto"  # the default: G² on codes, as the paper
    assert FedCDnvConfig().cg_min_rows == CG_MIN_ROWS
    assert pc(frame).ci_test.kind == "dg"  # and the learners'
    client = FedCDnvClient(ClientData("site-1", frame), config=FedCDnvConfig())
    assert client.learn().ci_test.kind == "dg"
    cg_client = FedCDnvClient(ClientData("site-1", frame), config=FedCDnvConfig(cg_min_rows=400))
    assert cg_client.learn().ci_test.kind == "cg"
    codes = frame.select_dtypes("int64")
    assert (
        FedCDnvClient(ClientData("s", codes), config=FedCDnvConfig()).learn().ci_test.kind == "g2"
    )


def test_each_fedcdnv_site_chooses_its_mixed_test_on_its_own_rows():
    frame = small_mixed_frame(1600)
    clients = [ClientData("large", frame), ClientData("small", frame.iloc[:400])]
    model = FedCDnv().fit(clients)
    assert {site: e["ci_test"] for site, e in model.site_tests_.items()} == {
        "large": "cg",
        "small": "dg",
    }


def test_the_cache_round_trips_through_arrays():
    frame = small_mixed_frame()
    first = make_ci_test(frame, "dg")
    pvals = [first.pvalue(0, 1, (2,)), first.pvalue(1, 3), first.pvalue(0, 3, (1, 2))]
    second = make_ci_test(frame, "dg")
    second.absorb_arrays(first.cache_arrays())
    assert second.n_tests == 3
    assert [second.pvalue(0, 1, (2,)), second.pvalue(1, 3), second.pvalue(0, 3, (1, 2))] == pvals


def test_too_few_rows_for_the_regression_skip_the_test_as_dependent():
    rng = np.random.default_rng(5)
    levels = np.arange(10) % 4  # every level of 4 in 10 rows
    frame = pd.DataFrame({f"c{k}": rng.permutation(levels) for k in range(3)})
    frame["x"] = rng.standard_normal(10)
    test = make_ci_test(frame, "dg")
    assert test.widths == (3, 3, 3, 1)
    assert test.query(0, 1, (2,)) == (0.0, True)  # 3 + 3 + 3 columns + 1 intercept: 0 residual df
    assert test.query(0, 3, (1,))[1] is False  # 2 residual df
    # Learners do not enumerate sets that could only be skipped: room for 4 columns of Z.
    assert test.max_testable_size(0, 3, [1, 2]) == 1
    assert test.max_testable_size(0, 1, [2, 3]) == 1  # x (1 column) fits, c2 does not


def test_bad_input_names_the_variable_and_the_fix():
    frame = small_mixed_frame()
    with pytest.raises(DataError, match=r"'b' is categorical but holds the value .*continuous"):
        make_ci_test(frame, "dg", kinds={"b": "categorical"})
    with pytest.raises(DataError, match=r"'a' is categorical but holds the value -2"):
        make_ci_test(frame.assign(a=frame["a"] - 2), "dg")  # -1: a missing value
    with pytest.raises(DataError, match=r"'a' is categorical but holds the value -1"):
        make_ci_test(frame.assign(a=frame["a"] - 1), "dg", missing="error")
    with pytest.raises(UnknownVariableError, match="'zz'"):
        make_ci_test(frame, "dg", kinds={"zz": "categorical"})
    with pytest.raises(ConfigError, match=r"'a'.*kind"):
        make_ci_test(frame, "auto", kinds={"a": "nominal"})


def test_a_singular_regression_is_skipped_as_dependent():
    frame = small_mixed_frame()
    twin = make_ci_test(frame.assign(e=frame["a"]), "dg")  # a categorical copy
    assert twin.query(0, 4, (1,)) == (0.0, True)
    assert twin.query(1, 2, (0, 4)) == (0.0, True)
    assert twin.n_skipped == 2
