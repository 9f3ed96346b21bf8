"""FCI orientation rules R0-R4 and R8-R10 on a mutable endpoint-mark matrix.

Zhang (2008), "On the completeness of orientation rules for causal discovery in the
presence of latent confounders and selection bias", Artificial Intelligence 172,
Sections 3-4. Selection bias is assumed absent, so the rules R5-R7 (which produce
or use undirected edges, i.e. selection variables) are not part of this module;
without selection bias, R0-R4 and R8-R10 are sound and complete (Zhang 2008,
Section 4): applied to the skeleton of a MAG with a perfect oracle they produce its
PAG.

Marks follow :class:`fedstruct.graphs.graph.Graph`: ``marks[i, j]`` is the mark at
``j`` on the edge between ``i`` and ``j`` (``NONE``, ``TAIL``, ``ARROW``,
``CIRCLE``). In the rule statements ``*`` is a wildcard mark, so ``a *-> b`` only
says ``marks[a, b] == ARROW``.

Separating-set knowledge enters through one callback, ``sepset_contains(x, y, z)``:
"``z`` is in the separating set found for the non-adjacent pair ``x``, ``y``". It is
always called with ``x < y``.

Every rule application turns at least one circle into a tail or arrowhead, so the
loops terminate. Each pass scans candidates in index order and re-checks a
candidate's antecedent on the current marks before applying it, so the result is a
valid sequential application of the rules.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import GraphError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL

__all__ = [
    "RULES",
    "SepsetContains",
    "apply_rules",
    "discriminating_path",
    "orient_colliders",
]

SepsetContains = Callable[[int, int, int], bool]
"""``sepset_contains(x, y, z)``: is ``z`` in the separating set of ``x`` and ``y`` (``x < y``)."""

RULES: tuple[str, ...] = ("R1", "R2", "R3", "R4", "R8", "R9", "R10")
"""The rules :func:`apply_rules` runs, in the order it runs them."""

Marks = NDArray[np.int8]


def _check_marks(marks: Marks) -> None:
    if not isinstance(marks, np.ndarray) or marks.ndim != 2 or marks.shape[0] != marks.shape[1]:
        raise GraphError("orientation rules need a square numpy array of endpoint marks")
    if not marks.flags.writeable:
        raise GraphError(
            "the mark matrix is read-only; pass graph.marks.copy() and wrap the result "
            "with graph.with_marks(...)"
        )
    if marks.size and (marks.min() < NONE or marks.max() > CIRCLE):
        raise GraphError("mark values must be 0 (none), 1 (tail), 2 (arrow) or 3 (circle)")
    if not np.array_equal(marks != NONE, marks.T != NONE) or np.any(np.diagonal(marks)):
        raise GraphError(
            "mark matrix is not a graph: every edge needs a mark at both ends and the "
            "diagonal must be 0"
        )


def _any_product(a: NDArray[np.bool_], b: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Boolean matrix product: ``[i, j]`` iff some ``k`` has ``a[i, k]`` and ``b[k, j]``."""
    return (a.astype(np.float32) @ b.astype(np.float32)) > 0


def _directed(m: Marks) -> NDArray[np.bool_]:
    """``[i, j]`` iff ``i -> j``."""
    return (m == ARROW) & (m.T == TAIL)


def _not_adjacent(m: Marks) -> NDArray[np.bool_]:
    """``[i, j]`` iff ``i != j`` and ``i``, ``j`` share no edge."""
    out = m == NONE
    np.fill_diagonal(out, False)
    return out


# ------------------------------------------------------------------------ R0
def orient_colliders(marks: Marks, sepset_contains: SepsetContains) -> int:
    """Rule R0: orient unshielded colliders, in place.

    Zhang (2008), Section 3, R0: for every unshielded triple ``x *-* z *-* y`` (``x``
    and ``y`` not adjacent) with ``z`` not in the separating set of ``x`` and ``y``,
    orient ``x *-> z <-* y``. Only circle marks at ``z`` become arrowheads; tails are
    never overwritten.

    Parameters
    ----------
    marks
        Writable ``(n, n)`` int8 mark matrix, edited in place.
    sepset_contains
        The separating-set callback (module docstring).

    Returns
    -------
    int
        Number of triples that changed at least one mark.

    Raises
    ------
    GraphError
        If ``marks`` is not a writable, well-formed mark matrix.
    """
    _check_marks(marks)
    adj = marks != NONE
    count = 0
    for z in range(marks.shape[0]):
        nbrs = np.flatnonzero(adj[z]).tolist()
        for k, x in enumerate(nbrs):
            for y in nbrs[k + 1 :]:
                if adj[x, y] or sepset_contains(x, y, z):
                    continue
                changed = False
                for end in (x, y):
                    if marks[end, z] == CIRCLE:
                        marks[end, z] = ARROW
                        changed = True
                count += changed
    return count


