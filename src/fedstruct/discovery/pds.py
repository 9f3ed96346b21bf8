"""FCI's second edge-removal phase: tests given subsets of Possible-D-SEP.

Spirtes, Glymour & Scheines (2000), §6.7, FCI steps C-D; Zhang (2008), AIJ 172, §2.2.
After the adjacency search and R0, ``A`` is in Possible-D-SEP(x) (``pds(x)``) if
``A != x`` and some path ``<x, ..., A>`` of the current graph has, at every
inner node ``V`` of a sub-path ``<U, V, W>``, either a collider ``U *-> V <-* W`` or a
triangle (``U`` and ``W`` adjacent). If ``x`` and ``y`` are not adjacent in the true MAG,
some subset of ``pds(x)`` or of ``pds(y)`` separates them (Spirtes et al. 2000, §6.7,
the correctness of FCI: D-SEP(x, y) ⊆ pds(x)), so every remaining edge ``x - y`` is
tested given the subsets of ``pds(x) \\ {x, y}`` and of ``pds(y) \\ {x, y}``, by
increasing size, and removed at the first independence.

Choices (as pcalg's ``pdsep``, Kalisch et al. 2012):

- ``pds`` is computed once per node, from the graph after R0, by a breadth-first
  search over edge states ``(U, V)`` ("arrived at V from U"); the search may revisit
  nodes along different edges, so it finds the nodes reachable by such *walks*, a
  superset of the path definition (a larger candidate set only adds tests).
  ``max_path_length`` bounds the number of edges of the walks.
- Subsets contained in ``adj(x) \\ {y}`` or ``adj(y) \\ {x}`` (adjacencies after the
  adjacency search) of size at most that search's depth are skipped: it already found
  them dependent (:func:`remove_by_possible_dsep` says why this equals skipping by
  the current adjacencies). Subset sizes are bounded by ``depth``.
- The edges' searches are independent of each other and run in worker processes
  when the phase is large (``workers``), with the same result as one process; the
  tests of one pair given many small sets are counted in batches
  (:meth:`~fedstruct.discovery.evidence.Evidence.first_independent`).
- With ``biconnected=True`` the candidates are intersected with the biconnected
  component of the current skeleton that holds the edge ``x - y`` (pcalg's ``biCC``):
  every path between ``x`` and ``y`` lies in it, and a separating set keeps separating
  after dropping the variables outside it (they can only be colliders' descendants,
  whose conditioning only opens paths), so no separation is lost.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations, compress

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.evidence import Evidence, paused_gc
from fedstruct.discovery.knowledge import KnowledgeRules
from fedstruct.discovery.skeleton import check_depth
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import ARROW, NONE

__all__ = [
    "AUTO",
    "PARALLEL_MIN_TESTS",
    "auto_pds_depth",
    "available_workers",
    "possible_dsep",
    "remove_by_possible_dsep",
]

#: ``pds_depth="auto"``: bound the phase by the separating sets the adjacency search found.
AUTO = "auto"
#: Share of the adjacency search's separating sets that may be larger than the auto bound.
AUTO_OUTLIER_SHARE = 0.01


def auto_pds_depth(sepsets: Iterable[Sequence[int]], outliers: float = AUTO_OUTLIER_SHARE) -> int:
    """The data-driven bound on Possible-D-SEP conditioning sets (``pds_depth="auto"``).

    The smallest ``k >= 1`` such that at most ``outliers`` (1 %) of the separating sets
    found by the adjacency search have more than ``k`` variables. The adjacency search
    tries every subset of the current neighbours, so its separating sets show how large
    the sets that separate variables in this data are; Possible-D-SEP sets are larger
    candidate pools, not larger separators. On real data the unbounded phase is
    exponential in the size of Possible-D-SEP (hepar2, 10,000 rows: more than 8
    minutes), while the adjacency search's separating sets rarely exceed 2 variables
    (hepar2: 12 of 2,328 larger than 2; win95pts: 2 of 2,767), so this bound gives 2
    there. What it costs: an edge whose only separating sets within Possible-D-SEP
    are larger than ``k`` stays (FCI's completeness needs the unbounded search,
    ``pds_depth=None``; the oracle tests use it). Choice documented in
    docs/local_learners.md.
    """
    sizes = np.array([len(s) for s in sepsets], dtype=np.int64)
    if sizes.size == 0:
        return 1
    k = 1
    while np.mean(sizes > k) > outliers:
        k += 1
    return k


def possible_dsep(marks: NDArray[np.int8], x: int, max_path_length: int | None = None) -> list[int]:
    """Possible-D-SEP of ``x`` in a partially oriented graph (module docstring).

    Parameters
    ----------
    marks
        ``(n, n)`` endpoint marks (``marks[i, j]`` = mark at ``j``), after R0.
    x
        The start node.
    max_path_length
        Longest walk, in edges, that may reach a member; ``None``: no bound.

    Returns
    -------
    list[int]
        The members, sorted (``x`` excluded).
    """
    limit = check_depth(max_path_length, "max_path_length")
    adj = marks != NONE
    nbrs = [np.flatnonzero(row).tolist() for row in adj]
    found: set[int] = set()
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[int, int, int]] = deque()
    for v in nbrs[x]:
        found.add(v)
        seen.add((x, v))
        queue.append((x, v, 1))
    while queue:
        u, v, length = queue.popleft()
        if length >= limit:
            continue
        into_v = marks[u, v] == ARROW
        for w in nbrs[v]:
            if w == u or w == x or (v, w) in seen:
                continue
            if (into_v and marks[w, v] == ARROW) or adj[u, w]:
                seen.add((v, w))
                found.add(w)
                queue.append((v, w, length + 1))
    found.discard(x)
    return sorted(found)


def _biconnected_members(adj: NDArray[np.bool_]) -> dict[tuple[int, int], set[int]]:
    """For every edge ``(i, j)``, ``i < j``: the nodes of its biconnected component."""
    import networkx as nx  # here: a client that never needs it does not load it

    g = nx.Graph()
    g.add_nodes_from(range(adj.shape[0]))
    g.add_edges_from(zip(*np.nonzero(np.triu(adj, 1)), strict=True))
    out: dict[tuple[int, int], set[int]] = {}
    for comp_edges in nx.biconnected_component_edges(g):
        edges = list(comp_edges)
        nodes = {int(v) for e in edges for v in e}
        for a, b in edges:
            out[(min(int(a), int(b)), max(int(a), int(b)))] = nodes
    return out


def available_workers() -> int:
    """The cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def remove_by_possible_dsep(
    evidence: Evidence,
    marks: NDArray[np.int8],
    *,
    depth: int | None = None,
    max_path_length: int | None = None,
    biconnected: bool = True,
    searched_depth: int | None = None,
    workers: int | None = None,
    knowledge: KnowledgeRules | None = None,
) -> NDArray[np.bool_]:
    """Remove the edges separated given subsets of Possible-D-SEP (module docstring).

    Every edge's search reads only the graph as it was *before* the phase: the
    Possible-D-SEP sets and biconnected components (computed once, as before), and
    the adjacencies whose small subsets are skipped. Skipping by the adjacency before
    the phase rather than the current one gives the identical result: a subset ``S``
    of ``adj(x) \\ {y}`` before the phase with ``|S| <=`` the adjacency search's
    depth was tried by that search on the still-present edge ``x - y`` (PC-stable
    tries every subset of its frozen neighbour sets, which contain the final ones,
    level by level until no neighbour set is large enough; Spirtes et al. 2000,
    §5.4.2) and found dependent, or skipped there by a small-sample rule whose
    verdict is "dependent"; the test is deterministic (and cached), so trying ``S``
    again could only say "dependent" again and never removes the edge. The current
    adjacency is a subset of the one before, so the current rule skips a subset of
    these sets: the separations found, their order and the separating sets are the
    same (only cache hits and skipped small-sample tests of such ``S`` are not
    repeated). The edges' searches are then independent of each other and may run
    in ``workers`` processes (forked: they share the data and the cache of the
    adjacency search); each returns the tests it computed, its queries and its
    separation, merged here in the serial edge order, so the evidence, the cache and
    the counters equal those of the serial run.

    Parameters
    ----------
    evidence
        Records the tests and the separating sets.
    marks
        Marks after the adjacency search and R0; read only.
    depth
        Largest conditioning-set size; ``None``: no bound.
    max_path_length
        Bound on the walks defining Possible-D-SEP; ``None``: no bound.
    biconnected
        Restrict the candidates to the edge's biconnected component (default).
    searched_depth
        The ``depth`` bound of the adjacency search that produced ``marks`` (``None``:
        unbounded): subsets of ``adj(x)`` or ``adj(y)`` up to that size are known to be
        dependent and skipped.
    workers
        Processes for the edges' searches; ``None`` (default): the cores this process
        may use (:func:`available_workers`). Processes are started only when the
        phase has at least :data:`PARALLEL_MIN_TESTS` candidate tests (a fork costs
        tens of milliseconds), the platform can fork and the test may be forked
        (:attr:`CITest.forks`: not on a torch device); the result is the same for
        every value.
    knowledge
        Background knowledge: its required pairs are not searched (they stay), and the
        candidates are the possible ancestors of the pair
        (:meth:`~fedstruct.discovery.knowledge.KnowledgeRules.pool`, as in the
        adjacency search). ``None`` (default): none.

    Returns
    -------
    numpy.ndarray
        The new symmetric adjacency matrix.

    Raises
    ------
    ConfigError
        If ``workers`` is not ``None`` or a positive integer.
    """
    max_depth = check_depth(depth)
    known_depth = check_depth(searched_depth, "searched_depth")
    if workers is None:
        workers = available_workers()
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise ConfigError(f"workers must be None or an integer >= 1, got {workers!r}")
    before = marks != NONE
    d = before.shape[0]
    pds = [possible_dsep(marks, v, max_path_length) for v in range(d)]
    blocks = _biconnected_members(before) if biconnected else {}
    pairs = zip(*np.nonzero(np.triu(before, 1)), strict=True)
    jobs = [(int(x), int(y), blocks.get((int(x), int(y)))) for x, y in pairs]
    if knowledge is not None:
        jobs = [job for job in jobs if not knowledge.fixed[job[0], job[1]]]
    adj = before.copy()
    search = _PairSearch(evidence, before, pds, max_depth, known_depth, knowledge)
    with paused_gc():
        if (
            workers > 1
            and len(jobs) > 1
            and _can_fork()
            and evidence.ci_test.forks
            and search.size(jobs) >= PARALLEL_MIN_TESTS
        ):
            separated = _in_processes(search, jobs, workers)
        else:
            separated = (search.run(*job) is not None for job in jobs)
        for (x, y, _), removed in zip(jobs, separated, strict=True):
            if removed:
                adj[x, y] = adj[y, x] = False
    evidence.ci_test.barrier()
    return adj


