"""CI tests of the local learners: p-values against scipy and causal-learn, cache, rules, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import chdtrc

from fedstruct.data import ClientData
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.citest import OracleTest, ci_key
from fedstruct.discovery.discrete import (
    DiscreteTest,
    SmallSampleRule,
    contingency_table,
    sparse_statistics,
    stratum_codes,
    table_statistics,
)
from fedstruct.discovery.fisherz import FisherZTest
from fedstruct.errors import (
    ConfigError,
    DataError,
    GraphError,
    NonFiniteDataError,
    UnknownVariableError,
)
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.separation import SeparationOracle

CARDS = [2, 3, 4, 3, 2, 4, 3, 3, 2, 4]


def discrete_data(n: int = 600, seed: int = 0) -> np.ndarray:
    """Columns with the given cardinalities; column 1 depends on 0 and 2, column 3 on 1."""
    rng = np.random.default_rng(seed)
    data = np.column_stack([rng.integers(0, c, n) for c in CARDS])
    data[:, 1] = (data[:, 0] + data[:, 2] + (rng.random(n) < 0.3)) % 3
    data[:, 3] = np.where(rng.random(n) < 0.6, data[:, 1], data[:, 3])
    return data


def scipy_stratified(data, i, j, z, statistic):
    """Independent reference: scipy's contingency test in every stratum of z, summed.

    Empty rows and columns of a stratum are dropped first (the adjusted df convention).
    """
    total, df = 0.0, 0
    keys = [tuple(r) for r in data[:, list(z)]] if z else [()] * len(data)
    for key in sorted(set(keys)):
        rows = data[[k == key for k in keys]]
        table = pd.crosstab(rows[:, i], rows[:, j]).to_numpy()
        if min(table.shape) < 2:
            continue
        lam = "log-likelihood" if statistic == "g2" else None
        stat, _, dof, _ = stats.chi2_contingency(table, correction=False, lambda_=lam)
        total += stat
        df += dof
    return float(chdtrc(df, total)) if df else 1.0


# -------------------------------------------------------------- discrete p-values
@pytest.mark.parametrize("statistic", ["g2", "chi2"])
@pytest.mark.parametrize("z", [(), (2,), (2, 4), (4, 5, 6)])
def test_discrete_pvalues_match_scipy(statistic, z):
    data = discrete_data()
    test = DiscreteTest(data, statistic=statistic, small_sample="none")
    expected = scipy_stratified(data, 0, 1, z, statistic)
    assert test.pvalue(0, 1, z) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    expected = scipy_stratified(data, 3, 7, z, statistic)
    assert test.pvalue(3, 7, z) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("method", ["gsq", "chisq"])
def test_discrete_pvalues_match_causal_learn(method):
    from causallearn.utils.cit import CIT

    data = discrete_data(n=2000, seed=3)
    theirs = CIT(data, method)
    ours = DiscreteTest(data, statistic="g2" if method == "gsq" else "chi2", small_sample="none")
    queries = [(0, 1, ()), (0, 1, (2,)), (1, 3, (0, 2)), (5, 6, (7, 8, 9))]
    queries.append((0, 3, (1, 2, 4, 5, 6, 7)))
    for i, j, z in queries:  # the last two use the sparse path (more cells than 2n)
        assert ours.pvalue(i, j, z) == pytest.approx(theirs(i, j, z), rel=1e-9, abs=1e-300)


def test_sparse_and_dense_statistics_agree():
    data = discrete_data(n=500, seed=5)
    cols = [data[:, k] for k in range(data.shape[1])]
    for z in [(), (2,), (2, 5), (4, 5, 6, 7, 9)]:
        cz = [CARDS[k] for k in z]
        table = contingency_table(cols[0], cols[3], [cols[k] for k in z], 2, 3, cz)
        code, _ = stratum_codes([cols[k] for k in z], cz)
        for statistic in ("g2", "chi2"):
            dense = table_statistics(table, statistic)
            sparse = sparse_statistics(code, cols[0], cols[3], 2, 3, statistic)
            assert sparse[1] == dense[1]
            assert sparse[0] == pytest.approx(dense[0], rel=1e-10)


def test_degrees_of_freedom_conventions():
    # X has 3 declared states but only 0 and 1 occur; Y 2 states; Z binary.
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, 400)
    y = (x ^ (rng.random(400) < 0.2)).astype(int)
    z = rng.integers(0, 2, 400)
    data = np.column_stack([x, y, z])
    cards = [3, 2, 2]
    adjusted = DiscreteTest(data, cardinalities=cards, small_sample="none")
    plain = DiscreteTest(data, cardinalities=cards, small_sample="none", dof="plain")
    table = contingency_table(x, y, [z], 3, 2, [2])
    g2, df = table_statistics(table, "g2")
    assert df == 2  # (2 - 1)(2 - 1) in each of the two strata
    assert table_statistics(table, "g2", "plain", [2])[1] == 4  # (3 - 1)(2 - 1) * 2
    assert adjusted.pvalue(0, 1, [2]) == pytest.approx(float(chdtrc(2, g2)), rel=1e-12)
    assert plain.pvalue(0, 1, [2]) == pytest.approx(float(chdtrc(4, g2)), rel=1e-12)
    # A stratum where X takes one value contributes no degree of freedom; none at all: p = 1.
    halves = np.r_[np.zeros(50), np.ones(50)]
    const_x = np.column_stack([halves, rng.integers(0, 2, 100), halves])
    assert DiscreteTest(const_x, small_sample="none").pvalue(0, 1, [2]) == 1.0


# -------------------------------------------------------------- small-sample rules
def test_small_sample_rules():
    rng = np.random.default_rng(2)
    data = rng.integers(0, 2, size=(100, 6))
    toolbox = DiscreteTest(data)  # default: n >= 5 * cells, else dependent
    assert toolbox.small_sample == SmallSampleRule(5.0, "cell", "dependent")
    p = toolbox.pvalue(0, 1, (2, 3))  # 16 cells: 80 <= 100, performed
    assert 0.0 < p < 1.0 and toolbox.n_skipped == 0
    assert toolbox.query(0, 1, (2, 3, 4)) == (0.0, True)  # 32 cells: 160 > 100
    assert toolbox.n_skipped == 1 and toolbox.n_tests == 2
    assert toolbox.max_testable_size(0, 1, [2, 3, 4, 5]) == 2
    pcalg = DiscreteTest(data, small_sample="pcalg")  # n >= 10 * df, else independent
    assert 0.0 < pcalg.pvalue(0, 1, (2, 3, 4)) < 1.0  # df 8: 80 <= 100
    assert pcalg.query(0, 1, (2, 3, 4, 5)) == (1.0, True)  # df 16: 160 > 100
    assert pcalg.max_testable_size(0, 1, [2, 3, 4, 5]) == 4  # no pruning for "independent"
    none = DiscreteTest(data, small_sample="none")
    assert none.query(0, 1, (2, 3, 4, 5))[1] is False
    custom = DiscreteTest(data, small_sample=SmallSampleRule(20, "cell", "dependent"))
    assert custom.query(0, 1, (2,)) == (0.0, True)  # 8 cells: 160 > 100
    with pytest.raises(ConfigError, match="small-sample rule"):
        DiscreteTest(data, small_sample="sometimes")
    with pytest.raises(ConfigError, match="verdict"):
        SmallSampleRule(5, "cell", "maybe")  # type: ignore[arg-type]


# ------------------------------------------------------------------------ Fisher-z
def test_fisherz_matches_regression_and_causal_learn():
    from causallearn.utils.cit import CIT

    rng = np.random.default_rng(4)
    n = 500
    a = rng.normal(size=n)
    b = 0.8 * a + rng.normal(size=n)
    c = 0.5 * b + rng.normal(size=n)
    d = rng.normal(size=n)
    data = np.column_stack([a, b, c, d])
    ours = FisherZTest(data)
    theirs = CIT(data, "fisherz")
    for i, j, z in [(0, 2, ()), (0, 2, (1,)), (0, 3, (1, 2)), (1, 2, (0, 3))]:
        assert ours.pvalue(i, j, z) == pytest.approx(theirs(i, j, z), rel=1e-9, abs=1e-15)
    # Independent reference: correlation of regression residuals.
    design = np.column_stack([np.ones(n), b])
    ra = a - design @ np.linalg.lstsq(design, a, rcond=None)[0]
    rc = c - design @ np.linalg.lstsq(design, c, rcond=None)[0]
    r = np.corrcoef(ra, rc)[0, 1]
    t = math.sqrt(n - 1 - 3) * abs(math.atanh(r))
    assert ours.pvalue(0, 2, (1,)) == pytest.approx(2 * stats.norm.sf(t), rel=1e-9)
    assert FisherZTest(data[:5]).query(0, 1, (2, 3)) == (0.0, True)  # n - |Z| - 3 < 1


# ------------------------------------------------------------------------- cache
def test_cache_normalises_keys_and_counts():
    test = DiscreteTest(discrete_data(), small_sample="none")
    p = test.pvalue(0, 1, (4, 2))
    assert test.n_tests == 1 and test.n_cache_hits == 0
    assert test.pvalue(1, 0, [2, 4]) == p  # same unordered pair, same set
    assert test.pvalue(np.int64(1), 0, (np.int64(4), 2)) == p
    assert test.n_tests == 1 and test.n_cache_hits == 2
    assert dict(test.cache) == {(0, 1, (2, 4)): p}
    assert ci_key(5, 3, [9, 1]) == (3, 5, (1, 9))
    test.pvalue(0, 1)
    assert test.n_tests == 2
    assert test.pvalue_of("X1", "X0", ["X4", "X2"]) == p
    with pytest.raises(TypeError):
        test.cache[(0, 2, ())] = 0.5  # type: ignore[index]


def test_oracle_test_is_separation():
    edges = [("A", "B"), ("L", "B"), ("L", "C"), ("C", "D")]
    dag = Graph.from_edges(["A", "B", "C", "L", "D"], edges)
    test = OracleTest(dag, ["L"])
    assert test.names == ("A", "B", "C", "D")
    oracle = SeparationOracle(dag, observed=test.names)
    for i, j, z in [(0, 2, ()), (0, 2, (1,)), (1, 3, ()), (1, 3, (2,)), (0, 3, (1, 2))]:
        assert test.pvalue(i, j, z) == (1.0 if oracle.separated(i, j, z) else 0.0)
    assert test.pvalue(0, 2) == 1.0 and test.pvalue(0, 2, (1,)) == 0.0
    assert test.n_samples is None and test.kind == "oracle"
    with pytest.raises(UnknownVariableError, match="'Q'"):
        OracleTest(dag, ["Q"])


# ------------------------------------------------------------------------- errors
def test_bad_queries():
    test = DiscreteTest(discrete_data(), small_sample="none")
    with pytest.raises(GraphError, match="must differ"):
        test.pvalue(1, 1)
    with pytest.raises(GraphError, match="must differ"):
        test.pvalue(0, 1, (1, 2))
    with pytest.raises(GraphError):
        test.pvalue(0, 1, (2, 2))
    with pytest.raises(UnknownVariableError, match="index 10 is out of range"):
        test.pvalue(0, 10)
    with pytest.raises(UnknownVariableError, match="'nope'"):
        test.index("nope")
    assert test.n_tests == 0


def test_bad_data_names_the_variable():
    frame = pd.DataFrame({"a": [0, 1, 0, 1], "b": [1, 1, 1, 1], "c": [0, 1, 1, 0]})
    with pytest.raises(DataError, match=r"variable 'b' is constant.*drop the column"):
        make_ci_test(frame)
    frame = pd.DataFrame({"a": [0, 1, 0, 1], "x": [0.1, 1.7, 0.3, 2.2]})
    with pytest.raises(  # the setting's name, as the CLI and the estimator spell it
        DataError, match=r"'x' has non-integer values.*ci_test='auto', --set ci_test=auto"
    ):
        make_ci_test(frame, "g2")
    assert make_ci_test(frame, "fisherz").kind == "fisherz"
    frame = pd.DataFrame({"a": [0.0, 1.0, np.nan, 1.0], "b": [0.5, 0.1, 0.2, 0.3]})
    with pytest.raises(NonFiniteDataError, match=r"variable 'a' has NaN.*missing='testwise'"):
        make_ci_test(frame, "fisherz", missing="error")
    frame = pd.DataFrame({"a": [0, 1, -1, 1], "b": [0, 1, 1, 0]})
    with pytest.raises(DataError, match="variable 'a' has the negative code -1"):
        make_ci_test(frame, missing="error")
    with pytest.raises(DataError, match="variable 'a' has the negative code -2"):
        make_ci_test(frame.replace(-1, -2))
    frame = pd.DataFrame({"a": [0, 1, 2, 1], "b": [0, 1, 1, 0]})
    with pytest.raises(DataError, match="variable 'a' has the code 2 but cardinality 2"):
        make_ci_test(frame, cardinalities={"a": 2, "b": 2})
    with pytest.raises(DataError, match="cardinalities miss the variable 'b'"):
        make_ci_test(frame, cardinalities={"a": 3})
    frame = pd.DataFrame({"a": [0, 1, 2, 1], "b": ["u", "v", "u", "v"]})
    with pytest.raises(DataError, match="variable 'b' has dtype"):
        make_ci_test(frame)
    client = ClientData("site-3", pd.DataFrame({"a": [0, 1, 0], "b": [2, 2, 2]}))
    with pytest.raises(DataError, match=r"^client 'site-3': variable 'b' is constant"):
        make_ci_test(client)
    with pytest.raises(ConfigError, match="unknown CI test 'kci'"):
        make_ci_test(np.eye(3), "kci")
    with pytest.raises(ConfigError, match="dof convention"):
        DiscreteTest(np.eye(3, dtype=int), dof="tetrad")
    with pytest.raises(DataError, match="2 names for 3 columns"):
        make_ci_test(np.eye(3, dtype=int), names=["p", "q"])


def test_float_codes_and_names():
    data = discrete_data(n=300).astype(float)
    test = make_ci_test(data, names=[f"v{k}" for k in range(10)], small_sample="none")
    assert test.names[3] == "v3" and test.cardinalities == tuple(CARDS)  # type: ignore[attr-defined]
    ints = make_ci_test(discrete_data(n=300), small_sample="none")
    assert test.pvalue(0, 1, (2,)) == ints.pvalue(0, 1, (2,))


def test_a_forgotten_cache_recomputes_the_same_pvalues_and_keeps_the_counts():
    rows = np.random.default_rng(0).integers(0, 3, size=(500, 4))
    test = make_ci_test(rows, "g2")
    first = [test.pvalue(0, 1, [2]), test.pvalue(0, 2), test.pvalue(1, 3, [0, 2])]
    test.forget()
    assert len(test.cache) == 0 and test.n_tests == 3
    again = [test.pvalue(0, 1, [2]), test.pvalue(0, 2), test.pvalue(1, 3, [0, 2])]
    assert again == first and test.n_tests == 6 and len(test.cache) == 3
