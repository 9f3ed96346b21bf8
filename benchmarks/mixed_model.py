"""The conditional-Gaussian mixed model and the skeleton F1 of the mixed-data benchmarks
(benchmarks/mixed_ci.py, benchmarks/missing_data.py)."""

from __future__ import annotations

import numpy as np

from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.graphs import Graph
from fedstruct.graphs.random import erdos_renyi_dag


def mixed_model(seed: int, d: int) -> ConditionalGaussianSCM:
    """An Erdős–Rényi DAG (1.5 edges per node) over ``d`` variables, half of them
    categorical (binary and 3-category alternately), half real."""
    dag = erdos_renyi_dag(d, seed=seed, edges_per_node=1.5)
    chosen = np.random.default_rng(seed).permutation(d)[: d // 2].tolist()
    kinds = dict.fromkeys(dag.names, "real")
    for rank, k in enumerate(chosen):
        kinds[dag.names[k]] = "binary" if rank % 2 else "categorical"
    return ConditionalGaussianSCM(dag, kinds, seed=seed)


def skeleton_f1(learned: Graph, dag: Graph) -> float:
    """F1 of the learned adjacencies against the DAG's (a variable the learned graph
    lacks is isolated)."""
    truth = {frozenset((p, c)) for c in dag.names for p in dag.parents(c)}
    names = list(learned.names)
    marks = np.asarray(learned.marks)
    found = {
        frozenset((names[a], names[b]))
        for a in range(len(names))
        for b in range(a + 1, len(names))
        if marks[a, b] != 0
    }
    tp = len(found & truth)
    wrong = len(found ^ truth)
    return 2 * tp / (2 * tp + wrong) if tp + wrong else 1.0