#: The Possible-D-SEP phase runs in processes only from this many candidate tests on.
PARALLEL_MIN_TESTS = 50_000


def _can_fork() -> bool:
    return "fork" in mp.get_all_start_methods()


class _PairSearch:
    """One edge's search (:meth:`run`), reading only the graph before the phase."""

    def __init__(
        self,
        evidence: Evidence,
        before: NDArray[np.bool_],
        pds: list[list[int]],
        max_depth: int,
        known_depth: int,
        knowledge: KnowledgeRules | None = None,
    ) -> None:
        self.evidence = evidence
        self.nbrs = [set(np.flatnonzero(row).tolist()) for row in before]
        self.pds = pds
        self.max_depth = max_depth
        self.known_depth = known_depth
        self.knowledge = knowledge

    def candidates(self, side: int, x: int, y: int, block: set[int] | None) -> list[int]:
        out = [v for v in self.pds[side] if v != x and v != y and (block is None or v in block)]
        if self.knowledge is not None:
            pool = self.knowledge.pool(x, y, possible_dsep=True)
            out = [v for v in out if pool[v]]
        return out

    def size(self, jobs: list[tuple[int, int, set[int] | None]]) -> int:
        """A cheap count of the phase's candidate tests (the sets of at most two variables)."""
        top = min(self.max_depth, 2)
        total = 0
        for x, y, block in jobs:
            for side in (x, y):
                m = len(self.candidates(side, x, y, block))
                total += sum(math.comb(m, k) for k in range(1, top + 1))
        return total

    def run(self, x: int, y: int, block: set[int] | None) -> tuple[int, ...] | None:
        """Test ``x``, ``y`` given subsets of ``pds(x)`` then ``pds(y)``; record a separation.

        Skipped: subsets of ``adj(x) \\ {y}`` or ``adj(y) \\ {x}`` (before the phase) of
        at most ``known_depth`` variables (the adjacency search found them dependent)
        and, on the second side, the subsets of the first side's candidates (tried
        already). Returns the separating set, ``None`` if the edge stays.
        """
        evidence = self.evidence
        adj_x = self.nbrs[x] - {y}
        adj_y = self.nbrs[y] - {x}
        known_depth = self.known_depth
        done: set[int] = set()
        for side in (x, y):
            cand = self.candidates(side, x, y, block)
            members = set(cand)
            top = min(len(cand), self.max_depth, evidence.ci_test.max_testable_size(x, y, cand))
            known = top <= known_depth and (members <= adj_x or members <= adj_y)
            if known or members <= done:
                done = members
                continue
            for size in range(1, top + 1):
                sets = _untried(cand, size, done, adj_x, adj_y, size <= known_depth)
                asked = evidence.ci_test.provisional
                found = evidence.first_independent(x, y, sets, cand)
                if found is not None:
                    return found
                if evidence.ci_test.provisional > asked:
                    return None  # this step's tests are being gathered: resume from it
            done = members
        return None


