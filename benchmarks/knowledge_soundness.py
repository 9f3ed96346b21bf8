"""Soundness of knowledge-aware FCI (and PC, RFCI) with the oracle CI test.

Usage: ``python benchmarks/knowledge_soundness.py [--cases 200] [--seed 0]``

Each case: a DAG (asia, sachs, child, insurance, or a random DAG of 8-14 nodes), 15 %
of its variables latent (none for PC), knowledge drawn at random from the true DAG
(:func:`fedstruct.discovery.knowledge_truth.random_knowledge`: tiers cut from a
topological order, forbidden non-ancestral pairs, required true edges, forbidden
adjacencies of non-adjacent MAG pairs), and the oracle test
(:class:`~fedstruct.discovery.citest.OracleTest`). Checked: FCI's PAG with knowledge has
no mark (and no adjacency) that contradicts the true MAG and keeps every mark of the
PAG without knowledge; the same for PC against the true DAG (no latent) and for RFCI
(its marks on the MAG's edges). Reported: the cases, the failures (none expected),
the marks knowledge added, and the CI tests with and without knowledge.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.citest import OracleTest
from fedstruct.discovery.fci import fci
from fedstruct.discovery.knowledge_truth import lost_marks, random_knowledge, wrong_marks
from fedstruct.discovery.pc import pc
from fedstruct.discovery.rfci import rfci
from fedstruct.graphs.graph import CIRCLE, NONE, Graph
from fedstruct.graphs.pag import dag_to_mag
from fedstruct.graphs.random import random_dag

NETWORKS = ("asia", "sachs", "child", "insurance", "random")


@dataclass
class Case:
    """One case's outcome."""

    learner: str
    network: str
    wrong: list[str]
    lost: list[str]
    circles_without: int
    circles_with: int
    tests_without: int
    tests_with: int


def pick_latent(dag: Graph, rng: np.random.Generator, share: float = 0.15) -> list[str]:
    k = round(share * dag.n_nodes)
    return sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))


def case_dag(network: str, rng: np.random.Generator) -> Graph:
    if network == "random":
        d = int(rng.integers(8, 15))
        seed = int(rng.integers(1 << 30))
        return random_dag("random", d, seed=seed, edge_prob=float(rng.uniform(0.15, 0.35)))
    return load_network(network).graph


def circles(g: Graph) -> int:
    return int(np.sum(g.marks == CIRCLE))


def run_case(learner: str, network: str, rng: np.random.Generator) -> Case:
    """One random case of ``learner`` (``"fci"``, ``"rfci"`` or ``"pc"``) on ``network``."""
    dag = case_dag(network, rng)
    latent = [] if learner == "pc" else pick_latent(dag, rng)
    knowledge = random_knowledge(dag, latent, rng)
    observed = [n for n in dag.names if n not in set(latent)]
    learn = {"fci": _fci, "rfci": rfci, "pc": pc}[learner]
    plain = learn(OracleTest(dag, latent))
    told = learn(OracleTest(dag, latent), knowledge=knowledge)
    truth = dag.restrict(observed) if learner == "pc" else dag_to_mag(dag, latent)
    wrong = wrong_marks(told.graph, truth)
    if learner == "rfci":  # RFCI may keep edges FCI removes: judge its marks on MAG edges
        keep = truth.adjacency()
        marks = np.where(keep, told.graph.restrict(truth.names).marks, NONE)
        wrong = wrong_marks(Graph(truth.names, marks), truth)
    return Case(
        learner,
        network,
        wrong,
        lost_marks(told.graph, plain.graph),
        circles(plain.graph) + _undirected(plain.graph),
        circles(told.graph) + _undirected(told.graph),
        plain.n_tests,
        told.n_tests,
    )


def _fci(test: OracleTest, **kw: object):  # noqa: ANN202
    return fci(test, pds_depth=None, **kw)  # type: ignore[arg-type]


def _undirected(g: Graph) -> int:
    """PC's undirected edges count as two unknown marks (circles for a PAG)."""
    m = g.marks
    return int(np.sum((m == 1) & (m.T == 1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    results: list[Case] = []
    for k in range(args.cases):
        network = NETWORKS[k % len(NETWORKS)]
        for learner in ("fci", "pc", "rfci"):
            results.append(run_case(learner, network, rng))
    took = time.perf_counter() - start
    print(f"{args.cases} cases per learner, seed {args.seed}, {took:.0f} s")
    print("learner  cases  wrong-mark cases  lost-mark cases  unknown marks (without -> with)"
          "  CI tests (without -> with)")  # fmt: skip
    for learner in ("fci", "pc", "rfci"):
        rows = [r for r in results if r.learner == learner]
        wrong = sum(bool(r.wrong) for r in rows)
        lost = sum(bool(r.lost) for r in rows)
        cw = sum(r.circles_without for r in rows)
        ck = sum(r.circles_with for r in rows)
        tw = sum(r.tests_without for r in rows)
        tk = sum(r.tests_with for r in rows)
        print(f"{learner:7s}  {len(rows):5d}  {wrong:16d}  {lost:15d}  {cw:>8d} -> {ck:<8d}"
              f"  {tw:>9d} -> {tk:<9d}")  # fmt: skip
        for r in rows:
            if r.wrong or r.lost:
                print(f"  FAIL {r.network}: wrong {r.wrong[:3]} lost {r.lost[:3]}")


if __name__ == "__main__":
    main()
