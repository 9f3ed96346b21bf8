"""FedNGM building blocks: encoding, structure penalty, inference, sampling, merge."""

import numpy as np
import pandas as pd
import pytest
import torch

from fedstruct.errors import DataError, ProtocolError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.undirected import undirected
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.inference import infer
from fedstruct.methods.fedngm.metrics import covariance_error
from fedstruct.methods.fedngm.model import NGM, fit_ngm, revealed_graph
from fedstruct.methods.fedngm.network import NeuralView, group_matrix, variable_paths
from fedstruct.methods.fedngm.sampling import colour_classes, gibbs_sample
from fedstruct.methods.fedngm.schema import Schema, pool_summaries, summarise
from fedstruct.methods.fedngm.server import common_variables, sample_counts
from fedstruct.methods.fedngm.structure import merge_graphs
from fedstruct.methods.fedngm.train import Structure

KINDS = {"a": "real", "b": "real", "c": "categorical", "o": "ordinal"}


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(2.0, 3.0, n),
            "b": rng.normal(size=n),
            "c": rng.choice([3, 5, 9], size=n),
            "o": rng.integers(0, 4, size=n).astype(float),
        }
    )


def test_pooled_schema_equals_the_schema_of_the_pooled_rows():
    df = _frame()
    halves = [summarise(df.iloc[:150], KINDS), summarise(df.iloc[150:], KINDS)]
    pooled, whole = pool_summaries(halves), Schema.from_frame(df, KINDS)
    for p, w in zip(pooled.variables, whole.variables, strict=True):
        assert p.categories == w.categories
        assert p.mean == pytest.approx(w.mean, abs=1e-12)
        assert p.std == pytest.approx(w.std, abs=1e-12)
        assert p.frequencies == pytest.approx(w.frequencies)
    assert pooled.spec("a").std == pytest.approx(df.a.std(ddof=0))
    assert pooled.spec("o").levels == (0.0, 1.0, 2.0, 3.0)


def test_encode_decode_round_trip_and_unseen_category():
    df = _frame()
    schema = Schema.from_frame(df, KINDS)
    x = schema.encode(df)
    assert x.shape == (400, 1 + 1 + 3 + 1)
    assert x[:, 2:5].sum(axis=1).tolist() == [1.0] * 400
    back = schema.decode(x)
    np.testing.assert_allclose(back.a, df.a, atol=1e-5)
    assert back.c.tolist() == df.c.tolist()
    assert back.o.tolist() == df.o.tolist()
    bad = df.head(3).assign(c=[3, 4, 5])
    with pytest.raises(DataError, match="'c' has value 4, never seen"):
        schema.encode(bad)


def test_ngm_structure_forbids_non_edges_and_self_paths():
    s = Structure.for_graph(np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]], bool), 0.5)
    assert s.forbidden.tolist() == [[1, 0, 1], [0, 1, 1], [1, 1, 1]]
    paths = torch.arange(9, dtype=torch.float32).reshape(3, 3)
    assert float(s.value(paths)) == pytest.approx(0.5 * (0 + 2 + 4 + 5 + 6 + 7 + 8))
    ngr = Structure.revealer(3, 1.0, 9.0)
    # diagonal 0+4+8, off-diagonal of the symmetrised matrix 24, scaled 9/3²
    assert float(ngr.value(paths)) == pytest.approx(12 + 24)


def test_variable_paths_sum_column_blocks():
    view = NeuralView(3, [2], seed=0)
    with torch.no_grad():
        view.layers[0].weight.copy_(torch.tensor([[1.0, -2.0, 0.0], [0.0, 1.0, 3.0]]))
        view.layers[1].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, -1.0], [2.0, 2.0]]))
    p = view.path_matrix().detach().numpy()
    np.testing.assert_allclose(p, [[1, 2, 0], [0, 1, 3], [2, 6, 6]])
    var = variable_paths(view, group_matrix([1, 2])).detach().numpy()  # a | (b, c)
    np.testing.assert_allclose(var, [[1, 2], [2, 16]])


def _linear_view(rho: float) -> NeuralView:
    """A view computing f(a, b) = (rho b, rho a) exactly (ReLU pairs carry signs)."""
    view = NeuralView(2, [4], seed=0)
    with torch.no_grad():
        view.layers[0].weight.copy_(torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]]))
        view.layers[0].bias.zero_()
        view.layers[1].weight.copy_(torch.tensor([[0, 0, rho, -rho], [rho, -rho, 0, 0]]))
        view.layers[1].bias.zero_()
    return view


def _gaussian_schema():
    return Schema.from_frame(
        pd.DataFrame({"a": [-1.0, 1.0], "b": [-1.0, 1.0]}), {"a": "real", "b": "real"}
    )


@pytest.mark.parametrize("method", ["message", "gradient"])
def test_inference_recovers_the_conditional_mean(method):
    view, schema = _linear_view(0.5), _gaussian_schema()
    x = np.array([[2.0, 0.0], [-1.0, 0.0]], np.float32)
    out = infer(view, schema, x, np.array([True, False]), method=method, steps=300)
    np.testing.assert_allclose(out[:, 1], [1.0, -0.5], atol=1e-3)
    np.testing.assert_array_equal(out[:, 0], x[:, 0])