def _untried(
    cand: list[int],
    size: int,
    done: set[int],
    adj_x: set[int],
    adj_y: set[int],
    skip_known: bool,
) -> Iterator[tuple[int, ...]]:
    """The ``size``-subsets of ``cand`` in :func:`itertools.combinations` order, without
    the subsets of ``done`` and (``skip_known``) of ``adj_x`` or ``adj_y``.

    Up to two variables the filter is one vectorised mask over all the subsets; larger
    subsets are filtered one by one as they are drawn (there may be too many to list).
    """
    m = len(cand)
    if size <= 2 and m >= size:
        flags = [np.array([v in group for v in cand], dtype=bool) for group in (done, adj_x, adj_y)]
        index = (np.arange(m),) if size == 1 else np.triu_indices(m, 1)
        inside = [np.logical_and.reduce([f[k] for k in index]) for f in flags]
        skip = inside[0] | (inside[1] | inside[2]) if skip_known else inside[0]
        return compress(combinations(cand, size), (~skip).tolist())
    return (
        s
        for s in combinations(cand, size)
        if not ((ss := set(s)) <= done or (skip_known and (ss <= adj_x or ss <= adj_y)))
    )


# ------------------------------------------------------------------ processes
_SEARCH: list[_PairSearch] = []  # the search a forked worker runs (set before the fork)


