"""d/m-separation: textbook cases and agreement with networkx on random graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from fedstruct.errors import CyclicGraphError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.separation import (
    SeparationOracle,
    ancestor_matrix,
    d_separated,
    m_separated,
)


def _random_dag(rng: np.random.Generator, n: int, p: float) -> Graph:
    lower = np.tril(rng.random((n, n)) < p, -1)
    perm = rng.permutation(n)
    return Graph.from_dag_matrix([f"V{i}" for i in range(n)], lower[np.ix_(perm, perm)].T)


def _random_mixed(rng: np.random.Generator, n: int, p: float, q: float) -> Graph:
    """A random DAG plus random bidirected edges between non-adjacent pairs."""
    dag = _random_dag(rng, n, p)
    m = dag.marks.copy()
    for i in range(n):
        for j in range(i + 1, n):
            if m[i, j] == 0 and rng.random() < q:
                m[i, j] = m[j, i] = 2
    return dag.with_marks(m)


def _canonical_dag(graph: Graph) -> nx.DiGraph:
    """Replace every ``x <-> y`` by ``x <- L -> y`` with a fresh node ``L``.

    m-separation among the original nodes equals d-separation in this DAG (each
    bidirected edge is an arrowhead pair whose middle can never be a collider or
    an ancestor of a conditioned original node other than through x and y).
    """
    g = nx.DiGraph()
    g.add_nodes_from(graph.names)
    directed = graph.directed()
    bidirected = np.triu(graph.bidirected(), 1)
    for i, j in zip(*np.nonzero(directed), strict=True):
        g.add_edge(graph.names[i], graph.names[j])
    for k, (i, j) in enumerate(zip(*np.nonzero(bidirected), strict=True)):
        latent = f"__L{k}"
        g.add_edge(latent, graph.names[i])
        g.add_edge(latent, graph.names[j])
    return g


def _random_query(rng: np.random.Generator, n: int) -> tuple[int, int, list[int]]:
    i, j = (int(v) for v in rng.choice(n, 2, replace=False))
    rest = [v for v in range(n) if v not in (i, j)]
    p = rng.uniform(0.0, 0.6)
    return i, j, [v for v in rest if rng.random() < p]


# ----------------------------------------------------------------- textbook cases
def test_chain_fork_collider() -> None:
    chain = Graph.from_edges("ABC", [("A", "B"), ("B", "C")])
    fork = Graph.from_edges("ABC", [("B", "A"), ("B", "C")])
    collider = Graph.from_edges("ABCD", [("A", "C"), ("B", "C"), ("C", "D")])
    for g in (chain, fork):
        assert not d_separated(g, "A", "C")
        assert d_separated(g, "A", "C", "B")
    assert d_separated(collider, "A", "B")
    assert not d_separated(collider, "A", "B", "C")
    assert not d_separated(collider, "A", "B", ["D"])  # conditioned descendant of the collider
    assert d_separated(collider, "A", "D", "C")
    assert not d_separated(collider, ["A", "B"], "D")
    assert d_separated(collider, ["A", "B"], "D", "C")


def test_bidirected_edges_in_a_mag() -> None:
    # A -> B <-> C -> D, B -> E
    g = Graph.from_edges("ABCDE", [("A", "B"), "B <-> C", ("C", "D"), ("B", "E")])
    assert m_separated(g, "A", "C")
    assert not m_separated(g, "A", "C", "B")  # B is a collider
    assert not m_separated(g, "A", "D", "E")  # E is a descendant of the collider B
    assert m_separated(g, "A", "D", ["C", "E"])  # C blocks as a non-collider
    assert not m_separated(g, "E", "C")  # E <- B <-> C: B is a non-collider
    assert m_separated(g, "E", "C", "B")
    # A <-> B <-> C: collider at B only.
    h = Graph.from_edges("ABC", ["A <-> B", "B <-> C"])
    assert m_separated(h, "A", "C")
    assert not m_separated(h, "A", "C", "B")


def test_oracle_counts_and_observed_mapping() -> None:
    # Latent confounder L of X and Y; the oracle over (A, X, Y) answers for the full DAG.
    dag = Graph.from_edges(["A", "X", "L", "Y"], [("A", "X"), ("L", "X"), ("L", "Y")])
    oracle = SeparationOracle(dag, observed=["A", "X", "Y"])
    assert oracle.n_variables == 3
    assert oracle.separated(0, 2)  # A _||_ Y
    assert not oracle.separated(0, 2, [1])  # A -> X <- L -> Y opens given X
    assert not oracle.separated(1, 2, [0])
    assert oracle.n_queries == 3
    assert oracle.separated_sets([0], [2])


def test_ancestor_matrix_is_reflexive_transitive_closure() -> None:
    g = Graph.from_edges("ABCD", [("A", "B"), ("B", "C"), "C <-> D"])
    anc = ancestor_matrix(g)
    expected = np.array(
        [[1, 1, 1, 0], [0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
        dtype=bool,
    )
    assert np.array_equal(anc, expected)


# ------------------------------------------------------------ against networkx
def test_d_separation_matches_networkx_on_random_dags() -> None:
    rng = np.random.default_rng(20240611)
    checked = disagreements = separated = 0
    for _ in range(60):
        n = int(rng.integers(3, 13))
        g = _random_dag(rng, n, float(rng.uniform(0.1, 0.6)))
        reference = _canonical_dag(g)
        oracle = SeparationOracle(g)
        for _ in range(15):
            i, j, z = _random_query(rng, n)
            ours = oracle.separated(i, j, z)
            names = g.names
            theirs = nx.is_d_separator(reference, {names[i]}, {names[j]}, {names[k] for k in z})
            assert d_separated(g, names[i], names[j], [names[k] for k in z]) == ours
            checked += 1
            disagreements += ours != theirs
            separated += ours
    assert checked == 900
    assert disagreements == 0
    assert 100 < separated < 800  # both answers occur often


def test_m_separation_matches_networkx_on_random_mixed_graphs() -> None:
    rng = np.random.default_rng(7)
    checked = disagreements = 0
    for _ in range(50):
        n = int(rng.integers(4, 12))
        g = _random_mixed(rng, n, float(rng.uniform(0.1, 0.5)), float(rng.uniform(0.05, 0.3)))
        reference = _canonical_dag(g)
        oracle = SeparationOracle(g)
        names = g.names
        for _ in range(12):
            i, j, z = _random_query(rng, n)
            ours = oracle.separated(i, j, z)
            theirs = nx.is_d_separator(reference, {names[i]}, {names[j]}, {names[k] for k in z})
            checked += 1
            disagreements += ours != theirs
        # Set-valued queries through the name-level function.
        xs = [names[0], names[1]]
        ys = [names[-1]]
        zs = [names[k] for k in range(2, n - 1) if rng.random() < 0.4]
        assert m_separated(g, xs, ys, zs) == nx.is_d_separator(reference, set(xs), set(ys), set(zs))
    assert checked == 600
    assert disagreements == 0


def test_latent_oracle_matches_networkx_on_full_dag() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(5, 12))
        g = _random_dag(rng, n, 0.35)
        observed = [name for name in g.names if rng.random() < 0.7]
        if len(observed) < 3:
            continue
        oracle = SeparationOracle(g, observed=observed)
        reference = _canonical_dag(g)
        for _ in range(10):
            i, j, z = _random_query(rng, len(observed))
            theirs = nx.is_d_separator(
                reference, {observed[i]}, {observed[j]}, {observed[k] for k in z}
            )
            assert oracle.separated(i, j, z) == theirs


# ------------------------------------------------------------------------ errors
def test_bad_queries_raise() -> None:
    g = Graph.from_edges("ABC", [("A", "B"), ("B", "C")])
    with pytest.raises(UnknownVariableError, match="'Q'"):
        m_separated(g, "A", "Q")
    with pytest.raises(GraphError, match="share the variable 'B'"):
        m_separated(g, ["A", "B"], ["B", "C"])
    with pytest.raises(GraphError, match="x and given share"):
        m_separated(g, "A", "C", ["A"])
    with pytest.raises(GraphError, match="at least one variable"):
        m_separated(g, [], "C")
    pag = Graph.from_edges("ABC", ["A o-> B", ("B", "C")])
    with pytest.raises(GraphError, match="A o-> B"):
        m_separated(pag, "A", "C")
    with pytest.raises(GraphError, match="non-directed edge"):
        d_separated(Graph.from_edges("AB", ["A <-> B"]), "A", "B")
    with pytest.raises(CyclicGraphError):
        d_separated(Graph.from_edges("ABC", [("A", "B"), ("B", "C"), ("C", "A")]), "A", "C")
    oracle = SeparationOracle(g)
    with pytest.raises(UnknownVariableError, match="index 5"):
        oracle.separated(0, 5)
    with pytest.raises(GraphError, match="malformed"):
        oracle.separated(0, 2, [2])
    with pytest.raises(GraphError, match="malformed"):
        oracle.separated(1, 1)
