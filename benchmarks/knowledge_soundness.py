"""Soundness of knowledge-aware FCI (and PC, RFCI) with the oracle CI test.

Usage: ``python benchmarks/knowledge_soundness.py [--cases 200] [--seed 0]
[--networks asia sachs child random]``

Each case: a DAG (asia, sachs, child, insurance, or a random DAG of 8-14 nodes, in
turn from ``--networks``), 15 %
of its variables latent (none for PC), knowledge drawn at random from the true DAG
(:func:`fedstruct.discovery.knowledge_truth.random_knowledge`: tiers cut from a
topological order, forbidden non-ancestral pairs, required true edges, forbidden
adjacencies of non-adjacent MAG pairs), and the oracle test
(:class:`~fedstruct.discovery.citest.OracleTest`). Checked: FCI's PAG with knowledge has
no mark (and no adjacency) that contradicts the true MAG and keeps every mark of the
PAG without knowledge; the same for PC against the true DAG (no latent) and for RFCI
(its marks on the MAG's edges). The cases take ``prune_sets`` in turn from :data:`PRUNES`
(no pruning; conditioning only on possible ancestors everywhere; only among
Possible-D-SEP's candidates, FCI's default). Reported: the cases, the failures (none expected),
the marks knowledge added, and the CI tests with and without knowledge.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.knowledge import POSSIBLE_DSEP, Prune
from fedstruct.discovery.knowledge_truth import Checked, check_learner, random_knowledge
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.random import random_dag

NETWORKS = ("asia", "sachs", "child", "insurance", "random")
#: insurance's complete FCI search costs ~300,000 oracle tests a case: not by default.
DEFAULT = ("asia", "sachs", "child", "random")
#: The ``prune_sets`` of case k: ``PRUNES[k % 3]``.
PRUNES: tuple[Prune, ...] = (False, True, POSSIBLE_DSEP)


def pick_latent(dag: Graph, rng: np.random.Generator, share: float = 0.15) -> list[str]:
    k = round(share * dag.n_nodes)
    return sorted(dag.names[i] for i in rng.choice(dag.n_nodes, size=k, replace=False))


def case_dag(network: str, rng: np.random.Generator) -> Graph:
    if network == "random":
        d = int(rng.integers(8, 15))
        seed = int(rng.integers(1 << 30))
        return random_dag("random", d, seed=seed, edge_prob=float(rng.uniform(0.15, 0.35)))
    return load_network(network).graph


def run_case(
    learner: str, network: str, rng: np.random.Generator, prune_sets: Prune
) -> tuple[str, Checked]:
    """One random case of ``learner`` on ``network`` (no latent variable for PC)."""
    dag = case_dag(network, rng)
    latent = [] if learner == "pc" else pick_latent(dag, rng)
    knowledge = random_knowledge(dag, latent, rng)
    return learner, check_learner(learner, dag, latent, knowledge, prune_sets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--networks", nargs="+", choices=NETWORKS, default=list(DEFAULT))
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    results: list[tuple[str, Checked]] = []
    for k in range(args.cases):
        network = args.networks[k % len(args.networks)]
        for learner in ("fci", "pc", "rfci"):
            results.append(run_case(learner, network, rng, prune_sets=PRUNES[k % 3]))
        if (k + 1) % 10 == 0:
            print(f"  {k + 1} cases, {time.perf_counter() - start:.0f} s", flush=True)
    took = time.perf_counter() - start
    print(f"{args.cases} cases per learner on {args.networks}, seed {args.seed}, {took:.0f} s")
    print("learner  cases  wrong-mark cases  lost-mark cases  unknown marks (without -> with)"
          "  CI tests (without -> with)")  # fmt: skip
    for learner in ("fci", "pc", "rfci"):
        rows = [r for who, r in results if who == learner]
        wrong = sum(bool(r.wrong) for r in rows)
        lost = sum(bool(r.lost) for r in rows)
        cw = sum(r.unknown_without for r in rows)
        ck = sum(r.unknown_with for r in rows)
        tw = sum(r.tests_without for r in rows)
        tk = sum(r.tests_with for r in rows)
        print(f"{learner:7s}  {len(rows):5d}  {wrong:16d}  {lost:15d}  {cw:>8d} -> {ck:<8d}"
              f"  {tw:>9d} -> {tk:<9d}")  # fmt: skip
        for r in rows:
            if r.wrong or r.lost:
                print(f"  FAIL: wrong {r.wrong[:3]} lost {r.lost[:3]}")


if __name__ == "__main__":
    main()
