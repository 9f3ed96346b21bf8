"""RFCI: FCI's PAG without latents, sound marks with latents, its extra tests, scripted cases."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery.citest import CITest, OracleTest, ci_key
from fedstruct.discovery.fci import fci
from fedstruct.discovery.rfci import (
    minimal_discriminating_path,
    rfci,
    unshielded_triples,
)
from fedstruct.graphs.graph import ARROW, NONE, TAIL, Graph
from fedstruct.graphs.pag import dag_to_pag
from fedstruct.graphs.random import random_dag
from fedstruct.graphs.separation import ancestor_matrix


class ScriptedTest(CITest):
    """Independent exactly for the listed facts (p-value given), dependent otherwise."""

    def __init__(self, names, facts):
        super().__init__(names, "scripted", None)
        self.facts = {ci_key(i, j, z): p for (i, j, z), p in facts.items()}

    def _compute(self, i, j, z):
        return self.facts.get((i, j, z), 0.001), False


def assert_sound(pag: Graph, dag: Graph, latent: list[str]) -> None:
    """Every arrowhead and tail of ``pag`` holds in ``dag`` (Colombo et al. 2012, §3):
    an arrowhead at ``j`` on ``i *-> j`` means ``j`` is not an ancestor of ``i``, a tail at
    ``j`` means ``j`` is an ancestor of ``i``; and no adjacency of the true MAG is missing."""
    anc = ancestor_matrix(dag)
    idx = dag.indices(pag.names)
    anc = anc[np.ix_(idx, idx)]  # [u, v]: u is an ancestor of v
    m = pag.marks
    for i, j in np.argwhere(m != NONE).tolist():
        edge = pag.edge(pag.names[i], pag.names[j])
        if m[i, j] == ARROW:
            assert not anc[j, i], f"wrong arrowhead at {pag.names[j]} on {edge}"
        if m[i, j] == TAIL:
            assert anc[j, i], f"wrong tail at {pag.names[j]} on {edge}"
    truth = dag_to_pag(dag, latent).adjacency()
    assert not (truth & ~pag.adjacency()).any()


def pick_latent(dag: Graph, seed: int, share: float) -> list[str]:
    rng = np.random.default_rng(seed)
    k = round(share * dag.n_nodes)
    return sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))


# --------------------------------------------------------------------------- oracle
def test_rfci_equals_fci_on_dags():
    for seed in range(120):
        rng = np.random.default_rng(seed)
        dag = random_dag("random", int(rng.integers(4, 11)), seed=seed, edge_prob=0.4)
        result = rfci(OracleTest(dag), alpha=0.5)
        assert result.graph == fci(OracleTest(dag), alpha=0.5).graph == dag_to_pag(dag), seed


@pytest.mark.parametrize("name", ["asia", "sachs", "child", "alarm", "insurance"])
def test_rfci_equals_fci_on_bundled_dags(name):
    dag = load_network(name).graph
    result = rfci(OracleTest(dag), alpha=0.5)
    assert result.graph == dag_to_pag(dag)
    assert result.tests_by_phase["unshielded_triples"] == 0  # nothing to remove


def test_rfci_is_sound_with_latents():
    differ = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(5, 12))
        dag = random_dag("random", d, seed=seed, edge_prob=float(rng.uniform(0.2, 0.5)))
        latent = pick_latent(dag, seed, float(rng.uniform(0.1, 0.35)))
        result = rfci(OracleTest(dag, latent), alpha=0.5)
        assert_sound(result.graph, dag, latent)
        differ += result.graph != dag_to_pag(dag, latent)
    assert differ == 0  # with an oracle RFCI matched FCI on all of these


@pytest.mark.parametrize("name", ["asia", "sachs", "child", "alarm", "child3"])
def test_rfci_with_latents_on_bundled_networks(name):
    dag = load_network(name).graph
    latent = pick_latent(dag, 4, 0.15)
    result = rfci(OracleTest(dag, latent), alpha=0.5)
    assert_sound(result.graph, dag, latent)
    assert result.graph == dag_to_pag(dag, latent)


def test_rfci_keeps_the_edge_only_possible_dsep_removes():
    # The FCI textbook case (test_fci): D and E are separated only by {A, B, C}. RFCI
    # has no possible-D-SEP phase, keeps D <-> E, and every other mark is FCI's.
    names = ["A", "B", "C", "D", "E", "L1", "L2"]
    edges = [("A", "B"), ("B", "E"), ("L1", "B"), ("A", "C")]
    edges += [("L2", "C"), ("L2", "E"), ("C", "D"), ("L1", "D")]
    dag = Graph.from_edges(names, edges)
    result = rfci(OracleTest(dag, ["L1", "L2"]), alpha=0.5)
    truth = ["A o-> B", "A o-> C", "B <-> D", "B --> E", "C --> D", "C <-> E"]
    assert result.graph == Graph.from_edges("ABCDE", [*truth, "D <-> E"])
    assert_sound(result.graph, dag, ["L1", "L2"])


@pytest.mark.parametrize(
    ("edges", "latent", "expected"),
    [
        # B in sepset(D, C): B --> C.
        (
            [("D", "A"), ("L", "A"), ("L", "B"), ("A", "C"), ("B", "C")],
            ["L"],
            ["D o-> A", "B o-> A", "A --> C", "B --> C"],
        ),
        # B not in sepset(D, C): A <-> B <-> C.
        (
            [("D", "A"), ("L1", "A"), ("L1", "B"), ("A", "C"), ("L2", "B"), ("L2", "C")],
            ["L1", "L2"],
            ["D o-> A", "A <-> B", "B <-> C", "A --> C"],
        ),
    ],
)
def test_rfci_discriminating_paths(edges, latent, expected):
    names = sorted({v for e in edges for v in e})
    dag = Graph.from_edges(names, edges)
    result = rfci(OracleTest(dag, latent), alpha=0.5)
    observed = [n for n in names if n not in latent]
    assert result.graph == Graph.from_edges(observed, expected)
    assert result.queries_by_phase["discriminating_paths"] > 0  # the path was checked


# ------------------------------------------------------------------- scripted cases
def test_unshielded_triple_check_removes_an_edge():
    # Independences: 0 _||_ 3, 1 _||_ 3, 0 _||_ 2 | 3, 0 _||_ 1 | 3. The adjacency search
    # never conditions 0 - 1 on 3 (not a neighbour of either), so it keeps 0 - 1 - 2 - 3;
    # the check of the triple <0, 1, 2> with sepset(0, 2) = {3} removes 0 - 1.
    facts = {(0, 3, ()): 0.3, (1, 3, ()): 0.4, (0, 2, (3,)): 0.5, (0, 1, (3,)): 0.6}
    result = rfci(ScriptedTest(["a", "b", "c", "d"], facts), alpha=0.05)
    assert result.graph == Graph.from_edges("abcd", ["b o-> c", "d o-> c"])
    assert result.skeleton[0, 1]
    assert result.sepsets == {(0, 1): (3,), (0, 2): (3,), (0, 3): (), (1, 3): ()}
    assert result.pvalue("a", "b") == 0.6
    assert result.tests_by_phase == {
        "adjacency": 13,
        "unshielded_triples": 1,
        "discriminating_paths": 0,
    }
    # FCI's possible-D-SEP finds the same separation (without the biconnected
    # restriction: in this unfaithful script the separating set leaves the block).
    assert fci(ScriptedTest(["a", "b", "c", "d"], facts), biconnected=False).graph == result.graph


def test_discriminating_path_check_removes_an_edge():
    # D=0, A=1, B=2, C=3, W=4. After the adjacency search: D - A, D - W, A - B, A - C,
    # B - C with sepset(D, C) = {A, W}; R0 gives W o-> D <-> A <-o B, R1 A -> C, R2
    # B o-> C: <D, A, B, C> is a discriminating path for B. Checking its edges given
    # subsets of {A, W} finds B _||_ C | A, W and removes B - C (not an R4 orientation).
    facts = {
        (0, 2, ()): 0.3,
        (1, 4, ()): 0.4,
        (2, 4, ()): 0.5,
        (3, 4, ()): 0.6,
        (0, 3, (1, 4)): 0.7,
        (2, 3, (1, 4)): 0.2,
    }
    result = rfci(ScriptedTest(["D", "A", "B", "C", "W"], facts), alpha=0.05)
    expected = Graph.from_edges("DABCW", ["W o-> D", "D <-> A", "B o-> A", "A --> C"])
    assert result.graph == expected
    assert result.sepset("B", "C") == ("A", "W") and result.pvalue("B", "C") == 0.2
    assert result.skeleton[2, 3]
    assert result.tests_by_phase["discriminating_paths"] > 0


def test_path_and_triple_helpers():
    m = Graph.from_edges("DABC", ["D o-> A", "B o-> A", "A --> C", "B o-> C"]).marks.copy()
    assert minimal_discriminating_path(m, 1, 2, 3) == [0, 1, 2, 3]
    m2 = Graph.from_edges("DABC", ["D o-> A", "B o-> A", "A --> C", "B o-> C", "D o-> C"])
    assert minimal_discriminating_path(m2.marks.copy(), 1, 2, 3) is None  # D adjacent to C
    assert unshielded_triples(m) == [(0, 1, 2), (0, 1, 3)]
