"""The adjacency search shared by PC, FCI and RFCI.

Spirtes, Glymour & Scheines (2000), *Causation, Prediction, and Search*, 2nd ed.,
§5.4.2 (PC, steps A-B), in the order-independent "PC-stable" form of Colombo &
Maathuis (2014), "Order-independent constraint-based causal structure learning",
JMLR 15:

    start from the complete graph; for l = 0, 1, 2, ...:
        a(x) <- adj(x) for every x                      (frozen for the level)
        for every pair x < y still adjacent, for side s in (x, y):
            for every S ⊆ a(s) \\ {x, y} with |S| = l:
                if X ⊥ Y | S: remove x - y, sepset(x, y) <- S, stop with this pair
    until no adjacent pair has |a(s) \\ {x, y}| >= l + 1, or l reaches ``depth``.

Each pair stops at its first independence (a pair is never tested again once
removed). The subsets of ``a(y)`` already tried from ``x``'s side are not repeated.
With ``stable=False`` the neighbour sets are read from the current graph at every
pair (the original, order-dependent PC); the skeleton may then depend on the
variable order, PC-stable's does not.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.evidence import Evidence, paused_gc
from fedstruct.discovery.knowledge import KnowledgeRules
from fedstruct.errors import ConfigError
from fedstruct.fl.progress import show_progress

__all__ = ["PROGRESS_EVERY", "WIDE", "adjacency_search", "check_depth", "cost_message"]

#: Variables from which a table is wide: the search says what it will cost first.
WIDE = 200
#: The fewest seconds between two plain progress lines (stderr not a terminal).
PROGRESS_EVERY = 10.0


def check_depth(depth: int | None, what: str = "depth") -> int:
    """``depth`` as an int bound (``None`` or ``-1`` = unlimited, returned as a large int).

    Raises
    ------
    ConfigError
        If ``depth`` is not ``None`` or an integer >= -1.
    """
    if depth is None:
        return 1 << 30
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < -1:
        raise ConfigError(f"{what} must be None, -1 (unlimited) or an integer >= 0, got {depth!r}")
    return 1 << 30 if depth == -1 else int(depth)


def adjacency_search(
    evidence: Evidence,
    *,
    depth: int | None = None,
    stable: bool = True,
    progress: str | None = None,
    knowledge: KnowledgeRules | None = None,
    latent_free: bool = False,
) -> NDArray[np.bool_]:
    """Run the adjacency search (module docstring); return the skeleton.

    Parameters
    ----------
    evidence
        Records the tests and the separating sets (and holds the CI test and alpha).
    depth
        Largest conditioning-set size tried; ``None`` (default) or ``-1``: no bound.
    stable
        PC-stable (default) or the original order-dependent PC.
    progress
        A label to show the search's progress under on stderr (pairs done at each
        conditioning-set size, :func:`~fedstruct.fl.progress.show_progress`), and,
        for a table of :data:`WIDE` variables or more, what it will cost before it
        starts; ``None`` (default): silent.
    knowledge
        Background knowledge (docs/knowledge.md): the pairs it makes non-adjacent
        (:meth:`KnowledgeRules.removed` with ``latent_free``) start removed, the
        required pairs are never tested, and a pair's conditioning sets draw only on
        the variables that may be its ancestors (:meth:`KnowledgeRules.pool`).
        ``None`` (default): none.
    latent_free
        The learner assumes no latent confounder (PC): see
        :meth:`KnowledgeRules.removed`.

    Returns
    -------
    numpy.ndarray
        Symmetric boolean adjacency matrix of the skeleton.
    """
    max_depth = check_depth(depth)
    if progress is not None and evidence.ci_test.n_variables >= WIDE:
        print(cost_message(progress, evidence.ci_test, depth), file=sys.stderr, flush=True)
    start = None if knowledge is None else ~knowledge.removed(latent_free)
    with paused_gc():
        return _adjacency_search(evidence, max_depth, stable, progress, knowledge, start)


def cost_message(label: str, ci_test: CITest, depth: int | None) -> str:
    """What the adjacency search over ``ci_test``'s variables will cost: the pairs
    tested given the empty set, and what follows (said before a wide table's search,
    which runs for minutes)."""
    d = ci_test.n_variables
    pairs = d * (d - 1) // 2
    bound = "no bound" if depth is None or depth == -1 else f"at most {depth}"
    rows = "" if ci_test.n_samples is None else f", {ci_test.n_samples:,} rows"
    return (
        f"{label}: {d:,} variables{rows}: {pairs:,} pairs to test given "
        f"the empty set, then every pair still adjacent given subsets of its neighbours "
        f"(conditioning sets: {bound}); this takes long on a wide table: a depth bound "
        f"(--set depth=1) or fewer columns cut the work"
    )


def _adjacency_search(
    evidence: Evidence,
    max_depth: int,
    stable: bool,
    progress: str | None,
    knowledge: KnowledgeRules | None = None,
    start: NDArray[np.bool_] | None = None,
) -> NDArray[np.bool_]:
    d = evidence.ci_test.n_variables
    adj = ~np.eye(d, dtype=bool)
    if start is not None:
        adj &= start
    fixed = None if knowledge is None else knowledge.fixed
    nbrs = [set(np.flatnonzero(adj[v]).tolist()) for v in range(d)]
    level = 0
    unconditional: dict[tuple[int, int], tuple[float, bool]] | None = None
    ci_test = evidence.ci_test
    while level <= max_depth:
        frozen = [sorted(s) for s in nbrs] if stable else None
        if frozen is not None:
            ci_test.prepare_level(level, frozen)
        busy = False
        ahead = np.triu(adj, 1).sum(axis=1).tolist()  # the pairs (x, y > x) of each x
        label = f"{progress}, depth {level}"
        with show_progress(label, sum(ahead), enabled=progress is not None, unit="pairs",
                           every=PROGRESS_EVERY) as bar:  # fmt: skip
            done = 0
            for x in range(d):
                for y in sorted(nbrs[x]):
                    if y <= x or y not in nbrs[x] or (fixed is not None and fixed[x, y]):
                        continue
                    ax = frozen[x] if frozen is not None else sorted(nbrs[x])
                    ay = frozen[y] if frozen is not None else sorted(nbrs[y])
                    cand_x = [v for v in ax if v != y]
                    cand_y = [v for v in ay if v != x]
                    if knowledge is not None:
                        pool = knowledge.pool(x, y)
                        cand_x = [v for v in cand_x if pool[v]]
                        cand_y = [v for v in cand_y if pool[v]]
                    if len(cand_x) < level and len(cand_y) < level:
                        continue
                    busy = True
                    if level == 0 and unconditional is None:
                        unconditional = _unconditional(evidence, nbrs, fixed)
                    found = _search_pair(evidence, x, y, cand_x, cand_y, level, unconditional)
                    if found is not None:
                        adj[x, y] = adj[y, x] = False
                        nbrs[x].discard(y)
                        nbrs[y].discard(x)
                done += ahead[x]
                bar.update(done)
        evidence.ci_test.barrier()  # the level's tests all computed before the next
        level += 1
        if not busy:
            break
        # Continue only if some adjacent pair can still be tested at the next level.
        if not any(len(nbrs[x]) - 1 >= level for x in range(d) if nbrs[x]):
            break
    ci_test.prepare_level(-1, ())
    return adj


def _search_pair(
    evidence: Evidence,
    x: int,
    y: int,
    cand_x: list[int],
    cand_y: list[int],
    level: int,
    unconditional: dict[tuple[int, int], tuple[float, bool]] | None = None,
) -> tuple[int, ...] | None:
    """Test ``x``, ``y`` given the ``level``-subsets of each side; record a separation.

    The sets go through :meth:`Evidence.first_independent` (batched counting, the same
    tests in the same order).
    """
    seen: set[tuple[int, ...]] = set()
    ci_test = evidence.ci_test
    for cand in (cand_x, cand_y):
        if len(cand) < level or ci_test.max_testable_size(x, y, cand) < level:
            continue
        if level == 0 and unconditional:  # the one test of level 0, computed for all pairs
            indep, p = evidence.independent(x, y, (), unconditional.get((x, y)))
            if indep:
                evidence.separate(x, y, (), p)
                return ()
            return None  # the other side's only set, (), was just tried
        asked = ci_test.provisional
        found = evidence.first_independent(x, y, _unseen(combinations(cand, level), seen), cand)
        if found is not None:
            return found
        if ci_test.provisional > asked and ci_test.ask_window is not None:
            return None  # this side's next sets are being gathered (CITest.barrier)
    return None


def _unconditional(
    evidence: Evidence, nbrs: list[set[int]], fixed: NDArray[np.bool_] | None = None
) -> dict[tuple[int, int], tuple[float, bool]]:
    """Level 0's tests (every adjacent pair given the empty set, but the ``fixed`` ones)
    computed in one batch (:meth:`CITest.compute_unconditional`), for the pairs not
    cached; empty if the test has no batched form."""
    cache = evidence.ci_test.cache
    pairs = [(x, y) for x, ys in enumerate(nbrs) for y in sorted(ys) if x < y]
    if fixed is not None:
        pairs = [(x, y) for x, y in pairs if not fixed[x, y]]
    pairs = [(x, y) for x, y in pairs if (x, y, ()) not in cache]
    values = evidence.ci_test.compute_unconditional(pairs) if len(pairs) > 1 else None
    return {} if values is None else dict(zip(pairs, values, strict=True))


def _unseen(
    sets: Iterator[tuple[int, ...]], seen: set[tuple[int, ...]]
) -> Iterator[tuple[int, ...]]:
    """The sets not in ``seen``, adding each to it as it is drawn."""
    for s in sets:
        if s not in seen:
            seen.add(s)
            yield s
