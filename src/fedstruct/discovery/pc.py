"""PC: a CPDAG from the adjacency search, the v-structures and Meek's rules.

Spirtes, Glymour & Scheines (2000), §5.4.2 (steps C-D); orientation rules of Meek
(1995), "Causal inference and causal explanation with background knowledge", UAI:

1. adjacency search (:func:`~fedstruct.discovery.skeleton.adjacency_search`),
   every edge undirected (``---``, tails at both ends);
2. every unshielded triple ``x - y - z`` with ``y`` not in ``sepset(x, z)`` becomes
   ``x -> y <- z``; an edge already directed out of ``y`` (a conflict between two
   v-structures, possible with data) is left as it is, so the first triple in index
   order wins;
3. Meek's R1-R3 to a fixpoint:

   - R1: ``a -> b - c``, ``a``, ``c`` not adjacent => ``b -> c``;
   - R2: ``a -> c -> b`` and ``a - b`` => ``a -> b``;
   - R3: ``c -> b <- d``, ``a - c``, ``a - d``, ``a - b``, ``c``, ``d`` not adjacent
     => ``a -> b``.

   R1-R3 are complete when the only prior knowledge is the v-structures (Meek 1995);
   Meek's R4 is needed only with background knowledge.

With background knowledge (``knowledge=``, docs/knowledge.md) the adjacency search
skips what the knowledge settles (:func:`~fedstruct.discovery.skeleton.adjacency_search`),
the pairs it removed get a separating set where a rule needs one
(:func:`~fedstruct.discovery.background.separate_removed_pairs`), every edge whose
direction it fixes is directed before step 2
(:func:`~fedstruct.discovery.background.orient_pdag`; step 2 never reverses a directed
edge), and step 3 adds Meek's R4:

   - R4: ``c -> d -> b``, ``a - c``, ``a - b``, ``a`` adjacent to ``d``, ``c``, ``b`` not
     adjacent => ``a -> b``.

Orienting the knowledge and closing under R1-R4 is sound and complete for knowledge
consistent with the pattern (Meek 1995, §3-4).

With a perfect CI oracle the output is the CPDAG of the true DAG (Spirtes et al.
2000, §5.4.2; Meek 1995).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import PHASE, orient_pdag, separate_removed_pairs
from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.result import LocalResult
from fedstruct.discovery.search import start_search
from fedstruct.graphs.graph import ARROW, NONE, TAIL

__all__ = ["meek_rules", "pc"]

Marks = NDArray[np.int8]


def _orient(m: Marks, a: int, b: int) -> None:
    m[a, b], m[b, a] = ARROW, TAIL


def _orient_v_structures(m: Marks, evidence: Evidence) -> None:
    adj = m != NONE
    for y in range(m.shape[0]):
        nbrs = np.flatnonzero(adj[y]).tolist()
        for k, x in enumerate(nbrs):
            for z in nbrs[k + 1 :]:
                if adj[x, z] or evidence.sepset_contains(x, z, y):
                    continue
                for end in (x, z):
                    if m[y, end] != ARROW:  # not already y -> end
                        _orient(m, end, y)


def meek_rules(marks: Marks, rule_4: bool = False) -> dict[str, int]:
    """Apply Meek's R1-R3, and R4 if ``rule_4`` (module docstring), to a PDAG's marks,
    in place.

    Directed edges are ``-->``, undirected ones have tails at both ends. Candidates
    are scanned in index order and re-checked before each orientation.

    Returns
    -------
    dict
        How often each rule fired (``"R4"`` only with ``rule_4``).
    """
    m = marks
    counts = {"R1": 0, "R2": 0, "R3": 0} | ({"R4": 0} if rule_4 else {})
    changed = True
    adj = m != NONE  # orientation never changes adjacencies
    while changed:
        changed = False
        for b, c in np.argwhere((m == TAIL) & (m.T == TAIL)).tolist():
            if m[b, c] != TAIL or m[c, b] != TAIL:
                continue
            into_b = (m[:, b] == ARROW) & (m[b] == TAIL)  # a -> b
            # R1: a -> b - c with a, c not adjacent.
            if np.any(into_b & ~adj[c]):
                _orient(m, b, c)
                counts["R1"] += 1
                changed = True
                continue
            # R2: b -> k -> c with b - c.
            out_b = (m[b] == ARROW) & (m[:, b] == TAIL)
            into_c = (m[:, c] == ARROW) & (m[c] == TAIL)
            if np.any(out_b & into_c):
                _orient(m, b, c)
                counts["R2"] += 1
                changed = True
                continue
            # R3: k -> c <- l, b - k, b - l, k, l not adjacent, b - c.
            und_b = (m[b] == TAIL) & (m[:, b] == TAIL)
            side = np.flatnonzero(und_b & into_c)
            if side.size >= 2:
                sub = ~adj[np.ix_(side, side)]
                np.fill_diagonal(sub, False)
                if sub.any():
                    _orient(m, b, c)
                    counts["R3"] += 1
                    changed = True
                    continue
            if rule_4 and _meek_rule_4(m, adj, b, c, und_b):
                _orient(m, b, c)
                counts["R4"] += 1
                changed = True
    return counts


def _meek_rule_4(
    m: Marks, adj: NDArray[np.bool_], b: int, c: int, und_b: NDArray[np.bool_]
) -> bool:
    """Meek's R4 for ``b - c``: some ``k -> l -> c`` with ``b - k``, ``b`` adjacent to
    ``l``, ``k`` and ``c`` not adjacent."""
    into_c = np.flatnonzero((m[:, c] == ARROW) & (m[c] == TAIL) & adj[b])  # l
    starts = np.flatnonzero(und_b & ~adj[c])  # k
    starts = starts[starts != c]
    if into_c.size == 0 or starts.size == 0:
        return False
    block = (m[np.ix_(starts, into_c)] == ARROW) & (m[np.ix_(into_c, starts)].T == TAIL)
    return bool(block.any())


def pc(
    data: CITest | DataLike,
    *,
    alpha: float = 0.05,
    test: str = "auto",
    depth: int | None = None,
    stable: bool = True,
    progress: str | None = None,
    knowledge: Knowledge | None = None,
    prune_sets: bool = False,
) -> LocalResult:
    """Learn a CPDAG with PC (module docstring).

    Every test belongs to the phase ``"adjacency"`` of ``tests_by_phase`` (step 1),
    but the separating sets searched for pairs the knowledge removed
    (``"knowledge_sepsets"``).

    Parameters
    ----------
    data, alpha, test, stable, progress
        The data (or a :class:`CITest`, reused with its cache) and the adjacency
        search's options, as in
        :func:`~fedstruct.discovery.search.start_search`.
    depth
        Largest conditioning set; ``None`` (default): no bound.
    knowledge
        Background knowledge (:class:`~fedstruct.discovery.knowledge.Knowledge`,
        module docstring); ``None`` (default): none, the same run as before it existed.
    prune_sets
        With ``knowledge``, condition each pair only on the variables that may be its
        ancestors (fewer tests; the same result with a perfect test, but on a sample
        it may keep edges a wider search removes: docs/knowledge.md). Default ``False``.

    Returns
    -------
    LocalResult
        The CPDAG (``graph``; with knowledge a maximally oriented PDAG), separating
        sets, per-pair p-values and the CI test.

    Raises
    ------
    ConfigError, DataError, NonFiniteDataError
        As :func:`~fedstruct.discovery.search.start_search`.
    KnowledgeError, UnknownVariableError
        For knowledge that contradicts itself or names another variable.
    """
    search = start_search(
        data,
        alpha=alpha,
        test=test,
        depth=depth,
        stable=stable,
        progress=progress,
        knowledge=knowledge,
        prune_sets=prune_sets,
        latent_free=True,
    )
    rules = search.knowledge
    marks = np.where(search.skeleton, TAIL, NONE).astype(np.int8)
    if rules is not None:
        search.evidence.phase(PHASE)
        separate_removed_pairs(
            search.evidence, search.skeleton, rules, latent_free=True, depth=depth
        )
        orient_pdag(marks, rules)
    _orient_v_structures(marks, search.evidence)
    meek_rules(marks, rule_4=rules is not None)
    return search.result("pc", marks)
