"""Knowledge drawn from a known causal DAG, and the checks of what a learner did with it.

For the soundness target of docs/knowledge.md (tests/discovery/test_knowledge_soundness.py
and benchmarks/knowledge_soundness.py): :func:`random_knowledge` states only what is
true of a DAG with latent variables (under the meanings of
:mod:`fedstruct.discovery.knowledge`), :func:`wrong_marks` lists the marks of a learned
graph that contradict the true MAG, and :func:`lost_marks` those a graph without
knowledge had and the one with knowledge lacks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import orient_pag, orient_pdag
from fedstruct.discovery.citest import OracleTest
from fedstruct.discovery.fci import fci
from fedstruct.discovery.knowledge import Knowledge, Prune, as_rules
from fedstruct.discovery.pc import meek_rules, pc
from fedstruct.discovery.rfci import rfci
from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph
from fedstruct.graphs.orientation import apply_rules, orient_colliders
from fedstruct.graphs.pag import dag_to_mag
from fedstruct.graphs.separation import ancestor_matrix

__all__ = [
    "Checked",
    "check_learner",
    "informative",
    "lost_marks",
    "random_knowledge",
    "reachable_graph",
    "tiers_from_order",
    "wrong_marks",
]


def tiers_from_order(order: list[str], n_tiers: int, rng: np.random.Generator) -> list[list[str]]:
    """Cut ``order`` (a topological order) into ``n_tiers`` non-empty consecutive tiers."""
    n_tiers = max(1, min(n_tiers, len(order)))
    cuts = sorted(rng.choice(np.arange(1, len(order)), size=n_tiers - 1, replace=False).tolist())
    bounds = [0, *cuts, len(order)]
    return [order[a:b] for a, b in pairwise(bounds)]


def random_knowledge(
    dag: Graph, latent: Iterable[str], rng: np.random.Generator, *, size: int = 3
) -> Knowledge:
    """Random knowledge that holds in ``dag`` (observed variables only).

    Each part is present with probability 1/2 (at least one is): tiers from a
    topological order cut into 2-4 tiers (a later variable is never an ancestor of an
    earlier one); up to ``size`` forbidden pairs ``[x, y]`` with ``x`` not an ancestor of
    ``y``; up to ``size`` required edges, true DAG edges between observed variables; up
    to ``size`` ``forbidden_adjacent`` pairs, non-adjacent in the true MAG.
    """
    hidden = set(latent)
    observed = [n for n in dag.names if n not in hidden]
    obs = dag.indices(observed)
    anc = ancestor_matrix(dag)[np.ix_(obs, obs)]  # [u, v]: u is an ancestor of v
    mag_adj = dag_to_mag(dag, sorted(hidden)).restrict(observed).adjacency()
    direct = dag.directed()[np.ix_(obs, obs)]
    parts = rng.random(4) < 0.5
    if not parts.any():
        parts[rng.integers(4)] = True
    order = [n for n in dag.topological_order() if n not in hidden]
    tiers = tiers_from_order(order, int(rng.integers(2, 5)), rng) if parts[0] else []

    def pick(mask: np.ndarray) -> list[list[str]]:
        cells = np.argwhere(mask)
        if cells.size == 0:
            return []
        rows = rng.choice(len(cells), size=min(size, len(cells)), replace=False)
        return [[observed[i] for i in cells[r]] for r in sorted(rows.tolist())]

    off = ~np.eye(len(obs), dtype=bool)
    return Knowledge(
        tiers=tiers,
        forbidden=pick(~anc & off) if parts[1] else [],
        required=pick(direct) if parts[2] else [],
        forbidden_adjacent=pick(np.triu(~mag_adj & off, 1)) if parts[3] else [],
    )


def informative(marks: NDArray[np.int8]) -> NDArray[np.bool_]:
    """``[i, j]``: the mark at ``j`` says something: not a circle, and not an end of an
    undirected ``---`` edge (a CPDAG's unknown direction; a PAG without selection bias
    has none)."""
    undirected = (marks == TAIL) & (marks.T == TAIL)
    return (marks != NONE) & (marks != CIRCLE) & ~undirected


def wrong_marks(learned: Graph, mag: Graph) -> list[str]:
    """The learned graph's informative marks (:func:`informative`) that contradict
    ``mag`` (a MAG, or a DAG for PC), and its extra or missing adjacencies, as text."""
    learned = learned.restrict(mag.names)
    out = []
    lm, tm = learned.marks, mag.marks
    told = informative(lm)
    for i, j in np.argwhere((lm != NONE) | (tm != NONE)).tolist():
        a, b = mag.names[i], mag.names[j]
        if (lm[i, j] == NONE) != (tm[i, j] == NONE):
            if i < j:
                out.append(f"adjacency {a} - {b}: learned {lm[i, j] != NONE}")
        elif told[i, j] and lm[i, j] != tm[i, j]:
            out.append(f"mark at {b} on {a} - {b}: learned {lm[i, j]}, true {tm[i, j]}")
    return out


def lost_marks(with_knowledge: Graph, without: Graph) -> list[str]:
    """The informative marks of ``without`` (:func:`informative`) that ``with_knowledge``
    does not have."""
    with_knowledge = with_knowledge.restrict(without.names)
    wm, om = with_knowledge.marks, without.marks
    lost = informative(om) & ~(informative(wm) & (wm == om))
    return [f"mark at {without.names[j]} on {without.names[i]}" for i, j in np.argwhere(lost)]


@dataclass(frozen=True)
class Checked:
    """What :func:`check_learner` found on one case.

    Attributes
    ----------
    wrong
        Marks or adjacencies of the learned graph with knowledge that contradict the
        truth (the MAG; the DAG for PC).
    lost
        Informative marks of the graph without knowledge missing with it.
    unknown_without, unknown_with
        Marks not informative (:func:`informative`) without and with knowledge.
    tests_without, tests_with
        The CI tests of the two runs.
    """

    wrong: list[str]
    lost: list[str]
    unknown_without: int
    unknown_with: int
    tests_without: int
    tests_with: int


def check_learner(
    learner: str, dag: Graph, latent: list[str], knowledge: Knowledge, prune_sets: Prune = False
) -> Checked:
    """Run ``learner`` (``"fci"``, ``"rfci"`` or ``"pc"``) with the oracle of ``dag`` (and
    ``latent``), without and with ``knowledge`` (and ``prune_sets``), and compare with
    the truth.

    FCI runs its complete search (``pds_depth=None``). RFCI may keep edges FCI removes
    (Colombo et al. 2012), so only its marks on the true MAG's edges are judged.
    """
    observed = [n for n in dag.names if n not in set(latent)]
    if learner == "fci":
        plain = fci(OracleTest(dag, latent), pds_depth=None)
        told = fci(
            OracleTest(dag, latent), pds_depth=None, knowledge=knowledge, prune_sets=prune_sets
        )
    else:
        learn = {"pc": pc, "rfci": rfci}[learner]
        plain = learn(OracleTest(dag, latent))
        told = learn(OracleTest(dag, latent), knowledge=knowledge, prune_sets=prune_sets)
    truth = dag.restrict(observed) if learner == "pc" else dag_to_mag(dag, latent)
    judged = told.graph
    if learner == "rfci":
        keep = truth.adjacency()
        judged = Graph(truth.names, np.where(keep, judged.restrict(truth.names).marks, NONE))
    return Checked(
        wrong=wrong_marks(judged, truth),
        lost=lost_marks(told.graph, plain.graph),
        unknown_without=int(np.sum(~informative(plain.graph.marks) & (plain.graph.marks != NONE))),
        unknown_with=int(np.sum(~informative(told.graph.marks) & (told.graph.marks != NONE))),
        tests_without=plain.n_tests,
        tests_with=told.n_tests,
    )


def reachable_graph(
    dag: Graph, latent: Iterable[str], knowledge: Knowledge | None, learner: str
) -> Graph:
    """The graph ``learner`` outputs from a perfect CI test of ``dag`` (``latent``
    unobserved) and ``knowledge``: the most it can know, to score a learned graph against.

    ``"fci"`` (or ``"rfci"``): the true MAG's skeleton with circles, R0 with the MAG's
    separating sets (``An({x, y})``, as :func:`~fedstruct.graphs.pag.mag_to_pag`), the
    marks the knowledge implies (:func:`~fedstruct.discovery.background.orient_pag`),
    then R1-R4, R8-R10: the true PAG with the knowledge applied, in the order
    :func:`~fedstruct.discovery.fci.fci` applies it (Andrews, Spirtes & Cooper 2020
    show that for tiers this is the most a sound learner can orient). ``"pc"`` (no
    latent variable): the DAG's skeleton, the edges the knowledge directs
    (:func:`~fedstruct.discovery.background.orient_pdag`), its v-structures, then Meek's
    R1-R4: the CPDAG, or the maximally oriented PDAG with knowledge (Meek 1995).
    Without knowledge these are the true PAG and the CPDAG.

    Raises
    ------
    ConfigError
        For another ``learner``, or ``latent`` variables with ``"pc"``.
    """
    hidden = sorted(set(latent))
    if learner == "pc":
        if hidden:
            raise ConfigError("reachable_graph: PC assumes no latent variable; pass latent=[]")
        return _reachable_pdag(dag, knowledge)
    if learner not in ("fci", "rfci"):
        raise ConfigError(unknown_choice_message("learner", learner, ["fci", "rfci", "pc"]))
    mag = dag_to_mag(dag, hidden)
    anc = ancestor_matrix(mag)

    def sepset_contains(x: int, y: int, z: int) -> bool:
        return bool(anc[z, x] or anc[z, y])

    marks = np.where(mag.marks != NONE, CIRCLE, NONE).astype(np.int8)
    orient_colliders(marks, sepset_contains)
    rules = as_rules(knowledge, mag.names)
    if rules is not None:
        orient_pag(marks, rules)
    apply_rules(marks, sepset_contains)
    return mag.with_marks(marks)


def _reachable_pdag(dag: Graph, knowledge: Knowledge | None) -> Graph:
    """PC's graph from a perfect test (:func:`reachable_graph`)."""
    skeleton = dag.adjacency()
    parent = dag.marks == ARROW  # [p, c]: the mark at c on p - c is an arrowhead
    marks = np.where(skeleton, TAIL, NONE).astype(np.int8)
    rules = as_rules(knowledge, dag.names)
    if rules is not None:
        orient_pdag(marks, rules)
    for c in range(dag.n_nodes):
        parents = np.flatnonzero(parent[:, c]).tolist()
        for k, a in enumerate(parents):
            for b in parents[k + 1 :]:
                if not skeleton[a, b]:
                    marks[a, c] = marks[b, c] = ARROW
                    marks[c, a] = marks[c, b] = TAIL
    meek_rules(marks, rule_4=rules is not None)
    return dag.with_marks(marks)
