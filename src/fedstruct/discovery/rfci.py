"""RFCI: Really Fast Causal Inference, without selection bias.

Colombo, Maathuis, Kalisch & Richardson (2012), "Learning high-dimensional directed
acyclic graphs with latent and selection variables", Ann. Statist. 40(1), §3:

1. adjacency search (as PC/FCI), every edge ``o-o``;
2. the unshielded triples (RFCI's step 2): for every unshielded triple
   ``<x, y, z>`` with ``S = sepset(x, z) \\ {y}``, test ``x ⊥ y | S`` and ``z ⊥ y | S``. A
   found independence removes that edge, with a *minimal* separating set searched
   among the subsets of ``S`` by increasing size; the triangles through the removed
   edge become new unshielded triples, checked in turn, and the triples that
   contained it are dropped. The triples whose two edges survive are oriented as
   v-structures ``x *-> y <-* z`` when ``y`` is not in ``sepset(x, z)`` (circles only
   become arrowheads);
3. the orientation (RFCI's step 3): R1-R3 and R8-R10 of Zhang (2008) as in FCI, and
   R4 only after checking its discriminating path: for a minimal discriminating path
   ``<d, ..., a, b, c>`` for ``b``, every edge ``u - v`` on it is tested given the
   non-empty subsets of ``sepset(d, c) \\ {u, v}``; an independence removes the edge
   (minimal separating set, new triples through step 2) and the search starts again,
   otherwise R4 orients with ``sepset(d, c)``.

RFCI skips FCI's possible-D-SEP phase, so its skeleton may keep edges FCI would
remove, but every arrowhead and tail it outputs is correct with a perfect oracle
(Colombo et al. 2012, §3), and without latent variables it returns FCI's
PAG.

With background knowledge (``knowledge=``; docs/knowledge.md): step 1 skips what it
settles (as FCI), required edges are never removed in steps 2-3, the pairs it removed
get a separating set where a rule needs one before step 2
(:func:`~fedstruct.discovery.background.separate_removed_pairs`, with Possible-D-SEP
as in FCI), and the marks it implies are set after step 2's v-structures
(:func:`~fedstruct.discovery.background.orient_pag`), before step 3.

Implementation of step 3: :func:`fedstruct.graphs.orientation.apply_rules` runs R1-R4
and R8-R10; its only use of the separating-set callback is R4's. RFCI passes a
callback that interrupts ``apply_rules`` when R4 is about to fire, applies its own
checked R4 once, and calls ``apply_rules`` again (the marks already set are kept), until
``apply_rules`` finishes without asking. Every interruption is followed by one
orientation or one edge removal, so this terminates.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import PHASE, orient_pag, separate_removed_pairs
from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.fci import circle_marks
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.result import LocalResult
from fedstruct.discovery.search import separate_by_subset, start_search
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL
from fedstruct.graphs.orientation import apply_rules, orient_colliders
from fedstruct.graphs.orientation import discriminating_path as minimal_discriminating_path

__all__ = ["minimal_discriminating_path", "rfci", "unshielded_triples"]

Marks = NDArray[np.int8]
Triple = tuple[int, int, int]


def unshielded_triples(marks: Marks) -> list[Triple]:
    """All unshielded triples ``(x, y, z)``: ``x < z`` non-adjacent, both adjacent to ``y``.

    Sorted lexicographically.
    """
    adj = marks != NONE
    out = []
    for y in range(adj.shape[0]):
        nbrs = np.flatnonzero(adj[y]).tolist()
        for k, x in enumerate(nbrs):
            for z in nbrs[k + 1 :]:
                if not adj[x, z]:
                    out.append((x, y, z))
    out.sort()
    return out


class _R4Requested(Exception):
    """Raised by the callback when ``apply_rules`` is about to apply R4."""


def _interrupt(x: int, y: int, z: int) -> bool:
    raise _R4Requested


class _RFCI:
    """The state of one RFCI run after the adjacency search: marks and evidence."""

    def __init__(self, evidence: Evidence, marks: Marks, fixed: NDArray[np.bool_] | None) -> None:
        self.evidence = evidence
        self.marks = marks
        self.fixed = fixed  # required pairs: never removed

    def _removable(self, u: int, v: int) -> bool:
        return self.fixed is None or not self.fixed[u, v]

    # ---------------------------------------------- step 2: unshielded triples
    def check_triples(self, triples: list[Triple]) -> None:
        """Check unshielded triples, remove edges, orient the surviving v-structures."""
        m = self.marks
        queue = list(triples)
        passed: list[Triple] = []
        k = 0
        while k < len(queue):
            x, y, z = queue[k]
            k += 1
            if not self._unshielded(x, y, z):
                continue
            sep = tuple(v for v in self.evidence.sepsets.get((x, z), ()) if v != y)
            removed = False
            if sep:  # given the empty set the edges are known to be dependent
                for r in (x, z):
                    if (
                        m[r, y] != NONE
                        and self._removable(r, y)
                        and self._remove_if_separated(r, y, sep, queue)
                    ):
                        removed = True
            if not removed:
                passed.append((x, y, z))
        self.evidence.ci_test.barrier()  # no orientation from a provisional answer
        for x, y, z in passed:
            if self._unshielded(x, y, z) and not self.evidence.sepset_contains(x, z, y):
                for end in (x, z):
                    if m[end, y] == CIRCLE:
                        m[end, y] = ARROW

    def _unshielded(self, x: int, y: int, z: int) -> bool:
        m = self.marks
        return bool(m[x, y] != NONE and m[z, y] != NONE and m[x, z] == NONE)

    def _remove_if_separated(
        self, u: int, v: int, sep: tuple[int, ...], queue: list[Triple]
    ) -> bool:
        """If ``u ⊥ v | sep``, remove ``u - v`` with a minimal separating subset of ``sep``
        and queue the triples through it."""
        if not self.evidence.independent(u, v, sep)[0]:
            return False
        if separate_by_subset(self.evidence, u, v, sep) is not None:  # sep itself at the latest
            queue.extend(self._remove_edge(u, v))
        return True

    def _remove_edge(self, u: int, v: int) -> list[Triple]:
        """Remove ``u - v``; return the triples ``(lo, w, hi)`` it leaves unshielded.

        ``lo < hi`` are ``u`` and ``v``; ``w`` runs over their common neighbours, whose
        triangles through the removed edge become unshielded triples (Colombo et al.
        2012, §3, step 2).
        """
        m = self.marks
        m[u, v] = m[v, u] = NONE
        lo, hi = min(u, v), max(u, v)
        common = np.flatnonzero((m[lo] != NONE) & (m[hi] != NONE)).tolist()
        return [(lo, w, hi) for w in common]

    # --------------------------------------------------- step 3: orientation
    def orient(self) -> None:
        """R1-R3, R8-R10 via ``apply_rules``; R4 after checking its discriminating path."""
        while True:
            try:
                apply_rules(self.marks, _interrupt)
                return
            except _R4Requested:
                if not self._checked_rule_4():
                    # Cannot happen (same search as apply_rules); finish unchecked.
                    apply_rules(self.marks, self.evidence.sepset_contains)
                    return

    def _checked_rule_4(self) -> bool:
        """Apply R4 once after checking the path's edges; ``True`` if anything changed."""
        m = self.marks
        for b, c in np.argwhere(m.T == CIRCLE).tolist():  # b o-* c
            for a in np.flatnonzero((m[b] == ARROW) & (m[:, c] == ARROW) & (m[c] == TAIL)).tolist():
                path = minimal_discriminating_path(m, a, b, c)
                if path is None:
                    continue
                d = path[0]
                if self._edge_removed_on(path):
                    return True
                if self.evidence.sepset_contains(min(d, c), max(d, c), b):
                    m[c, b], m[b, c] = TAIL, ARROW
                else:
                    m[a, b], m[c, b], m[b, c] = ARROW, ARROW, ARROW
                return True
        return False

    def _edge_removed_on(self, path: list[int]) -> bool:
        """Test each edge of the path given subsets of ``sepset(d, c)``; remove the first
        separated one (then check the new unshielded triples)."""
        d, c = path[0], path[-1]
        total = self.evidence.sepsets.get((min(d, c), max(d, c)), ())
        for u, v in pairwise(path):
            if not self._removable(u, v):
                continue
            sep = tuple(s for s in total if s != u and s != v)
            found = separate_by_subset(self.evidence, u, v, sep)
            self.evidence.ci_test.barrier()  # R4 reads this answer at once
            if found is not None:
                self.check_triples(self._remove_edge(u, v))
                return True
        return False


