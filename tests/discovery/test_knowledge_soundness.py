"""Soundness target (docs/knowledge.md): with the oracle test and knowledge true of the
DAG, FCI's, RFCI's and PC's graphs with knowledge contradict no mark of the truth and
keep every mark found without it. A handful of cases; the 200 of the target:
benchmarks/knowledge_soundness.py."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery.citest import OracleTest
from fedstruct.discovery.fci import fci
from fedstruct.discovery.knowledge import POSSIBLE_DSEP, Knowledge, as_rules
from fedstruct.discovery.knowledge_truth import (
    check_learner,
    random_knowledge,
    reachable_graph,
    tiers_from_order,
    wrong_marks,
)
from fedstruct.discovery.pc import pc
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.pag import dag_to_mag
from fedstruct.graphs.random import random_dag
from fedstruct.graphs.separation import ancestor_matrix

#: network, latent variables, knowledge draws, seed (child's FCI takes ~0.3 s a run)
CASES = [
    ("asia", ["either"], 3, 7),
    ("sachs", ["PKA"], 3, 7),
    ("child", ["Disease", "LungFlow"], 1, 8),
]


@pytest.mark.parametrize(("network", "latent", "draws", "seed"), CASES)
@pytest.mark.parametrize("learner", ["fci", "rfci", "pc"])
def test_knowledge_never_contradicts_the_truth_and_loses_nothing(
    network, latent, draws, seed, learner
):
    dag = load_network(network).graph
    latent = [] if learner == "pc" else latent
    rng = np.random.default_rng(seed)
    informative = 0
    for _ in range(draws):
        knowledge = random_knowledge(dag, latent, rng)
        for prune_sets in (False, True):
            checked = check_learner(learner, dag, latent, knowledge, prune_sets)
            assert checked.wrong == [] and checked.lost == [], (knowledge, checked)
        informative += checked.unknown_without - checked.unknown_with
    assert informative > 0  # the knowledge did orient something


def test_random_dags_with_latents():
    rng = np.random.default_rng(11)
    for _ in range(4):
        dag = random_dag("random", 10, seed=int(rng.integers(1 << 20)), edge_prob=0.3)
        latent = sorted(rng.choice(dag.names, size=2, replace=False).tolist())
        knowledge = random_knowledge(dag, latent, rng)
        for learner in ("fci", "rfci"):
            checked = check_learner(learner, dag, latent, knowledge, prune_sets=True)
            assert checked.wrong == [] and checked.lost == [], (learner, knowledge, checked)


def test_the_check_itself_catches_an_overcommitted_tail():
    # What causal-learn #266 does with tiers (B before D): "B --> D". The true MAG has
    # B <-> D (a latent cause of both), so the check must flag the tail at B.
    dag = Graph.from_edges(["A", "B", "C", "D", "L"], ["A --> B", "B --> C", "L --> B", "L --> D"])
    mag = dag_to_mag(dag, ["L"])
    overcommitted = Graph.from_edges("ABCD", ["A o-> B", "B --> C", "B --> D"])
    assert wrong_marks(overcommitted, mag) == ["mark at B on D - B: learned 1, true 2"]
    assert random_knowledge(dag, ["L"], np.random.default_rng(0)) != Knowledge()


@pytest.mark.parametrize("network", ["sachs", "child"])
def test_reachable_graph_is_what_the_oracle_learner_outputs(network):
    # The Use benchmark scores against reachable_graph: it must be exactly the graph
    # FCI (complete search) and PC reach with a perfect test and the same knowledge.
    dag = load_network(network).graph
    rng = np.random.default_rng(5)
    latent = sorted(rng.choice(dag.names, size=2, replace=False).tolist())
    for learner, hidden in (("fci", latent), ("pc", [])):
        reached_by = []
        order = [n for n in dag.topological_order() if n not in hidden]
        for knowledge in (None, Knowledge(tiers=[order[:4], order[4:]])):
            test = OracleTest(dag, hidden)
            learned = (
                fci(test, pds_depth=None, knowledge=knowledge)
                if learner == "fci"
                else pc(test, knowledge=knowledge)
            ).graph
            reached = reachable_graph(dag, hidden, knowledge, learner)
            np.testing.assert_array_equal(reached.marks, learned.restrict(reached.names).marks)
            reached_by.append(reached.marks)
        assert (reached_by[0] != reached_by[1]).any()  # the tiers did orient something
    with pytest.raises(ConfigError, match="latent"):
        reachable_graph(dag, latent, None, "pc")
    with pytest.raises(ConfigError, match="learner"):
        reachable_graph(dag, [], None, "ges")


def test_the_pruned_pool_keeps_every_ancestor_of_the_pair():
    # prune_sets="possible_dsep" (FCI's default) is sound because D-SEP(x, y) lies in
    # An({x, y}) (Spirtes et al. 2000, §6.7): every ancestor of x or y must stay a
    # candidate. Tiers cut from a topological order; fails if the pool dropped one
    # (e.g. kept only strictly earlier tiers than the pair's later one).
    rng = np.random.default_rng(2)
    dag = random_dag("random", 14, seed=4, edge_prob=0.3)
    anc = ancestor_matrix(dag)  # [u, v]: u is an ancestor of v
    dropped = 0
    for n_tiers in (2, 3, 5):
        knowledge = Knowledge(tiers=tiers_from_order(list(dag.topological_order()), n_tiers, rng))
        plain = knowledge.resolve(dag.names)
        rules = as_rules(knowledge, dag.names, POSSIBLE_DSEP)
        for x, y in combinations(range(dag.n_nodes), 2):
            pruned = rules.pool(x, y, possible_dsep=True)
            needed = (anc[:, x] | anc[:, y]) & ~np.isin(np.arange(dag.n_nodes), [x, y])
            assert not (needed & ~pruned).any(), (n_tiers, x, y)
            assert (rules.pool(x, y) == plain.pool(x, y)).all()  # adjacency search: unpruned
            dropped += int(plain.pool(x, y).sum() - pruned.sum())
    assert dropped > 0  # and it does prune


def test_prune_sets_other_values_are_refused():
    with pytest.raises(ConfigError, match="prune_sets must be False, True or 'possible_dsep'"):
        as_rules(Knowledge(tiers=[["A"], ["B"]]), ["A", "B"], "adjacency")


@pytest.mark.parametrize("seed", [3, 4])
def test_fci_pruning_possible_dsep_is_sound_with_latents(seed):
    # FCI's default with knowledge (prune_sets="possible_dsep") against the true MAG,
    # complete Possible-D-SEP search, random DAGs with latent variables.
    rng = np.random.default_rng(seed)
    for _ in range(3):
        dag = random_dag("random", 11, seed=int(rng.integers(1 << 20)), edge_prob=0.3)
        latent = sorted(rng.choice(dag.names, size=3, replace=False).tolist())
        order = [n for n in dag.topological_order() if n not in latent]
        knowledge = Knowledge(tiers=tiers_from_order(order, 3, rng))
        checked = check_learner("fci", dag, latent, knowledge, POSSIBLE_DSEP)
        assert checked.wrong == [] and checked.lost == [], (knowledge, checked)
