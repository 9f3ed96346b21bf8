"""Mixed-type data sets and the MixedSCM generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from fedstruct.data.mixed import MixedDataset, MixedSCM, make_mixed_data
from fedstruct.errors import (
    ConfigError,
    DataError,
    NonFiniteDataError,
    SampleSizeError,
    UnknownVariableError,
)
from fedstruct.graphs.graph import TAIL, Graph
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.graphs.undirected import moral_graph

# A -> C <- B, C -> D <- E, F alone.
HAND_DAG = Graph.from_edges(list("ABCDEF"), [("A", "C"), ("B", "C"), ("C", "D"), ("E", "D")])
HAND_KINDS = {
    "A": "real",
    "B": "categorical",
    "C": "real",
    "D": "ordinal",
    "E": "binary",
    "F": "real",
}


@pytest.fixture(scope="module")
def hand_sample() -> pd.DataFrame:
    scm = MixedSCM(HAND_DAG, HAND_KINDS, seed=3, n_categories=4, n_levels=5)
    return scm.sample(20_000, seed=11)


def _one_hot(codes: pd.Series, k: int) -> np.ndarray:
    return np.eye(k)[codes.to_numpy()]


def _max_abs_corr(x: np.ndarray, features: np.ndarray) -> float:
    return max(abs(np.corrcoef(x, features[:, c])[0, 1]) for c in range(features.shape[1]))


# ------------------------------------------------------------------ MixedSCM
def test_random_kinds_respect_fractions_and_seed():
    dag = erdos_renyi_dag(20, seed=1, edges_per_node=1.0)
    scm = MixedSCM.random(dag, seed=4)
    counts = pd.Series(scm.kinds).value_counts().to_dict()
    assert counts == {"real": 10, "categorical": 6, "binary": 2, "ordinal": 2}
    coded = {v: k for v, k in scm.kinds.items() if k in ("binary", "categorical")}
    assert scm.cardinalities == {v: 2 if k == "binary" else 4 for v, k in coded.items()}
    assert MixedSCM.random(dag, seed=4).kinds == scm.kinds
    assert MixedSCM.random(dag, seed=5).kinds != scm.kinds
    assert scm.graph is dag


def test_sample_is_deterministic_and_typed():
    dag = erdos_renyi_dag(12, seed=2, edges_per_node=1.0)
    scm = MixedSCM.random(dag, seed=7, n_categories=3, n_levels=4)
    a, b = scm.sample(3_000, seed=1), scm.sample(3_000, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(scm.sample(3_000, seed=2))
    # Same seed, rebuilt model: same parameters, same rows.
    pd.testing.assert_frame_equal(
        a, MixedSCM.random(dag, seed=7, n_categories=3, n_levels=4).sample(3_000, seed=1)
    )
    assert list(a.columns) == list(dag.names)
    for v, kind in scm.kinds.items():
        col = a[v]
        if kind in ("binary", "categorical"):
            assert col.dtype == np.int64
            k = scm.cardinalities[v]
            assert col.min() >= 0 and col.max() <= k - 1
            assert col.nunique() == k
        elif kind == "ordinal":
            assert col.dtype == np.float64
            assert sorted(col.unique().tolist()) == [0.0, 1.0, 2.0, 3.0]
        else:
            assert col.dtype == np.float64


def test_ordinal_levels_are_equal_frequency_and_real_variance_is_one(hand_sample):
    shares = hand_sample["D"].value_counts(normalize=True).sort_index()
    assert shares.index.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    # Thresholds are pilot quantiles; 20k fresh rows: each level within 0.03 of 1/5.
    assert np.all(np.abs(shares.to_numpy() - 0.2) < 0.03)
    for v in ("A", "C", "F"):
        assert abs(hand_sample[v].var() - 1.0) < 0.06
        assert abs(hand_sample[v].mean()) < 0.05


def test_implied_independences_hold(hand_sample):
    n = len(hand_sample)
    tol = 4.0 / np.sqrt(n)  # 4 standard errors of a null correlation
    b = _one_hot(hand_sample["B"], 4)
    e = hand_sample["E"].to_numpy(np.float64)
    a, f = hand_sample["A"].to_numpy(), hand_sample["F"].to_numpy()
    # A, B, E and F are pairwise d-separated given nothing.
    assert _max_abs_corr(a, b) < tol
    assert abs(np.corrcoef(a, e)[0, 1]) < tol
    assert abs(np.corrcoef(a, f)[0, 1]) < tol
    assert _max_abs_corr(e, b) < tol


def test_implied_dependences_hold(hand_sample):
    c, d = hand_sample["C"].to_numpy(), hand_sample["D"].to_numpy()
    # Monotone edge functions: each continuous parent is correlated with its child.
    assert abs(np.corrcoef(hand_sample["A"], c)[0, 1]) > 0.2
    assert abs(np.corrcoef(c, d)[0, 1]) > 0.2
    # A categorical parent shifts the child's mean: correlation ratio eta².
    groups = hand_sample.groupby("B")["C"].mean()
    eta2 = (
        np.average((groups - c.mean()) ** 2, weights=hand_sample["B"].value_counts().sort_index())
        / c.var()
    )
    assert eta2 > 0.05
    # The binary parent E moves the ordinal child D.
    means = hand_sample.groupby("E")["D"].mean()
    assert abs(means[1] - means[0]) > 0.2


def test_real_variables_are_predictable_from_their_markov_blanket():
    data = make_mixed_data(15, 20_000, seed=5)
    moral, frame = data.graph, data.frame
    train, test = frame.iloc[:15_000], frame.iloc[15_000:]
    scores = {}
    for v in data.continuous:
        if data.kinds[v] != "real" or not moral.neighbors(v):
            continue
        nb = list(moral.neighbors(v))

        def features(part: pd.DataFrame, nb=nb) -> np.ndarray:
            cols = [
                _one_hot(part[u], data.cardinalities[u])
                if u in data.cardinalities
                else part[[u]].to_numpy()
                for u in nb
            ]
            return np.hstack(cols)

        model = LinearRegression().fit(features(train), train[v])
        resid = test[v].to_numpy() - model.predict(features(test))
        scores[v] = 1.0 - resid.var() / test[v].var()
    assert len(scores) >= 5
    assert min(scores.values()) > 0.15  # every real variable beats predicting the mean
    assert 0.3 <= float(np.median(list(scores.values()))) <= 0.8


def test_dataset_graph_is_the_moral_graph():
    scm = MixedSCM(HAND_DAG, HAND_KINDS, seed=3)
    data = scm.dataset(500, seed=0)
    assert isinstance(data, MixedDataset)
    assert data.graph is not None
    np.testing.assert_array_equal(data.graph.marks, moral_graph(HAND_DAG).marks)
    assert data.categorical == ("B", "E")
    assert data.continuous == ("A", "C", "D", "F")
    assert data.cardinalities == {"B": 4, "E": 2}
    assert scm.thresholds("D").shape == (4,)
    assert np.all(np.diff(scm.thresholds("D")) > 0)
    with pytest.raises(UnknownVariableError, match="'A' is real"):
        scm.thresholds("A")


def test_sampling_50k_rows_30_variables():
    dag = erdos_renyi_dag(30, seed=0, edges_per_node=1.0)
    scm = MixedSCM.random(dag, seed=0)
    frame = scm.sample(50_000, seed=1)
    assert frame.shape == (50_000, 30)
    assert not frame.isna().any().any()


def test_make_mixed_data_defaults():
    data = make_mixed_data(seed=0)
    assert data.frame.shape == (50_000, 30)
    assert data.name == "mixed-er30"
    assert pd.Series(data.kinds).value_counts().to_dict() == {
        "real": 15,
        "categorical": 9,
        "binary": 3,
        "ordinal": 3,
    }
    assert data.graph is not None and data.graph.names == data.names
    assert set(data.graph.marks[data.graph.adjacency()].tolist()) == {TAIL}
    pd.testing.assert_frame_equal(
        make_mixed_data(10, 1_000, seed=3).frame, make_mixed_data(10, 1_000, seed=3).frame
    )


def test_generator_rejects_bad_settings():
    with pytest.raises(UnknownVariableError, match=r"lacks variables \['F'\]"):
        MixedSCM(HAND_DAG, {k: v for k, v in HAND_KINDS.items() if k != "F"}, seed=0)
    with pytest.raises(ConfigError, match="variable 'A': unknown kind 'count'"):
        MixedSCM(HAND_DAG, {**HAND_KINDS, "A": "count"}, seed=0)
    with pytest.raises(ConfigError, match=r"sum to 1\.3 > 1"):
        MixedSCM.random(HAND_DAG, categorical_fraction=0.6, binary_fraction=0.6, seed=0)
    with pytest.raises(ConfigError, match="n_categories"):
        MixedSCM(HAND_DAG, HAND_KINDS, seed=0, n_categories=2)
    with pytest.raises(SampleSizeError):
        MixedSCM(HAND_DAG, HAND_KINDS, seed=0).sample(0, seed=0)


# ------------------------------------------------------------------ MixedDataset
def _frame() -> pd.DataFrame:
    return pd.DataFrame({"x": [0.5, 1.0, -2.0], "c": np.array([0, 2, 1], dtype=np.int64)})


def test_dataset_validation_errors():
    kinds, cards = {"x": "real", "c": "categorical"}, {"c": 3}
    MixedDataset(_frame(), kinds, cards)  # valid
    with pytest.raises(UnknownVariableError, match="column 'c' has no kind"):
        MixedDataset(_frame(), {"x": "real"}, cards)
    with pytest.raises(DataError, match="column 'x': unknown kind 'count'"):
        MixedDataset(_frame(), {"x": "count", "c": "categorical"}, cards)
    with pytest.raises(DataError, match=r"column 'c' has code 2 outside 0\.\.1 in 1 rows"):
        MixedDataset(_frame(), kinds, {"c": 2})
    with pytest.raises(DataError, match="binary column 'c' has cardinality 3"):
        MixedDataset(_frame(), {"x": "real", "c": "binary"}, cards)
    nan = _frame().assign(x=[0.0, np.nan, 1.0])
    with pytest.raises(NonFiniteDataError, match="column 'x' has 1 NaN"):
        MixedDataset(nan, kinds, cards)
    with pytest.raises(DataError, match="column 'c' has dtype float64"):
        MixedDataset(_frame().astype({"c": float}), kinds, cards)
    with pytest.raises(DataError, match="needs a cardinality"):
        MixedDataset(_frame(), kinds, {})
    with pytest.raises(DataError, match="graph's variables"):
        MixedDataset(_frame(), kinds, cards, graph=Graph.empty(["x", "y"]))
    with pytest.raises(DataError, match="one id per row"):
        MixedDataset(_frame(), kinds, cards, groups=np.arange(2))
