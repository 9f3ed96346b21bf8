"""Tests for fedstruct.graphs.projection: DAG projection at least-supported edges."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import GraphError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.projection import break_cycles, project_to_dag

NAMES = ["A", "B", "C", "D"]


def strength(pairs: dict[tuple[str, str], float], names=NAMES) -> np.ndarray:
    idx = {n: i for i, n in enumerate(names)}
    s = np.zeros((len(names), len(names)))
    for (a, b), v in pairs.items():
        s[idx[a], idx[b]] = v
    return s


def edges(g: Graph) -> set[str]:
    return {str(e) for e in g.edges()}


def test_single_cycle_loses_its_weakest_edge():
    support = {("A", "B"): 5, ("B", "C"): 2, ("C", "A"): 4, ("C", "D"): 1}
    g = Graph.from_edges(NAMES, list(support))
    res = break_cycles(g, strength(support))
    assert edges(res.dag) == {"A --> B", "C --> A", "C --> D"}
    assert res.removed == (("B", "C", 2.0),)
    assert res.dag.is_dag()


def test_two_cycles_sharing_an_edge():
    # Cycles A->B->C->A and B->C->D->B; B->C is the weakest of both.
    support = {("A", "B"): 4, ("B", "C"): 1, ("C", "A"): 3, ("C", "D"): 5, ("D", "B"): 2}
    g = Graph.from_edges(NAMES, list(support))
    res = break_cycles(g, strength(support))
    assert res.removed == (("B", "C", 1.0),)
    assert edges(res.dag) == {"A --> B", "C --> A", "C --> D", "D --> B"}


def test_restore_puts_back_edges_whose_cycle_was_broken_later():
    # DFS from A finds A->B->C->A first and deletes A->B (1); then B->C->D->B
    # loses B->C (2), which also breaks the first cycle, so A->B can come back.
    support = {("A", "B"): 1, ("B", "C"): 2, ("C", "A"): 5, ("C", "D"): 5, ("D", "B"): 5}
    g = Graph.from_edges(NAMES, list(support))
    greedy = break_cycles(g, strength(support), restore=False)
    assert greedy.removed == (("A", "B", 1.0), ("B", "C", 2.0))
    assert edges(greedy.dag) == {"C --> A", "C --> D", "D --> B"}
    res = break_cycles(g, strength(support))
    assert res.removed == (("B", "C", 2.0),)
    assert edges(res.dag) == {"A --> B", "C --> A", "C --> D", "D --> B"}
    assert project_to_dag(g, strength(support)) == res.dag


def test_ties_remove_the_edge_with_smallest_position():
    support = {("A", "B"): 1, ("B", "C"): 1, ("C", "A"): 1}
    g = Graph.from_edges(NAMES, list(support))
    assert break_cycles(g, strength(support)).removed == (("A", "B", 1.0),)
    # Same graph, other name order: now C comes first, so C->A is removed.
    order = ["C", "B", "A", "D"]
    g2 = g.restrict(order)
    assert break_cycles(g2, strength(support, order)).removed == (("C", "A", 1.0),)


def test_acyclic_graph_is_unchanged():
    g = Graph.from_edges(NAMES, [("A", "B"), ("B", "C"), ("A", "C")])
    res = break_cycles(g, np.zeros((4, 4)))
    assert res.dag == g and res.removed == ()


def test_rejects_non_directed_graph_and_bad_strength():
    with pytest.raises(
        GraphError, match="DAG projection must be directed but has the non-directed edge 'A o-> B'"
    ):
        project_to_dag(Graph.from_edges(NAMES, ["A o-> B"]), np.zeros((4, 4)))
    with pytest.raises(GraphError, match=r"shape \(3, 3\)"):
        project_to_dag(Graph.from_edges(NAMES, [("A", "B")]), np.zeros((3, 3)))


def test_large_random_graph_becomes_a_dag_of_its_own_edges():
    rng = np.random.default_rng(3)
    n = 100
    upper = np.triu(rng.random((n, n)) < 0.2, 1)
    flip = rng.random((n, n)) < 0.5
    adj = (upper & ~flip) | (upper & flip).T
    names = [f"V{i}" for i in range(n)]
    g = Graph.from_dag_matrix(names, adj)
    s = rng.random((n, n))
    res = break_cycles(g, s)
    assert res.dag.is_dag()
    kept = res.dag.directed()
    assert not (kept & ~adj).any()
    assert kept.sum() + len(res.removed) == adj.sum()
    idx = {v: i for i, v in enumerate(names)}
    # Each removed edge closes a cycle in the result (else restore would keep it).
    for a, b, value in res.removed:
        i, j = idx[a], idx[b]
        assert value == s[i, j]
        assert b in res.dag.ancestors(a)