def test_gibbs_reproduces_a_known_gaussian():
    """Conditionals of a standard bivariate normal with correlation 0.6 are exact here;
    the sampler must return its covariance."""
    rho = 0.6
    view, schema = _linear_view(rho), _gaussian_schema()
    residual = np.full(2, np.sqrt(1 - rho**2), np.float32)
    adjacency = np.array([[0, 1], [1, 0]], bool)
    x = gibbs_sample(view, schema, adjacency, residual, 20000, burn_in=30, seed=0)
    cov = np.cov(x.T)
    np.testing.assert_allclose(cov, [[1, rho], [rho, 1]], atol=0.03)
    # without the residual noise the chain collapses onto its mean: a test that can fail
    flat = gibbs_sample(view, schema, adjacency, np.zeros(2, np.float32), 2000, burn_in=30, seed=0)
    assert np.cov(flat.T)[0, 0] < 1e-3


def test_colour_classes_separate_neighbours():
    adj = np.zeros((4, 4), bool)
    for i, j in [(0, 1), (1, 2), (2, 3)]:
        adj[i, j] = adj[j, i] = True
    classes = colour_classes(adj)
    assert sorted(v for cls in classes for v in cls) == [0, 1, 2, 3]
    assert len(classes) == 2
    for cls in classes:
        assert not adj[np.ix_(cls, cls)].any()


def _chain(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = np.tanh(2 * a) + 0.4 * rng.normal(size=n)
    c = (b + 0.4 * rng.normal(size=n) > 0).astype(int)
    d = rng.normal(size=n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


CHAIN_KINDS = {"a": "real", "b": "real", "c": "binary", "d": "real"}


def test_fitted_ngm_predicts_beyond_the_mean_and_follows_its_graph():
    df = _chain()
    schema = Schema.from_frame(df, CHAIN_KINDS)
    truth = np.zeros((4, 4), bool)
    truth[0, 1] = truth[1, 0] = truth[1, 2] = truth[2, 1] = True
    cfg = FedNGMConfig(epochs=25)
    model, info = fit_ngm(schema, [(schema.encode(df.iloc[:5000]), 1.0)], truth, cfg, seed=0)
    test = df.iloc[5000:]
    pred = model.predict(test, "b")
    assert np.abs(pred - test.b).mean() < 0.6 * np.abs(test.b - df.b[:5000].mean()).mean()
    paths = model.path_strength()
    allowed = paths[truth].min()
    forbidden = paths[~truth].max()  # includes every self-path and d's paths
    assert forbidden < 0.2 * allowed
    assert info["best_epoch"] >= 1
    samples = model.sample_encoded(5000, seed=1)
    assert covariance_error(samples, schema.encode(df)) < 0.1


def test_ngr_reveals_the_dependent_pairs():
    df = _chain()
    schema = Schema.from_frame(df, CHAIN_KINDS)
    cfg = FedNGMConfig(variant="ngr", epochs=25, ngr_threshold=0.2)
    model, _ = fit_ngm(schema, [(schema.encode(df), 1.0)], None, cfg, seed=0)
    adj = model.adjacency
    expected = np.zeros((4, 4), bool)
    expected[0, 1] = expected[1, 0] = expected[1, 2] = expected[2, 1] = True
    np.testing.assert_array_equal(adj, expected)  # the chain a - b - c; d isolated
    np.testing.assert_array_equal(
        revealed_graph(np.array([[0, 4.0], [0, 0]]), 0.1), [[False, True], [True, False]]
    )


def test_model_round_trips_through_arrays_and_rejects_unknown_evidence():
    df = _chain(800)
    schema = Schema.from_frame(df, CHAIN_KINDS)
    model, _ = fit_ngm(
        schema, [(schema.encode(df), 1.0)], np.ones((4, 4), bool), FedNGMConfig(epochs=2), seed=0
    )
    again = NGM.from_arrays(schema, model.to_arrays())
    np.testing.assert_array_equal(again.predict(df, "a"), model.predict(df, "a"))
    with pytest.raises(UnknownVariableError, match="'zz'"):
        model.predict(df.assign(zz=1.0), "a", evidence=["b", "zz"])
    with pytest.raises(DataError, match="'c' has value 7"):
        model.predict(df.head(2).assign(c=[0, 7]), "a")


def test_merge_keeps_common_nodes_and_every_edge():
    g1 = undirected(
        ["a", "b", "c", "x"],
        np.array([[0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]], bool),
    )
    g2 = undirected(["c", "b", "a"], np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], bool))
    merged = merge_graphs([g1, g2])
    assert merged.names == ("a", "b", "c")
    assert {frozenset((e.a, e.b)) for e in merged.edges()} == {frozenset("ab"), frozenset("bc")}
    assert isinstance(merged, Graph)


def test_common_variables_and_a_client_sharing_nothing():
    assert common_variables({"k1": ["a", "b", "x"], "k2": ["b", "a", "y"]}) == ["a", "b"]
    with pytest.raises(ProtocolError, match="client 'k3' shares no variable"):
        common_variables({"k1": ["a", "b"], "k2": ["a", "b"], "k3": ["z"]})


def test_sample_counts_add_up():
    assert sample_counts({"a": 1, "b": 1, "c": 1}, 10, "equal") == {"a": 4, "b": 3, "c": 3}
    assert sample_counts({"a": 100, "b": 300}, 10, "proportional") == {"a": 3, "b": 7}
    assert sample_counts({"a": 1, "b": 2}, 7, "proportional") == {"a": 2, "b": 5}
