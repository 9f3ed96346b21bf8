"""The adjacency search: causal-learn's skeleton on the same data, PC-stable order independence."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.citest import CITest, ci_key
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.skeleton import adjacency_search


@pytest.mark.parametrize(("name", "n"), [("sachs", 1000), ("child", 1500)])
def test_skeleton_matches_causal_learn_fas(name, n):
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.utils.cit import CIT
    from causallearn.utils.FAS import fas

    net = load_network(name)
    data = net.sample(n, seed=11)
    data = data.loc[:, data.nunique() > 1]
    values = data.to_numpy()
    nodes = [GraphNode(c) for c in data.columns]
    for k, node in enumerate(nodes):
        node.add_attribute("id", k)
    cit = CIT(values, "gsq")
    theirs, _, _ = fas(values, nodes, cit, alpha=0.05, show_progress=False)
    evidence = Evidence(make_ci_test(data, "g2", small_sample="none"), 0.05)
    ours = adjacency_search(evidence)
    np.testing.assert_array_equal(ours, theirs.graph != 0)
    # Stopping at a pair's first independence needs fewer tests than causal-learn's
    # search (which runs every subset of the level); its cache has 3 metadata keys.
    assert evidence.ci_test.n_tests < len(cit.pvalue_cache) - 3


def test_pc_stable_is_order_independent():
    net = load_network("alarm")
    data = net.sample(800, seed=5)
    base = Evidence(make_ci_test(data, cardinalities=dict(net.cardinalities)), 0.05)
    skeleton = adjacency_search(base)
    perm = np.random.default_rng(0).permutation(data.shape[1])
    shuffled = data.iloc[:, perm]
    other = Evidence(make_ci_test(shuffled, cardinalities=dict(net.cardinalities)), 0.05)
    permuted = adjacency_search(other)
    np.testing.assert_array_equal(permuted, skeleton[np.ix_(perm, perm)])


class ScriptedTest(CITest):
    """Independent exactly for the listed facts."""

    def __init__(self, names, facts):
        super().__init__(names, "scripted", None)
        self.facts = {ci_key(i, j, z): p for (i, j, z), p in facts.items()}

    def _compute(self, i, j, z):
        return self.facts.get((i, j, z), 0.001), False


def test_stable_and_order_dependent_searches_differ_as_expected():
    # 0 _||_ 2, 0 _||_ 1 | 3, 1 _||_ 2 | 0. Level 1 tests 0 - 1 first and removes it;
    # PC-stable still conditions 1 - 2 on 0 (a neighbour of 1 when the level began),
    # the original PC no longer does and keeps 1 - 2.
    facts = {(0, 2, ()): 0.5, (0, 1, (3,)): 0.5, (1, 2, (0,)): 0.5}
    stable = adjacency_search(Evidence(ScriptedTest("abcd", facts), 0.05))
    original = adjacency_search(Evidence(ScriptedTest("abcd", facts), 0.05), stable=False)
    edges = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(stable)), strict=True)}
    assert edges == {(0, 3), (1, 3), (2, 3)}
    assert original[1, 2] and (original & ~stable).sum() == 2


def test_depth_bounds_the_conditioning_sets():
    net = load_network("child")
    data = net.sample(2000, seed=6)
    evidence = Evidence(make_ci_test(data, cardinalities=dict(net.cardinalities)), 0.05)
    bounded = adjacency_search(evidence, depth=1)
    assert max(len(z) for (_, _, z) in evidence.ci_test.cache) == 1
    full = adjacency_search(Evidence(evidence.ci_test, 0.05))
    assert (full <= bounded).all() and full.sum() < bounded.sum()
