"""FCI: the exact PAG with an oracle (textbook, random, bundled networks), sepsets, p-values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData, load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.citest import CITest, OracleTest, ci_key
from fedstruct.discovery.fci import fci
from fedstruct.discovery.pds import auto_pds_depth
from fedstruct.discovery.rfci import rfci
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.pag import dag_to_pag
from fedstruct.graphs.random import random_dag

#: Seed of the latent-variable choice on the bundled networks (15 % latent). With seed 0
#: the MAGs of water and hailfinder get nodes of degree 18-19 and the oracle adjacency
#: search alone needs 7.1 and 10.9 million tests (see docs/local_learners.md).
LATENT_SEED = 4


def pick_latent(dag: Graph, seed: int, share: float = 0.15) -> list[str]:
    rng = np.random.default_rng(seed)
    k = round(share * dag.n_nodes)
    return sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))


class ScriptedTest(CITest):
    """A CI test that says independent exactly for the listed facts (p-value given).

    Every other test is dependent with a distinct small p-value, so that the maxima
    of the per-pair summary are checkable.
    """

    def __init__(self, names, facts):
        super().__init__(names, "scripted", None)
        self.facts = {ci_key(i, j, z): p for (i, j, z), p in facts.items()}

    def _compute(self, i, j, z):
        default = 1e-4 * (1 + i + 2 * j + 3 * len(z) + sum(z))
        return self.facts.get((i, j, z), default), False


# ------------------------------------------------------------------ textbook cases
def test_possible_dsep_removes_an_edge_the_adjacency_search_keeps():
    # A -> B -> E, A -> C -> D with latents L1 (-> B, D) and L2 (-> C, E). D and E are
    # separated only by {A, B, C}, and A is adjacent to neither, so the adjacency search
    # keeps D - E; Possible-D-SEP (via the colliders B <-> D, C <-> E) removes it.
    names = ["A", "B", "C", "D", "E", "L1", "L2"]
    edges = [("A", "B"), ("B", "E"), ("L1", "B"), ("A", "C")]
    edges += [("L2", "C"), ("L2", "E"), ("C", "D"), ("L1", "D")]
    dag = Graph.from_edges(names, edges)
    truth = dag_to_pag(dag, ["L1", "L2"])
    expected = ["A o-> B", "A o-> C", "B <-> D", "B --> E", "C --> D", "C <-> E"]
    assert truth == Graph.from_edges("ABCDE", expected)
    for biconnected in (True, False):
        result = fci(
            OracleTest(dag, ["L1", "L2"]), alpha=0.5, biconnected=biconnected, pds_depth=None
        )
        assert result.graph == truth
        d, e = result.graph.indices(["D", "E"])
        assert result.skeleton[d, e] and not result.graph.is_adjacent("D", "E")
        assert result.sepset("D", "E") == ("A", "B", "C")
        assert result.tests_by_phase == {"adjacency": 46, "possible_dsep": 17}
        assert result.pvalue("D", "E") == 1.0 and result.pvalue("B", "D") == 0.0


def test_fci_without_possible_dsep_keeps_the_edge():
    names = ["A", "B", "C", "D", "E", "L1", "L2"]
    edges = [("A", "B"), ("B", "E"), ("L1", "B"), ("A", "C")]
    edges += [("L2", "C"), ("L2", "E"), ("C", "D"), ("L1", "D")]
    result = fci(OracleTest(Graph.from_edges(names, edges), ["L1", "L2"]), possible_dsep=False)
    assert result.graph.is_adjacent("D", "E")
    assert result.tests_by_phase == {"adjacency": 46}


def test_latent_confounder_and_collider():
    dag = Graph.from_edges(
        ["A", "B", "X", "Y", "L"], [("A", "X"), ("L", "X"), ("L", "Y"), ("B", "Y")]
    )
    result = fci(OracleTest(dag, ["L"]), pds_depth=None)
    assert result.graph == Graph.from_edges("ABXY", ["A o-> X", "B o-> Y", "X <-> Y"])
    assert result.sepsets == {(0, 1): (), (0, 3): (), (1, 2): ()}


# ------------------------------------------------------------------ oracle: random DAGs
def test_fci_oracle_random_dags():
    for seed in range(150):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(5, 12))
        dag = random_dag("random", d, seed=seed, edge_prob=float(rng.uniform(0.2, 0.5)))
        latent = pick_latent(dag, seed, share=float(rng.uniform(0.0, 0.35)))
        result = fci(OracleTest(dag, latent), alpha=0.5, pds_depth=None)
        assert result.graph == dag_to_pag(dag, latent), seed
        for (i, j), s in result.sepsets.items():  # every recorded set really separates
            assert result.ci_test.pvalue(i, j, s) == 1.0


@pytest.mark.parametrize("biconnected", [True, False])
def test_possible_dsep_repairs_a_shallow_adjacency_search(biconnected):
    # With depth=1 the adjacency search leaves every edge that needs a larger separating
    # set; the unbounded possible-D-SEP phase (which must then also try the subsets of
    # the adjacencies larger than 1) removes them all.
    repaired = 0
    for seed in range(80):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(5, 12))
        dag = random_dag("random", d, seed=seed, edge_prob=float(rng.uniform(0.2, 0.5)))
        latent = pick_latent(dag, seed, share=float(rng.uniform(0.0, 0.35)))
        truth = dag_to_pag(dag, latent)
        result = fci(
            OracleTest(dag, latent), alpha=0.5, depth=1, pds_depth=-1, biconnected=biconnected
        )
        assert result.graph == truth, seed
        repaired += int((result.skeleton & ~truth.adjacency()).any())
    assert repaired > 30


# ------------------------------------------------------------ oracle: bundled networks
FAST = ["asia", "sachs", "child", "alarm", "child3"]
SLOW = ["insurance", "barley", "hailfinder", "alarm3", "water"]


@pytest.mark.parametrize("name", FAST + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW])
def test_fci_oracle_bundled_networks(name):
    dag = load_network(name).graph
    latent = pick_latent(dag, LATENT_SEED)
    # water's MAG has a 24-node Possible-D-SEP inside one biconnected block: its
    # confirmatory possible-D-SEP search is bounded to sets of size <= 3 (no edge of
    # water's skeleton needs it; every other network runs unbounded).
    pds_depth = 3 if name == "water" else None  # None: the complete, unbounded search
    result = fci(OracleTest(dag, latent), alpha=0.5, pds_depth=pds_depth)
    assert result.graph == dag_to_pag(dag, latent)


# ------------------------------------------------------------ sepsets and p-values
def scripted_case():
    """D=0, A=1, B=2, C=3, W=4; independences chosen so that B - C survives the
    adjacency search and is separated only by {A, W} (W outside B's and C's
    neighbourhoods and outside their biconnected block)."""
    facts = {
        (0, 2, ()): 0.30,  # D _||_ B
        (1, 4, ()): 0.40,  # A _||_ W
        (2, 4, ()): 0.50,  # B _||_ W
        (3, 4, ()): 0.60,  # C _||_ W
        (0, 3, (1, 4)): 0.70,  # D _||_ C | A, W
        (2, 3, (1, 4)): 0.20,  # B _||_ C | A, W
    }
    return ScriptedTest(["D", "A", "B", "C", "W"], facts)


def test_scripted_possible_dsep_sepsets_and_pvalue_summary():
    test = scripted_case()
    result = fci(test, alpha=0.05, biconnected=False, pds_depth=None)
    expected = Graph.from_edges("DABCW", ["W o-> D", "D <-> A", "B o-> A", "A --> C"])
    assert result.graph == expected
    assert result.sepsets == {
        (0, 2): (),
        (0, 3): (1, 4),
        (1, 4): (),
        (2, 3): (1, 4),
        (2, 4): (),
        (3, 4): (),
    }
    assert result.sepset("B", "C") == ("A", "W")
    # Non-adjacent pairs: the separating test's p-value.
    assert result.pvalue("B", "C") == 0.20 and result.pvalue("D", "C") == 0.70
    assert result.pvalue("W", "C") == 0.60
    # Adjacent pairs: the largest p-value of all the tests run on the pair.
    for i, j in zip(*np.nonzero(np.triu(result.graph.adjacency())), strict=True):
        tested = [p for (a, b, _), p in test.cache.items() if (a, b) == (i, j)]
        assert result.pvalues[i, j] == max(tested) == result.pvalues[j, i]
        assert result.pvalues[i, j] < 0.05
    assert np.isnan(np.diagonal(result.pvalues)).all()
    # With the biconnected restriction (default) W is not a candidate for B - C.
    assert fci(scripted_case(), pds_depth=None).graph.is_adjacent("B", "C")


def test_pvalue_summary_on_data_against_the_cache():
    net = load_network("asia")
    data = net.sample(3000, seed=7)
    test = make_ci_test(data, "g2", cardinalities=dict(net.cardinalities), small_sample="none")
    result = fci(test, alpha=0.05)
    adjacency = result.graph.adjacency()
    d = len(result.names)
    assert result.n_tests == test.n_tests == len(test.cache)
    for i in range(d):
        for j in range(i + 1, d):
            tested = [p for (a, b, _), p in test.cache.items() if (a, b) == (i, j)]
            if adjacency[i, j]:
                assert result.pvalues[i, j] == max(tested) <= 0.05
            else:
                sep = result.sepsets[(i, j)]
                assert result.pvalues[i, j] == test.pvalue(i, j, sep) > 0.05
                assert result.pvalues[i, j] == max(tested)  # stop at the first independence
    np.testing.assert_array_equal(result.pvalues, result.pvalues.T)


def test_skipped_tests_give_nan_summaries():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, 40)
    data = pd.DataFrame({"a": x, "b": x ^ (rng.random(40) < 0.1), "c": rng.integers(0, 9, 40)})
    # "toolbox": a - c and b - c need 5 * 2 * 9 = 90 > 40 rows, so they are never tested.
    result = fci(data)
    assert result.graph.is_adjacent("a", "c") and result.graph.is_adjacent("b", "c")
    assert np.isnan(result.pvalue("a", "c")) and np.isnan(result.pvalue("b", "c"))
    assert result.pvalue("a", "b") < 0.05
    assert result.ci_test.n_tests == 1  # the skipped tests are not even enumerated


# ------------------------------------------------------------------ options, reuse
def test_depth_zero_runs_only_marginal_tests():
    net = load_network("sachs")
    test = make_ci_test(net.sample(500, seed=1), cardinalities=dict(net.cardinalities))
    result = fci(test, depth=0)
    assert result.n_tests == 11 * 10 // 2
    assert all(len(z) == 0 for (_, _, z) in test.cache)


def test_ci_test_is_reused_across_learners():
    net = load_network("child")
    test = make_ci_test(net.sample(1000, seed=2), cardinalities=dict(net.cardinalities))
    first = fci(test)
    before = test.n_tests
    second = rfci(test)
    assert second.tests_by_phase["adjacency"] == 0  # every adjacency test was cached
    assert test.n_tests == before + second.n_tests
    assert np.array_equal(first.skeleton, second.skeleton)
    assert second.ci_test is first.ci_test


def test_inputs_and_errors():
    net = load_network("asia")
    rows = net.sample(400, seed=3)
    from_frame = fci(rows)
    from_client = fci(ClientData("site-1", rows))
    assert from_frame.graph == from_client.graph
    assert from_frame.names == tuple(rows.columns)
    assert from_frame.ci_test.kind == "g2" and from_frame.algorithm == "fci"
    with pytest.raises(ConfigError, match="alpha"):
        fci(rows, alpha=1.5)
    with pytest.raises(ConfigError, match="depth"):
        fci(rows, depth=-3)
    with pytest.raises(ConfigError, match="max_path_length"):
        fci(rows, max_path_length=2.5)  # type: ignore[arg-type]


# ------------------------------------------------------------ the bounded default
def test_auto_bound_covers_all_but_one_percent_of_the_adjacency_separating_sets():
    assert auto_pds_depth([]) == 1
    assert auto_pds_depth([()] * 50 + [(1, 2)] * 50) == 2
    assert auto_pds_depth([()] * 99 + [(1, 2, 3)]) == 1  # 1 % larger than 1: allowed
    assert auto_pds_depth([()] * 98 + [(1, 2, 3)] * 2) == 3  # 2 % larger than 2
    assert auto_pds_depth([(1,)] * 10, outliers=0.0) == 1


def test_default_bounds_possible_dsep_by_the_adjacency_separating_sets():
    """The textbook case needs {A, B, C} (size 3) to separate D and E, while the
    adjacency search's separating sets all hold one variable: the default bound is 1,
    D - E stays (the cost in completeness), the unbounded search removes it."""
    names = ["A", "B", "C", "D", "E", "L1", "L2"]
    edges = [("A", "B"), ("B", "E"), ("L1", "B"), ("A", "C")]
    edges += [("L2", "C"), ("L2", "E"), ("C", "D"), ("L1", "D")]
    oracle = OracleTest(Graph.from_edges(names, edges), ["L1", "L2"])
    bounded = fci(oracle, alpha=0.5)
    assert sorted(len(s) for s in bounded.sepsets.values()) == [1, 1, 1]
    assert auto_pds_depth(bounded.sepsets.values()) == 1
    assert bounded.graph.is_adjacent("D", "E")
    assert bounded.graph == fci(oracle, alpha=0.5, pds_depth=1).graph
    assert not fci(oracle, alpha=0.5, pds_depth=None).graph.is_adjacent("D", "E")
    with pytest.raises(ConfigError, match="pds_depth must be 'auto'"):
        fci(oracle, pds_depth="fast")