def _in_processes(
    search: _PairSearch, jobs: list[tuple[int, int, set[int] | None]], workers: int
) -> Iterator[bool]:
    """Run the edges' searches in forked processes; merge each edge's records in order."""
    evidence = search.evidence
    ci_test = evidence.ci_test
    _SEARCH[:] = [search]
    try:
        with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            for (x, y, _), out in zip(
                jobs, pool.imap(_run_in_worker, jobs, chunksize=1), strict=True
            ):
                sepset, p, packed, queries, hits, max_p = out
                ci_test.absorb(_unpack(x, y, *packed), hits)
                evidence.absorb_pair(x, y, queries, max_p, sepset, p)
                yield sepset is not None
    finally:
        _SEARCH.clear()


def _run_in_worker(job: tuple[int, int, set[int] | None]) -> tuple:
    """In a worker: one edge's search and what it recorded (see :func:`_in_processes`)."""
    search = _SEARCH[0]
    evidence = search.evidence
    ci_test = evidence.ci_test
    ci_test.journal = []
    queries, hits = evidence.queries, ci_test.n_cache_hits
    x, y, _ = job
    sepset = search.run(*job)
    p = ci_test.cache[(x, y, sepset)] if sepset is not None else math.nan
    journal, ci_test.journal = ci_test.journal, None
    return (
        sepset,
        p,
        _pack(journal),
        evidence.queries - queries,
        ci_test.n_cache_hits - hits,
        evidence.max_pvalue(x, y),
    )


def _pack(journal: list[tuple[tuple[int, int, tuple[int, ...]], float, bool]]) -> tuple:
    """One edge's computed tests (all of the pair ``x, y``) as arrays: the conditioning
    sets' sizes and members, the p-values and the skipped flags (cheap to send)."""
    sizes = np.fromiter((len(k[2]) for k, _, _ in journal), dtype=np.int32, count=len(journal))
    members = np.fromiter(
        (v for k, _, _ in journal for v in k[2]), dtype=np.int32, count=int(sizes.sum())
    )
    pvalues = np.fromiter((p for _, p, _ in journal), dtype=np.float64, count=len(journal))
    skipped = np.fromiter((s for _, _, s in journal), dtype=bool, count=len(journal))
    return sizes, members, pvalues, skipped


def _unpack(
    x: int,
    y: int,
    sizes: NDArray[np.int32],
    members: NDArray[np.int32],
    pvalues: NDArray[np.float64],
    skipped: NDArray[np.bool_],
) -> Iterator[tuple[tuple[int, int, tuple[int, ...]], float, bool]]:
    """The entries :func:`_pack` packed, in order (runs of one set size at a time)."""
    if sizes.size == 0:
        return iter(())
    breaks = np.flatnonzero(np.diff(sizes)) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [sizes.size]))
    keys: list[tuple[int, int, tuple[int, ...]]] = []
    offset = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        size = int(sizes[start])
        block = members[offset : offset + (end - start) * size].reshape(end - start, size)
        offset += (end - start) * size
        keys.extend((x, y, tuple(z)) for z in block.tolist())
    return zip(keys, pvalues.tolist(), skipped.tolist(), strict=True)
