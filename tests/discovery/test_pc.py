"""PC: the exact CPDAG with an oracle (brute force and causal-learn references), Meek rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.citest import OracleTest
from fedstruct.discovery.fci import fci
from fedstruct.discovery.pc import meek_rules, pc
from fedstruct.graphs.graph import ARROW, NONE, TAIL, Graph
from fedstruct.graphs.random import random_dag


def v_structures(adj: np.ndarray) -> set[tuple[int, int, int]]:
    """Unshielded colliders ``x -> y <- z`` (``x < z``) of a directed 0/1 matrix."""
    skeleton = adj | adj.T
    out = set()
    for y in range(len(adj)):
        parents = np.flatnonzero(adj[:, y]).tolist()
        for x, z in itertools.combinations(parents, 2):
            if not skeleton[x, z]:
                out.add((x, y, z))
    return out


def brute_force_cpdag(dag: Graph) -> Graph:
    """Verma & Pearl (1990): the DAGs with the same skeleton and v-structures form the
    Markov equivalence class; an edge is directed in the CPDAG iff all of them agree."""
    adj = dag.directed()
    target = v_structures(adj)
    edges = list(zip(*np.nonzero(np.triu(adj | adj.T)), strict=True))
    seen_forward = np.zeros(len(edges), dtype=int)
    members = 0
    for flips in itertools.product([False, True], repeat=len(edges)):
        cand = np.zeros_like(adj)
        for (i, j), flip in zip(edges, flips, strict=True):
            cand[(j, i) if flip else (i, j)] = True
        if v_structures(cand) != target or not Graph.from_dag_matrix(dag.names, cand).is_acyclic():
            continue
        members += 1
        seen_forward += [int(cand[i, j]) for i, j in edges]
    marks = np.zeros(adj.shape, dtype=np.int8)
    for (i, j), forward in zip(edges, seen_forward, strict=True):
        if forward == members:
            marks[i, j], marks[j, i] = ARROW, TAIL
        elif forward == 0:
            marks[j, i], marks[i, j] = ARROW, TAIL
        else:
            marks[i, j] = marks[j, i] = TAIL
    return Graph(dag.names, marks)


def causal_learn_cpdag(dag: Graph) -> Graph:
    """causal-learn's dag2cpdag (Chickering's compelled-edge labelling) as a Graph."""
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.utils.DAG2CPDAG import dag2cpdag

    nodes = [GraphNode(n) for n in dag.names]
    cl_dag = Dag(nodes)
    for i, j in np.argwhere(dag.directed()).tolist():
        cl_dag.add_directed_edge(nodes[i], nodes[j])
    g = dag2cpdag(cl_dag).graph  # g[i, j] = endpoint at i: -1 tail, 1 arrow
    marks = np.where(g.T == -1, TAIL, np.where(g.T == 1, ARROW, NONE)).astype(np.int8)
    return Graph(dag.names, marks)


def test_pc_oracle_random_dags_match_brute_force():
    undirected = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        dag = random_dag("random", int(rng.integers(4, 8)), seed=seed, edge_prob=0.45)
        if dag.n_edges > 12:
            continue
        result = pc(OracleTest(dag), alpha=0.5)
        assert result.graph == brute_force_cpdag(dag), seed
        assert result.algorithm == "pc"
        undirected += int(((result.graph.marks == TAIL) & (result.graph.marks.T == TAIL)).any())
    assert undirected > 10  # the references are not all fully directed


@pytest.mark.parametrize("name", ["asia", "sachs", "child", "insurance", "alarm", "child3"])
def test_pc_oracle_bundled_networks_match_causal_learn(name):
    dag = load_network(name).graph
    result = pc(OracleTest(dag), alpha=0.5)
    assert result.graph == causal_learn_cpdag(dag)


def test_meek_rules_each_rule():
    # R1: a -> b - c, a and c not adjacent.
    m = Graph.from_edges("abc", ["a --> b", "b --- c"]).marks.copy()
    assert meek_rules(m) == {"R1": 1, "R2": 0, "R3": 0}
    assert Graph("abc", m) == Graph.from_edges("abc", ["a --> b", "b --> c"])
    # R2: a -> c -> b and a - b.
    m = Graph.from_edges("abc", ["a --> c", "c --> b", "a --- b"]).marks.copy()
    assert meek_rules(m) == {"R1": 0, "R2": 1, "R3": 0}
    assert Graph("abc", m).edge("a", "b") == Graph.from_edges("ab", ["a --> b"]).edge("a", "b")
    # R3: c -> b <- d, a - c, a - d, a - b, c and d not adjacent.
    edges = ["c --> b", "d --> b", "a --- c", "a --- d", "a --- b"]
    m = Graph.from_edges("abcd", edges).marks.copy()
    assert meek_rules(m) == {"R1": 0, "R2": 0, "R3": 1}
    assert Graph("abcd", m).edge("a", "b").mark_b == ARROW
    # Nothing applies to an undirected triangle.
    m = Graph.from_edges("abc", ["a --- b", "b --- c", "a --- c"]).marks.copy()
    assert meek_rules(m) == {"R1": 0, "R2": 0, "R3": 0}


def test_pc_on_data_shares_fci_adjacency_search():
    net = load_network("child")
    test = make_ci_test(net.sample(1500, seed=4), cardinalities=dict(net.cardinalities))
    result = pc(test)
    marks = result.graph.marks
    assert set(np.unique(marks).tolist()) <= {NONE, TAIL, ARROW}
    assert not ((marks == ARROW) & (marks.T == ARROW)).any()
    assert result.graph.is_acyclic()
    assert np.array_equal(result.skeleton, result.graph.adjacency())
    assert np.array_equal(fci(test, possible_dsep=False).skeleton, result.skeleton)
    for i, j in result.sepsets:
        assert result.pvalues[i, j] > 0.05