# --------------------------------------------------------------------- R1-R3
def _rule_1(m: Marks) -> int:
    """R1: ``a *-> b o-* c``, ``a``, ``c`` not adjacent => ``b -> c``."""
    arrow = m == ARROW
    cand = _any_product(arrow.T, _not_adjacent(m)) & (m.T == CIRCLE)  # [b, c]
    count = 0
    for b, c in np.argwhere(cand).tolist():
        if m[c, b] != CIRCLE:
            continue
        # a = c is excluded because m[c, b] is a circle, not an arrowhead.
        if not np.any((m[:, b] == ARROW) & (m[:, c] == NONE)):
            continue
        m[c, b], m[b, c] = TAIL, ARROW
        count += 1
    return count


def _rule_2(m: Marks) -> int:
    """R2: ``a -> b *-> c`` or ``a *-> b -> c``, and ``a *-o c`` => ``a *-> c``."""
    head = m == ARROW
    d = _directed(m)
    cand = (_any_product(d, head) | _any_product(head, d)) & (m == CIRCLE)  # [a, c]
    count = 0
    for a, c in np.argwhere(cand).tolist():
        if m[a, c] != CIRCLE:
            continue
        a_out = m[a] == ARROW  # a *-> b
        a_dir = a_out & (m[:, a] == TAIL)  # a -> b
        into_c = m[:, c] == ARROW  # b *-> c
        b_dir_c = into_c & (m[c] == TAIL)  # b -> c
        if np.any((a_dir & into_c) | (a_out & b_dir_c)):
            m[a, c] = ARROW
            count += 1
    return count


def _rule_3(m: Marks) -> int:
    """R3: ``a *-> b <-* g``, ``a *-o t o-* g``, ``a``, ``g`` not adjacent, ``t *-o b``
    => ``t *-> b``."""
    count = 0
    for t, b in np.argwhere(m == CIRCLE).tolist():
        if m[t, b] != CIRCLE:
            continue
        # Candidates for a and g: a *-> b and a *-o t.
        side = np.flatnonzero((m[:, b] == ARROW) & (m[:, t] == CIRCLE))
        if side.size < 2:
            continue
        sub = m[np.ix_(side, side)] == NONE
        np.fill_diagonal(sub, False)
        if sub.any():
            m[t, b] = ARROW
            count += 1
    return count


# ------------------------------------------------------------------------ R4
def discriminating_path(m: Marks, a: int, b: int, c: int) -> list[int] | None:
    """A shortest discriminating path ``[d, ..., a, b, c]`` for ``b``, or ``None``.

    Zhang (2008), Section 3, R4: the path has at least three edges, ``d`` is not
    adjacent to ``c``, and every node strictly between ``d`` and ``b`` is a collider on
    the path and a parent of ``c``. The caller guarantees ``a <-* b`` and ``a -> c``.
    Breadth-first search backwards from ``a`` over such colliders (Colombo et al. 2012's
    "minimal" discriminating path, pcalg's ``minDiscrPath``); the conditions only
    involve single edges and single nodes, so the shortest walk found is a path and
    the search is exact. R4 here and RFCI's checked R4 both use it.
    """
    parent_of_c = (m[:, c] == ARROW) & (m[c] == TAIL)
    adj_c = m[c] != NONE
    previous = {a: b}
    seen = {a, b, c}
    queue = deque([a])
    while queue:
        v = queue.popleft()
        for w in np.flatnonzero(m[:, v] == ARROW).tolist():  # w *-> v
            if w in seen:
                continue
            if not adj_c[w]:
                path = [w]
                node = v
                while node != b:
                    path.append(node)
                    node = previous[node]
                return [*path, b, c]
            if parent_of_c[w] and m[v, w] == ARROW:  # w is a collider: ... *-> w <-* v
                seen.add(w)
                previous[w] = v
                queue.append(w)
    return None


