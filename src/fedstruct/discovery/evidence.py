"""What a learner records about every pair while it tests: separating sets and p-values.

One :class:`Evidence` per learner run wraps the client's :class:`CITest`. Every test a
learner asks for goes through :meth:`Evidence.independent`, which

- answers ``p > alpha`` (the learner's decision; the convention of causal-learn and
  of the paper's Definition 3.5, "p-value greater than alpha + theta2"),
- keeps, per unordered pair, the largest p-value over the tests *performed* on it
  during the run (cache hits included, tests skipped by the small-sample rule
  excluded),
- counts, per phase, the distinct tests computed and the queries (cache hits included).

When an edge is removed the learner calls :meth:`Evidence.separate`, which stores the
separating set and the p-value of the test that found it. The per-pair summary the
FedCDnv protocol needs (Definitions 3.4 and 3.5) is :meth:`Evidence.summary`.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.citest import CITest

__all__ = ["MAX_BATCH", "SERIAL_HEAD", "Evidence", "paused_gc"]

#: :meth:`Evidence.first_independent` tests this many sets one by one before batching.
SERIAL_HEAD = 16
#: Largest batch :meth:`Evidence.first_independent` asks :meth:`CITest.compute_many` for.
MAX_BATCH = 4096


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (restored on exit).

    A search adds up to millions of cache keys (tuples, which cannot form cycles);
    each collection of the oldest generation walks all of them, which took 6.8 of
    7.3 s when a Possible-D-SEP phase on andes merged its workers' 1.4 million tests.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Evidence:
    """Separating sets and p-values found by one learner run (module docstring).

    Parameters
    ----------
    ci_test
        The client's cached CI test.
    alpha
        Significance level: a test says independent iff its p-value exceeds it.
    """

    def __init__(self, ci_test: CITest, alpha: float) -> None:
        d = ci_test.n_variables
        self.ci_test = ci_test
        self.alpha = float(alpha)
        self.sepsets: dict[tuple[int, int], tuple[int, ...]] = {}
        self._sepsets_frozen: dict[tuple[int, int], frozenset[int]] = {}
        self._max_p = [[math.nan] * d for _ in range(d)]
        self._sep_p: dict[tuple[int, int], float] = {}
        self.tests_by_phase: dict[str, int] = {}
        self.queries_by_phase: dict[str, int] = {}
        self.queries = 0
        self._phase = ""
        self._phase_start = ci_test.n_tests
        self._phase_queries = 0

    # ----------------------------------------------------------------- phases
    def phase(self, name: str) -> None:
        """Start counting the tests of a new phase (closing the previous one)."""
        self._close_phase()
        self._phase = name
        self._phase_start = self.ci_test.n_tests
        self._phase_queries = self.queries

    def _close_phase(self) -> None:
        if self._phase:
            done = self.ci_test.n_tests - self._phase_start
            asked = self.queries - self._phase_queries
            self.tests_by_phase[self._phase] = self.tests_by_phase.get(self._phase, 0) + done
            self.queries_by_phase[self._phase] = self.queries_by_phase.get(self._phase, 0) + asked

    def finish(self) -> dict[str, int]:
        """Close the current phase and return the distinct tests computed per phase."""
        self._close_phase()
        self._phase = ""
        return dict(self.tests_by_phase)

    # ------------------------------------------------------------------ tests
    def independent(
        self,
        i: int,
        j: int,
        z: tuple[int, ...] = (),
        computed: tuple[float, bool] | None = None,
    ) -> tuple[bool, float]:
        """Test ``X_i ⊥ X_j | X_z``; return ``(p > alpha, p)`` and record the p-value.

        ``z`` must be a sorted tuple of Python ints without ``i`` and ``j`` (the
        learners build it so); the pair may come in either order. ``computed``: the
        test's ``(p, skipped)`` from :meth:`CITest.compute_many` (see
        :meth:`CITest.query_key`).
        """
        a, b = (i, j) if i < j else (j, i)
        p, skipped = self.ci_test.query_key((a, b, z), computed)
        self.queries += 1
        if not skipped:
            row = self._max_p[a]
            if not p <= row[b]:  # also when the stored value is NaN
                row[b] = p
        return p > self.alpha, p

    def first_independent(
        self,
        i: int,
        j: int,
        sets: Iterable[tuple[int, ...]],
        pool: Sequence[int] = (),
    ) -> tuple[int, ...] | None:
        """Test ``i``, ``j`` given each of ``sets`` in order; stop at the first independence.

        Records that separation (:meth:`separate`) and returns its set; ``None`` if every
        test said dependent. The same tests, answers and records as calling
        :meth:`independent` set by set: the first :data:`SERIAL_HEAD` sets are tested one
        by one (an early independence costs no batch), the rest in batches of growing
        size computed by :meth:`CITest.compute_many` (``sets`` of one size, subsets of
        ``pool``) when the test has a batched form. Only the tests up to the first
        independence are recorded; a batch's later values are dropped. ``sets`` is
        consumed lazily, a batch at a time. On a test that gathers its statistics in
        batches (:attr:`CITest.ask_window` set), the sets are asked one by one up to the
        window (:meth:`_first_independent_within`).
        """
        a, b = (i, j) if i < j else (j, i)
        stream = iter(sets)
        if self.ci_test.ask_window is not None:
            return self._first_independent_within(a, b, stream, self.ci_test.ask_window)
        for s in islice(stream, SERIAL_HEAD):
            indep, p = self.independent(a, b, s)
            if indep:
                self.separate(a, b, s, p)
                return s
        size = SERIAL_HEAD
        cache = self.ci_test.cache
        while True:
            size = min(2 * size, MAX_BATCH)
            chunk = list(islice(stream, size))
            if not chunk:
                return None
            todo = [s for s in chunk if (a, b, s) not in cache]
            batch = self.ci_test.compute_many(a, b, todo, pool) if len(todo) > 1 else None
            if batch is not None and len(todo) == len(chunk):  # nothing cached: in bulk
                found = self._record_batch(a, b, chunk, batch)
                if found is not None:
                    return found
                continue
            values = dict(zip(todo, batch, strict=True)) if batch is not None else {}
            for s in chunk:
                indep, p = self.independent(a, b, s, values.get(s))
                if indep:
                    self.separate(a, b, s, p)
                    return s

    def _first_independent_within(
        self, a: int, b: int, sets: Iterator[tuple[int, ...]], window: int
    ) -> tuple[int, ...] | None:
        """:meth:`first_independent` on a test that gathers its statistics in batches
        (:attr:`CITest.ask_window`): set by set, stopping (``None``, nothing separated)
        once ``max(window, computed)`` tests were answered provisionally, ``computed``
        being the sets already answered from computed tests before. A pair's sets are
        then asked in order, ``window`` of them in the first batch and as many as are
        known in each later one (the window doubles), so a batch holds a few sets of
        each pair rather than every set of a level; the tests and records of the run
        that completes are the same."""
        ci_test = self.ci_test
        start = ci_test.provisional
        computed = 0
        for s in sets:
            before = ci_test.provisional
            indep, p = self.independent(a, b, s)
            if indep:
                self.separate(a, b, s, p)
                return s
            if ci_test.provisional == before:
                computed += 1
            elif ci_test.provisional - start >= max(window, computed):
                return None
        return None

    def _record_batch(
        self, a: int, b: int, sets: list[tuple[int, ...]], values: list[tuple[float, bool]]
    ) -> tuple[int, ...] | None:
        """:meth:`independent` for uncached ``sets`` of the pair ``a < b`` with their
        computed ``values``, up to the first independence, in one pass (same records)."""
        pvalues = np.fromiter((v[0] for v in values), dtype=np.float64, count=len(values))
        hits = np.flatnonzero(pvalues > self.alpha)
        stop = int(hits[0]) + 1 if hits.size else len(sets)
        keys = [(a, b, s) for s in sets[:stop]]
        self.ci_test.record_many(keys, values[:stop])
        self.queries += stop
        performed = [v[0] for v in values[:stop] if not v[1]]
        if performed:
            top = max(performed)
            row = self._max_p[a]
            if not top <= row[b]:  # also when the stored value is NaN
                row[b] = top
        if not hits.size:
            return None
        found, p = sets[stop - 1], values[stop - 1][0]
        self.separate(a, b, found, p)
        return found

    def absorb_pair(
        self, i: int, j: int, queries: int, max_p: float, sepset: tuple[int, ...] | None, p: float
    ) -> None:
        """Take over what another copy of this evidence recorded on the pair ``i``, ``j``
        alone (a worker process): its number of queries, the pair's largest p-value and
        its separation, if any (the tests themselves go to :meth:`CITest.absorb`)."""
        a, b = (i, j) if i < j else (j, i)
        self.queries += queries
        self._max_p[a][b] = max_p
        if sepset is not None:
            self.separate(a, b, sepset, p)

    def max_pvalue(self, i: int, j: int) -> float:
        """The largest p-value performed on the pair so far (NaN: none)."""
        a, b = (i, j) if i < j else (j, i)
        return self._max_p[a][b]

    def separate(self, i: int, j: int, z: Iterable[int], p: float) -> None:
        """Record that ``z`` separates ``i`` and ``j`` with p-value ``p``."""
        key = (i, j) if i < j else (j, i)
        zs = tuple(sorted(int(k) for k in z))
        self.sepsets[key] = zs
        self._sepsets_frozen[key] = frozenset(zs)
        skipped = self.ci_test.is_skipped(key[0], key[1], zs)
        self._sep_p[key] = math.nan if skipped else float(p)

    def sepset_contains(self, x: int, y: int, z: int) -> bool:
        """The orientation rules' callback: is ``z`` in the separating set of ``x < y``?"""
        found = self._sepsets_frozen.get((x, y))
        return found is not None and z in found

    # ---------------------------------------------------------------- summary
    def max_pvalues(self) -> NDArray[np.float64]:
        """Symmetric matrix of the largest p-value performed per pair (NaN: none)."""
        upper = np.triu(np.array(self._max_p, dtype=np.float64), 1)  # NaN where untested
        out = upper + upper.T
        np.fill_diagonal(out, np.nan)
        return out

    def summary(self, adjacency: NDArray[np.bool_]) -> NDArray[np.float64]:
        """The per-pair p-value of Definitions 3.4 and 3.5 (FedCDnv §3.2).

        For a pair not adjacent in ``adjacency``: the p-value of the test that
        separated it (the one whose conditioning set is its recorded separating set).
        For an adjacent pair: the largest p-value over every test performed on it.
        NaN on the diagonal, for a pair whose deciding test(s) the small-sample rule
        skipped, and for a non-adjacent pair without a recorded separating set.
        """
        out = self.max_pvalues()
        d = out.shape[0]
        for a in range(d):
            for b in range(a + 1, d):
                if not adjacency[a, b]:
                    out[a, b] = out[b, a] = self._sep_p.get((a, b), math.nan)
        np.fill_diagonal(out, np.nan)
        return out
