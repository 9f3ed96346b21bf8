"""What tiered knowledge buys PC and FCI on sampled data: orientation F1 and CI tests.

Usage: ``python benchmarks/knowledge_use.py [--networks alarm hepar2] [--rows 10000]
[--tiers 3] [--seeds 0 1 2 3 4] [--learners pc fci] [--variants none tiers pds pruned]``

``load_network(network).sample(rows, seed)``, G² at alpha = 0.05, default settings
(FCI: ``pds_depth="auto"``). The knowledge: the network's topological order cut into
``tiers`` tiers of (nearly) equal size, nothing else. Each learner runs once per
variant (:data:`VARIANTS`): ``none`` without the tiers; ``tiers`` with them and
``prune_sets=False``; ``pds`` (FCI only, its default) with them and
``prune_sets="possible_dsep"`` (step 3's candidates pruned to possible ancestors);
``pruned`` with them and ``prune_sets=True`` (every phase); each on a fresh CI test
(no shared cache). Reported per run: the
CI tests (and those of FCI's Possible-D-SEP phase), orientation F1 scored two ways,
arrowhead F1, tail F1, skeleton F1, and the CPU seconds (``time.process_time``; the
machine is shared, so CPU time, not wall):

- ``orient-F1`` against the true DAG: an oriented edge counts when both marks equal
  the DAG's (FCI's ``o->`` is never ``-->``);
- ``reach-F1`` against what the learner can know
  (:func:`~fedstruct.discovery.knowledge_truth.reachable_graph`): the true PAG (FCI) or
  CPDAG (PC) *with the run's knowledge applied* (without knowledge: the plain PAG or
  CPDAG), so that an ``o->`` the tiers cannot turn into ``-->`` is not held against FCI.

Then the mean of each column over the seeds, per network, learner and variant.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedstruct.data import load_network
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.fci import fci
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.knowledge_truth import reachable_graph
from fedstruct.discovery.pc import pc
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import edge_scores, orientation_scores

LEARNERS: dict[str, Callable[..., Any]] = {"pc": pc, "fci": fci}

#: variant name -> (tiers given, extra keyword arguments of the learner)
VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "none": (False, {}),
    "tiers": (True, {"prune_sets": False}),
    "pds": (True, {"prune_sets": "possible_dsep"}),
    "pruned": (True, {"prune_sets": True}),
}

#: Variants that are the same run as another for a learner (PC has no Possible-D-SEP).
SKIP = {("pc", "pds")}

COLUMNS = ("tests", "pds-tests", "orient-F1", "reach-F1", "arrow-F1", "tail-F1", "skel-F1", "cpu-s")


def tiers_of(order: tuple[str, ...], k: int) -> list[list[str]]:
    """``order`` cut into ``k`` consecutive tiers of (nearly) equal size."""
    return [list(part) for part in np.array_split(np.array(order, dtype=object), k)]


@dataclass(frozen=True)
class Row:
    """One run's figures (:data:`COLUMNS`)."""

    network: str
    seed: int
    learner: str
    variant: str
    values: tuple[float, ...]


def score(dag: Graph, reached: Graph, learned: Graph) -> list[float]:
    """orient-F1 (vs the DAG), reach-F1 (vs ``reached``), arrowhead, tail, skeleton F1."""
    graph = learned.restrict(dag.names)
    return [
        orientation_scores(dag, graph, "edge").f1,
        orientation_scores(reached, graph, "edge").f1,
        orientation_scores(dag, graph, "arrowhead").f1,
        orientation_scores(dag, graph, "tail").f1,
        edge_scores(dag, graph).f1,
    ]


def run_one(
    data: Any, dag: Graph, knowledge: Knowledge, learner: str, variant: str
) -> tuple[float, ...]:
    """One learner run on ``data`` with a fresh G² test; its :data:`COLUMNS`."""
    told, extra = VARIANTS[variant]
    given = knowledge if told else None
    start = time.process_time()
    result = LEARNERS[learner](make_ci_test(data, "g2"), alpha=0.05, knowledge=given, **extra)
    cpu = time.process_time() - start
    reached = reachable_graph(dag, [], given, learner)
    pds = result.tests_by_phase.get("possible_dsep", 0)
    return (result.n_tests, pds, *score(dag, reached, result.graph), cpu)


def show(row: Row) -> str:
    ints = f"{row.values[0]:7.0f} {row.values[1]:9.0f}"
    floats = "  ".join(f"{v:9.3f}" for v in row.values[2:7])
    return (
        f"{row.network:8s} {row.seed:4d} {row.learner:4s} {row.variant:9s} {ints}  {floats}"
        f"  {row.values[7]:6.1f}"
    )


def header() -> str:
    return "network  seed lrn  variant     tests pds-tests  " + "  ".join(
        f"{c:>9s}" for c in COLUMNS[2:7]
    ) + "   cpu-s"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=["alarm"])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--learners", nargs="+", choices=list(LEARNERS), default=list(LEARNERS))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    print(f"{args.rows} rows, {args.tiers} tiers from the true order, G2 at alpha 0.05")
    print(header(), flush=True)
    rows: list[Row] = []
    for network in args.networks:
        net = load_network(network)
        knowledge = Knowledge(tiers=tiers_of(net.graph.topological_order(), args.tiers))
        for seed in args.seeds:
            data = net.sample(args.rows, seed=seed)
            for learner in args.learners:
                for variant in args.variants:
                    if (learner, variant) in SKIP:
                        continue
                    values = run_one(data, net.graph, knowledge, learner, variant)
                    rows.append(Row(network, seed, learner, variant, values))
                    print(show(rows[-1]), flush=True)
    print("\nmeans over the seeds")
    print(header())
    for network in args.networks:
        for learner in args.learners:
            for variant in args.variants:
                if (learner, variant) in SKIP:
                    continue
                same = [r.values for r in rows if (r.network, r.learner, r.variant) == (
                    network, learner, variant)]  # fmt: skip
                mean = tuple(np.mean(same, axis=0).tolist())
                print(show(Row(network, -1, learner, variant, mean)))


if __name__ == "__main__":
    main()