def _rule_4(m: Marks, sepset_contains: SepsetContains) -> int:
    """R4: discriminating path ``<d, ..., a, b, c>`` for ``b`` with ``b o-* c``.

    If ``b`` is in the separating set of ``d`` and ``c``, orient ``b -> c``; otherwise
    orient ``a <-> b <-> c`` (Zhang 2008, R4). Among several discriminating paths the
    one found first (lowest ``a``, then shortest) decides.
    """
    head = m == ARROW
    cand = _any_product(head, _directed(m)) & (m.T == CIRCLE)  # [b, c]: b *-> a -> c exists
    count = 0
    for b, c in np.argwhere(cand).tolist():
        if m[c, b] != CIRCLE:
            continue
        # a with a <-* b (m[b, a] is an arrowhead) and a -> c.
        for a in np.flatnonzero((m[b] == ARROW) & (m[:, c] == ARROW) & (m[c] == TAIL)).tolist():
            path = discriminating_path(m, a, b, c)
            if path is None:
                continue
            d = path[0]
            if sepset_contains(min(d, c), max(d, c), b):
                m[c, b], m[b, c] = TAIL, ARROW
            else:
                m[a, b], m[c, b], m[b, c] = ARROW, ARROW, ARROW
            count += 1
            break
    return count


# -------------------------------------------------------------------- R8-R10
def _potentially_directed(m: Marks) -> NDArray[np.bool_]:
    """``[u, v]`` iff the edge ``u - v`` is not into ``u`` and not out of ``v``.

    Zhang (2008), Section 3: such edges are the steps of a potentially directed
    (p.d.) path from ``u`` towards ``v`` (``u -> v``, ``u o-> v``, ``u o-o v``).
    """
    return (m != NONE) & (m.T != ARROW) & (m != TAIL)


class _UncoveredPdPaths:
    """Existence of uncovered potentially directed paths (Zhang 2008, R9 and R10).

    A path ``<v0, ..., vk>`` is *uncovered* if every ``v(i-1)`` and ``v(i+1)`` are not
    adjacent, and *p.d.* if every step ``vi - v(i+1)`` is p.d. Search state is the
    last step ``(u, v)``; a backward breadth-first search over steps first marks the
    steps from which the target is reachable by an uncovered p.d. *walk* (a
    polynomial over-approximation), then a depth-first search over simple paths,
    restricted to those steps, decides existence exactly.
    """

    def __init__(self, m: Marks) -> None:
        pd = _potentially_directed(m)
        self.adj = m != NONE
        self.out = [np.flatnonzero(row).tolist() for row in pd]
        self.into = [np.flatnonzero(col).tolist() for col in pd.T]
        self._good: dict[int, set[tuple[int, int]]] = {}

    def is_step(self, u: int, v: int) -> bool:
        return v in self.out[u]

    def _good_steps(self, target: int) -> set[tuple[int, int]]:
        good = self._good.get(target)
        if good is not None:
            return good
        good = {(u, target) for u in self.into[target]}
        queue = deque(good)
        while queue:
            v, w = queue.popleft()
            for u in self.into[v]:
                if u != w and not self.adj[u, w] and (u, v) not in good:
                    good.add((u, v))
                    queue.append((u, v))
        self._good[target] = good
        return good

    def exists(self, first: int, second: int, target: int) -> bool:
        """Is there an uncovered p.d. path ``<first, second, ..., target>``?

        ``second == target`` means the one-step path, which needs only the p.d. step.
        """
        if not self.is_step(first, second):
            return False
        if second == target:
            return True
        good = self._good_steps(target)
        if (first, second) not in good:
            return False
        on_path = {first, second}
        stack = [(first, second, iter(self.out[second]))]
        while stack:
            u, v, nexts = stack[-1]
            for w in nexts:
                if w in on_path or self.adj[u, w] or (v, w) not in good:
                    continue
                if w == target:
                    return True
                on_path.add(w)
                stack.append((v, w, iter(self.out[w])))
                break
            else:
                stack.pop()
                on_path.discard(v)
        return False


def _circle_arrow_edges(m: Marks) -> list[list[int]]:
    """All ``[a, c]`` with ``a o-> c``."""
    return np.argwhere((m == ARROW) & (m.T == CIRCLE)).tolist()


