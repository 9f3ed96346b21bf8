"""Tests for fedstruct.graphs.random: ENCO's graph families."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.random import (
    GRAPH_KINDS,
    bidiag_dag,
    chain_dag,
    collider_dag,
    erdos_renyi_dag,
    full_dag,
    jungle_dag,
    random_dag,
)


def pairs(g: Graph) -> set[tuple[str, str]]:
    return {(e.a, e.b) for e in g.edges()}


def test_structured_families_exact():
    assert pairs(chain_dag(4)) == {("X1", "X2"), ("X2", "X3"), ("X3", "X4")}
    assert pairs(bidiag_dag(4)) == {
        ("X1", "X2"),
        ("X2", "X3"),
        ("X3", "X4"),
        ("X1", "X3"),
        ("X2", "X4"),
    }
    assert pairs(collider_dag(4)) == {("X1", "X4"), ("X2", "X4"), ("X3", "X4")}
    assert full_dag(5).n_edges == 10
    assert all(int(a[1:]) < int(b[1:]) for a, b in pairs(full_dag(5)))
    # Jungle, 7 nodes, 2 levels: a binary tree plus grandparent edges.
    assert pairs(jungle_dag(7)) == {
        ("X1", "X2"), ("X1", "X3"),
        ("X1", "X4"), ("X1", "X5"), ("X1", "X6"), ("X1", "X7"),
        ("X2", "X4"), ("X2", "X5"),
        ("X3", "X6"), ("X3", "X7"),
    }  # fmt: skip


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_jungle_matches_tree_descendants(levels):
    d = 20
    g = jungle_dag(d, num_levels=levels, names=[f"N{i}" for i in range(d)])
    adj = g.directed()

    def up(node: int, steps: int) -> int:
        for _ in range(steps):
            if node == 0:
                return -1
            node = (node - 1) // 2
        return node

    expected = np.zeros((d, d), dtype=bool)
    for child in range(d):
        for k in range(1, levels + 1):
            anc = up(child, k)
            depth_child = (child + 1).bit_length() - 1
            if anc >= 0 and depth_child >= k:
                expected[anc, child] = True
    np.testing.assert_array_equal(adj, expected)


def test_shuffle_is_a_relabelling_and_deterministic():
    base = bidiag_dag(8)
    a = bidiag_dag(8, shuffle=True, seed=5)
    b = bidiag_dag(8, shuffle=True, seed=5)
    c = bidiag_dag(8, shuffle=True, seed=6)
    assert a == b
    assert a != base and a != c
    assert a.names == base.names
    # Same structure up to a renaming: the topological order maps base onto a.
    mapping = dict(zip(base.topological_order(), a.topological_order(), strict=True))
    assert {(mapping[x], mapping[y]) for x, y in pairs(base)} == pairs(a)
    with pytest.raises(ConfigError, match="needs a seed"):
        chain_dag(4, shuffle=True)


def test_erdos_renyi_expected_edges_and_order():
    d = 20
    counts = [erdos_renyi_dag(d, seed=s, edges_per_node=2).n_edges for s in range(200)]
    # ER-2 on 20 nodes: p = 4/19, 40 expected edges; the mean of 200 draws has sd ~0.4.
    assert abs(np.mean(counts) - 40) < 2.0
    g = erdos_renyi_dag(d, seed=1, edges_per_node=2)
    assert all(int(a[1:]) < int(b[1:]) for a, b in pairs(g))
    assert g == erdos_renyi_dag(d, seed=1, edges_per_node=2)
    assert g != erdos_renyi_dag(d, seed=2, edges_per_node=2)
    shuffled = erdos_renyi_dag(d, seed=1, edges_per_node=2, shuffle=True)
    assert shuffled.is_dag() and shuffled != g


def test_erdos_renyi_draw_rule():
    # Without shuffling, edge i->j (i<j) is present iff the (i, j) uniform draw < p.
    u = np.random.default_rng(11).random((6, 6))
    g = erdos_renyi_dag(6, seed=11, edge_prob=0.4)
    np.testing.assert_array_equal(g.directed(), np.triu(u < 0.4, 1))


def test_erdos_renyi_extremes_and_options():
    assert erdos_renyi_dag(6, seed=0, edge_prob=1.0) == full_dag(6)
    assert erdos_renyi_dag(6, seed=0, edge_prob=0.0).n_edges == 0
    linked = erdos_renyi_dag(9, seed=0, edge_prob=0.0, connect_isolated=True)
    assert all(linked.neighbors(v) for v in linked.names)
    assert linked.is_dag()
    capped = erdos_renyi_dag(10, seed=0, edge_prob=1.0, max_parents=2)
    assert max(len(capped.parents(v)) for v in capped.names) == 2
    assert capped.n_edges == 1 + 2 * 8


def test_erdos_renyi_bad_parameters():
    with pytest.raises(ConfigError, match="exactly one"):
        erdos_renyi_dag(5, seed=0)
    with pytest.raises(ConfigError, match="at most 2 edges per node"):
        erdos_renyi_dag(5, seed=0, edges_per_node=3)
    with pytest.raises(ConfigError, match=r"edge_prob is 1\.5"):
        erdos_renyi_dag(5, seed=0, edge_prob=1.5)
    with pytest.raises(ConfigError, match="3 names for 4 nodes"):
        chain_dag(4, names=["a", "b", "c"])


def test_random_dag_dispatch():
    assert random_dag("chain", 3) == chain_dag(3)
    assert random_dag("jungle", 9, num_levels=1) == jungle_dag(9, num_levels=1)
    assert random_dag("random", 8, seed=4, edges_per_node=1) == erdos_renyi_dag(
        8, seed=4, edges_per_node=1
    )
    named = random_dag("collider", 3, names=["a", "b", "c"])
    assert named.parents("c") == ("a", "b")
    for kind in GRAPH_KINDS:
        extra = {"edge_prob": 0.5} if kind == "random" else {}
        assert random_dag(kind, 6, seed=0, shuffle=True, **extra).is_dag()
    with pytest.raises(ConfigError, match="unknown graph kind 'tree'; valid graph kinds: bidiag"):
        random_dag("tree", 3)
    with pytest.raises(ConfigError, match=r"\['num_levels'\] do not apply to 'chain'"):
        random_dag("chain", 3, num_levels=2)
