"""Synthetic generators: ENCO's categorical SCM, linear-Gaussian SCM, random discrete networks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import fedstruct.data.scm as scm_module
from fedstruct.data.scm import (
    CategoricalSCM,
    orthogonal_matrix,
    random_discrete_network,
)
from fedstruct.errors import CyclicGraphError, DataError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import Graph


def diamond() -> Graph:
    """A -> C <- B, C -> D."""
    return Graph.from_edges(["A", "B", "C", "D"], [("A", "C"), ("B", "C"), ("C", "D")])


def assert_frequencies(values: np.ndarray, expected: np.ndarray, n_se: float = 4.0) -> None:
    freq = np.bincount(values, minlength=expected.size) / values.size
    se = np.sqrt(expected * (1 - expected) / values.size)
    assert np.all(np.abs(freq - expected) <= n_se * se + 1e-3), (freq, expected)


# ---------------------------------------------------------- CategoricalSCM
@pytest.mark.parametrize(("rows", "cols"), [(8, 48), (48, 10), (12, 12)])
def test_orthogonal_matrix_has_orthonormal_rows_or_columns(rows: int, cols: int) -> None:
    m = orthogonal_matrix(rows, cols, 2.5, np.random.default_rng(0))
    assert m.shape == (rows, cols)
    small = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(small, 6.25 * np.eye(min(rows, cols)), atol=1e-10)


def test_categorical_scm_defaults_follow_enco() -> None:
    scm = CategoricalSCM(diamond(), seed=0)
    assert dict(scm.cardinalities) == {v: 10 for v in "ABCD"}
    assert scm.states["C"] == tuple(str(i) for i in range(10))
    assert scm.parents("C") == ("A", "B")
    p = scm.conditional("C", [[0, 0], [3, 7], [9, 9]])
    assert p.shape == (3, 10)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # Random networks with gain 2.5 give clearly different conditionals per parent value.
    assert np.abs(p[0] - p[1]).max() > 0.05
    root = scm.conditional("A")
    assert root.shape == (10,) and root.min() > 0
    assert root.sum() == pytest.approx(1.0)


def test_categorical_scm_is_deterministic_in_its_seed() -> None:
    a, b, c = (CategoricalSCM(diamond(), seed=s) for s in (1, 1, 2))
    np.testing.assert_array_equal(a.conditional("D", [[4]]), b.conditional("D", [[4]]))
    assert not np.allclose(a.conditional("D", [[4]]), c.conditional("D", [[4]]))
    pd.testing.assert_frame_equal(a.sample(300, seed=5), b.sample(300, seed=5))
    assert not a.sample(300, seed=5).equals(a.sample(300, seed=6))


def test_categorical_scm_samples_follow_its_conditionals() -> None:
    scm = CategoricalSCM(diamond(), seed=3, n_categories=3)
    data = scm.sample(60_000, seed=1)
    assert list(data.columns) == ["A", "B", "C", "D"]
    assert data.dtypes.eq(np.int64).all()
    assert_frequencies(data["A"].to_numpy(), scm.conditional("A"))
    for a, b in itertools.product(range(3), range(3)):
        rows = (data["A"] == a).to_numpy() & (data["B"] == b).to_numpy()
        if rows.sum() > 2000:
            assert_frequencies(data["C"].to_numpy()[rows], scm.conditional("C", [[a, b]])[0])
    # D's marginal = sum over the exact joint of the tabulated network (brute force).
    net = scm.to_network()
    p_d = np.zeros(3)
    for a, b, c in itertools.product(range(3), repeat=3):
        p_abc = net.cpt("A").table[a] * net.cpt("B").table[b] * net.cpt("C").table[a, b, c]
        p_d += p_abc * net.cpt("D").table[c]
    assert_frequencies(data["D"].to_numpy(), p_d)


def test_to_network_tabulates_the_conditionals() -> None:
    scm = CategoricalSCM(diamond(), seed=4, n_categories=[2, 3, 4, 2])
    net = scm.to_network()
    assert dict(net.cardinalities) == {"A": 2, "B": 3, "C": 4, "D": 2}
    assert net.cpt("C").table.shape == (2, 3, 4)
    np.testing.assert_allclose(net.cpt("C").table[1, 2], scm.conditional("C", [[1, 2]])[0])
    with pytest.raises(DataError, match="6 parent configurations"):
        scm.to_network(max_configurations=5)


def test_tabulated_and_per_row_conditionals_agree(monkeypatch) -> None:
    scm = CategoricalSCM(diamond(), seed=6)
    cached = scm.sample(5000, seed=8)
    monkeypatch.setattr(scm_module, "TABULATE_LIMIT", 0)
    per_row = CategoricalSCM(diamond(), seed=6).sample(5000, seed=8)
    assert (cached.to_numpy() == per_row.to_numpy()).mean() > 0.999


def test_categorical_scm_on_a_full_graph_with_huge_parent_sets() -> None:
    names = [f"X{i}" for i in range(12)]
    full = Graph.from_dag_matrix(names, np.triu(np.ones((12, 12), dtype=bool), 1))
    scm = CategoricalSCM(full, seed=0)
    data = scm.sample(500, seed=1)
    assert data.shape == (500, 12) and data.to_numpy().max() <= 9
    with pytest.raises(DataError, match="'X6' has 1000000 parent configurations"):
        scm.to_network()


def test_categorical_interventions() -> None:
    scm = CategoricalSCM(diamond(), seed=5, n_categories=3)
    n = 60_000
    obs = scm.sample(n, seed=2)
    do = scm.sample(n, seed=2, interventions={"C": "uniform"})
    c, a = do["C"].to_numpy(), do["A"].to_numpy()
    assert_frequencies(c, np.full(3, 1 / 3))
    for s in range(3):
        assert_frequencies(c[a == s], np.full(3, 1 / 3))
    assert np.array_equal(obs["A"], do["A"]) and np.array_equal(obs["B"], do["B"])
    expected_d = scm.conditional("D", [[0], [1], [2]]).mean(axis=0)
    assert_frequencies(do["D"].to_numpy(), expected_d)
    fixed = scm.sample(5000, seed=3, interventions={"C": "2"})
    assert (fixed["C"] == 2).all()
    assert_frequencies(fixed["D"].to_numpy(), scm.conditional("D", [[2]])[0])


def test_categorical_scm_errors() -> None:
    cyclic = Graph.from_edges(["A", "B", "C"], [("A", "B"), ("B", "C"), ("C", "A")])
    with pytest.raises(CyclicGraphError):
        CategoricalSCM(cyclic, seed=0)
    with pytest.raises(GraphError, match="non-directed edge"):
        CategoricalSCM(Graph.from_edges(["A", "B"], ["A --- B"]), seed=0)
    with pytest.raises(DataError, match="'B' needs an integer number of categories >= 2"):
        CategoricalSCM(diamond(), seed=0, n_categories=[3, 1, 3, 3])
    scm = CategoricalSCM(diamond(), seed=0, n_categories=3)
    with pytest.raises(DataError, match=r"shape \(n, 2\)"):
        scm.conditional("C", [[0]])
    with pytest.raises(DataError, match="outside"):
        scm.conditional("C", [[0, 3]])
    with pytest.raises(UnknownVariableError, match="'E'"):
        scm.sample(5, seed=0, interventions={"E": 0})
    with pytest.raises(DataError, match="'7' for 'C'"):
        scm.sample(5, seed=0, interventions={"C": "7"})


# ------------------------------------------------- random discrete network
def test_random_discrete_network_shapes_and_determinism() -> None:
    g = diamond()
    net = random_discrete_network(g, seed=1, cardinality={"A": 2, "B": 3, "C": 2, "D": 4})
    assert net.cpt("C").parents == ("A", "B")
    assert net.cpt("C").table.shape == (2, 3, 2)
    assert net.states["D"] == ("0", "1", "2", "3")
    assert net.graph == g
    for v in net.names:
        np.testing.assert_allclose(net.cpt(v).table.sum(axis=-1), 1.0)
    same = random_discrete_network(g, seed=1, cardinality={"A": 2, "B": 3, "C": 2, "D": 4})
    np.testing.assert_array_equal(same.cpt("C").table, net.cpt("C").table)


def test_random_discrete_network_alpha_controls_peakedness() -> None:
    g = Graph.from_edges(["A", "B", "C", "D"], [("A", "D"), ("B", "D"), ("C", "D")])
    peaky = random_discrete_network(g, seed=0, cardinality=3, alpha=0.05).cpt("D").table
    flat = random_discrete_network(g, seed=0, cardinality=3, alpha=50.0).cpt("D").table
    assert peaky.max(axis=-1).mean() > 0.85
    assert flat.max(axis=-1).mean() < 0.45


def test_random_discrete_network_errors() -> None:
    with pytest.raises(DataError, match="alpha must be positive"):
        random_discrete_network(diamond(), seed=0, alpha=0.0)
    with pytest.raises(DataError, match="got 2 cardinalities for 4 variables"):
        random_discrete_network(diamond(), seed=0, cardinality=[2, 2])