def _rule_8(m: Marks) -> int:
    """R8: ``a -> b -> c`` or ``a -o b -> c``, and ``a o-> c`` => ``a -> c``."""
    a_to_b = (m.T == TAIL) & ((m == ARROW) | (m == CIRCLE))  # [a, b]: a -> b or a -o b
    cand = _any_product(a_to_b, _directed(m)) & (m == ARROW) & (m.T == CIRCLE)
    count = 0
    for a, c in np.argwhere(cand).tolist():
        if m[c, a] != CIRCLE or m[a, c] != ARROW:
            continue
        step = (m[:, a] == TAIL) & ((m[a] == ARROW) | (m[a] == CIRCLE))
        if np.any(step & (m[:, c] == ARROW) & (m[c] == TAIL)):
            m[c, a] = TAIL
            count += 1
    return count


def _rule_9(m: Marks) -> int:
    """R9: ``a o-> c`` and an uncovered p.d. path ``<a, b, t, ..., c>`` with ``b``, ``c``
    not adjacent => ``a -> c``."""
    count = 0
    paths: _UncoveredPdPaths | None = None
    for a, c in _circle_arrow_edges(m):
        if m[c, a] != CIRCLE or m[a, c] != ARROW:
            continue
        if paths is None:
            paths = _UncoveredPdPaths(m)
        for b in paths.out[a]:
            if b != c and not paths.adj[b, c] and paths.exists(a, b, c):
                m[c, a] = TAIL
                paths = None  # marks changed: rebuild before the next search
                count += 1
                break
    return count


def _rule_10(m: Marks) -> int:
    """R10: ``a o-> c``, ``b -> c <- t``, uncovered p.d. paths ``p1`` from ``a`` to ``b`` and
    ``p2`` from ``a`` to ``t`` whose second nodes ``mu`` and ``omega`` are distinct and not
    adjacent => ``a -> c``."""
    count = 0
    paths: _UncoveredPdPaths | None = None
    for a, c in _circle_arrow_edges(m):
        if m[c, a] != CIRCLE or m[a, c] != ARROW:
            continue
        parents = np.flatnonzero((m[:, c] == ARROW) & (m[c] == TAIL)).tolist()
        if len(parents) < 2:
            continue
        if paths is None:
            paths = _UncoveredPdPaths(m)
        # reach[mu] = parents of c reachable by an uncovered p.d. path starting a, mu.
        reach = {mu: {t for t in parents if paths.exists(a, mu, t)} for mu in paths.out[a]}
        firsts = [mu for mu, ts in reach.items() if ts]
        found = any(
            not paths.adj[mu, om] and (len(reach[mu]) > 1 or reach[mu] != reach[om])
            for k, mu in enumerate(firsts)
            for om in firsts[k + 1 :]
        )
        if found:
            m[c, a] = TAIL
            paths = None  # marks changed: rebuild before the next search
            count += 1
    return count


# ----------------------------------------------------------------------- driver
def apply_rules(marks: Marks, sepset_contains: SepsetContains) -> dict[str, int]:
    """Apply R1-R4 and R8-R10 to a fixpoint, in place.

    Order (Zhang 2008, Section 4, without the selection-bias rules R5-R7): R1, R2,
    R3, R4 are applied, pass after pass, until none of them changes a mark; then R8,
    R9, R10 likewise; if R8-R10 changed anything, the whole sequence starts again
    (R8-R10 only turn circles into tails, which can enable R1-R4). It stops when no
    rule applies.

    Parameters
    ----------
    marks
        Writable ``(n, n)`` int8 mark matrix, usually after :func:`orient_colliders`.
    sepset_contains
        The separating-set callback used by R4 (module docstring).

    Returns
    -------
    dict
        How often each rule of :data:`RULES` was applied.

    Raises
    ------
    GraphError
        If ``marks`` is not a writable, well-formed mark matrix.
    """
    _check_marks(marks)
    counts = dict.fromkeys(RULES, 0)
    while True:
        while True:
            step = {
                "R1": _rule_1(marks),
                "R2": _rule_2(marks),
                "R3": _rule_3(marks),
                "R4": _rule_4(marks, sepset_contains),
            }
            for rule, k in step.items():
                counts[rule] += k
            if not any(step.values()):
                break
        tails = 0
        while True:
            step = {"R8": _rule_8(marks), "R9": _rule_9(marks), "R10": _rule_10(marks)}
            for rule, k in step.items():
                counts[rule] += k
            if not any(step.values()):
                break
            tails += sum(step.values())
        if not tails:
            return counts