def rfci(
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
    """Learn a PAG with RFCI (module docstring).

    ``tests_by_phase`` counts the tests of steps 1, 2 and 3 under ``"adjacency"``,
    ``"unshielded_triples"`` and ``"discriminating_paths"``, and with knowledge the
    separating sets searched for the pairs it removed under ``"knowledge_sepsets"``.

    Parameters
    ----------
    data, alpha, test, stable, progress
        The data (or a :class:`CITest`, reused with its cache) and the adjacency
        search's options, as in
        :func:`~fedstruct.discovery.search.start_search`.
    depth
        Largest conditioning set of the adjacency search; ``None`` (default): none.
        Steps 2-3 try the subsets of its separating sets, so they stay within it.
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
        The PAG, separating sets, per-pair p-values and the CI test.

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
    )
    rules = search.knowledge
    if rules is not None:
        first_marks = circle_marks(search.skeleton)
        orient_colliders(first_marks, search.evidence.sepset_contains)
        search.evidence.phase(PHASE)
        separate_removed_pairs(
            search.evidence,
            search.skeleton,
            rules,
            latent_free=False,
            depth=depth,
            pds_marks=first_marks,
            pds_depth=depth,
        )
    run = _RFCI(
        search.evidence, circle_marks(search.skeleton), None if rules is None else rules.fixed
    )
    search.evidence.phase("unshielded_triples")
    run.check_triples(unshielded_triples(run.marks))
    if rules is not None:
        orient_pag(run.marks, rules)
    search.evidence.phase("discriminating_paths")
    run.orient()
    return search.result("rfci", run.marks)
