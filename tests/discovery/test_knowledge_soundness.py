"""Soundness target (docs/knowledge.md): with the oracle test and knowledge true of the
DAG, FCI's, RFCI's and PC's graphs with knowledge contradict no mark of the truth and
keep every mark found without it. A handful of cases; the 200 of the target:
benchmarks/knowledge_soundness.py."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.knowledge_truth import check_learner, random_knowledge, wrong_marks
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.pag import dag_to_mag
from fedstruct.graphs.random import random_dag

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
