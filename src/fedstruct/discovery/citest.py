"""The conditional-independence test interface with its p-value cache, and the oracle test.

A :class:`CITest` answers ``pvalue(i, j, z)`` — the p-value of the null hypothesis
``X_i ⊥ X_j | X_z`` — for variable *indices* of one data set. Every answer is cached
under a normalised key (the unordered pair ``(min(i, j), max(i, j))`` and the sorted
conditioning set), so one test object per client serves every phase of a learner
(adjacency search, possible-D-SEP, RFCI's checks) and, later, FedCDnv's C-Update
(Algorithm 2), which asks for further tests on the same data. The object counts the
distinct tests it computed (:attr:`CITest.n_tests`), the cache hits
(:attr:`CITest.n_cache_hits`) and the tests the small-sample rule did not perform
(:attr:`CITest.n_skipped`).

A test may also compute many conditioning sets of one pair at once
(:meth:`CITest.compute_many`, the discrete tests' batched counting); learners hand
those values to :meth:`CITest.query_key` one by one, in their serial order, so the
cache and the counters end exactly as if every test had been computed alone.

Concrete tests: :class:`~fedstruct.discovery.discrete.DiscreteTest` (G² and Pearson
χ²), :class:`~fedstruct.discovery.fisherz.FisherZTest`,
:class:`~fedstruct.discovery.conditional_gaussian.ConditionalGaussianTest` and
:class:`~fedstruct.discovery.degenerate.DegenerateGaussianTest` (mixed data), and
:class:`OracleTest` (d/m-separation, for testing the learners).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.missing import RowMasks
from fedstruct.errors import GraphError, UnknownVariableError
from fedstruct.graphs.graph import Graph, variable_position
from fedstruct.graphs.separation import SeparationOracle

__all__ = ["CIKey", "CITest", "OracleTest", "ci_key"]

CIKey = tuple[int, int, tuple[int, ...]]
"""A normalised test key ``(i, j, z)``: ``i < j`` and ``z`` sorted."""


def ci_key(i: int, j: int, z: Iterable[int] = ()) -> CIKey:
    """The cache key of the test ``X_i ⊥ X_j | X_z``: unordered pair, sorted ``z``."""
    zs = tuple(sorted(int(k) for k in z))
    i, j = int(i), int(j)
    return (i, j, zs) if i < j else (j, i, zs)


class CITest(ABC):
    """A cached conditional-independence test over the variables of one data set.

    Subclasses implement :meth:`_compute`; this class owns the cache, the counters
    and the checks of the indices. The significance level is not part of the test:
    learners compare the p-value with their ``alpha`` (independent iff ``p > alpha``).

    Parameters
    ----------
    names
        The variable names; index ``k`` means ``names[k]``.
    kind
        Short name of the test (``"g2"``, ``"chi2"``, ``"fisherz"``, ``"cg"``, ``"dg"``,
        ``"oracle"``).
    n_samples
        Number of rows behind the test, ``None`` for the oracle.
    """

    #: How much one row counts as evidence: each test's statistic, on its χ² scale, is
    #: multiplied by it before its p-value is read (Fisher-z: its squared z). 1 for a
    #: sample; ``1/2`` for the rows of a bootstrap resample, whose repeated rows would
    #: otherwise count as new evidence (:data:`fedstruct.data.client.RESAMPLE_EVIDENCE`,
    #: docs/confidence.md "Which resampling"). Set by ``make_ci_test(evidence=...)``
    #: before the first test.
    evidence: float = 1.0

    #: Answers given so far for tests not yet computed: a test whose statistics are
    #: gathered elsewhere (:class:`~fedstruct.discovery.pooled.PooledTest`) answers an
    #: unknown test "skipped, dependent" for now and asks for it; the searches stop a
    #: pair's search when this grows during one of its steps, and call :meth:`barrier`
    #: at the end of each phase. Always 0 for a test that computes what it is asked.
    provisional: int = 0

    #: The most tests one step of a pair's search may answer provisionally in one run
    #: of a search (:meth:`~fedstruct.discovery.evidence.Evidence.first_independent`),
    #: at least as many as the step found already computed: a test gathered in batches
    #: then asks a pair's next sets in their order, the window doubling exchange by
    #: exchange, instead of every set a level may need. ``None``: no bound (every test
    #: that computes what it is asked).
    ask_window: int | None = None

    #: Whether a search may run this test in forked worker processes (FCI's
    #: Possible-D-SEP phase); ``False`` for a test computing on a torch device, which a
    #: forked process cannot use (CUDA) or may hang in (torch's CPU threads).
    forks: bool = True

    def __init__(self, names: Sequence[str], kind: str, n_samples: int | None) -> None:
        self._names = tuple(names)
        self._index = {name: k for k, name in enumerate(self._names)}
        self._kind = kind
        self._n_samples = n_samples
        self._cache: dict[CIKey, float] = {}
        self._skipped: set[CIKey] = set()
        self._forgotten = 0
        #: Observed-row masks when the data have missing values (test-wise deletion).
        self._masks: RowMasks | None = None
        self.n_cache_hits = 0
        #: When a list, every newly computed test is appended as ``(key, p, skipped)``
        #: (a worker process reports what it computed; see :meth:`absorb`).
        self.journal: list[tuple[CIKey, float, bool]] | None = None

    # ------------------------------------------------------------- properties
    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in index order."""
        return self._names

    @property
    def kind(self) -> str:
        """Short name of the test (``"g2"``, ``"chi2"``, ``"fisherz"``, ``"cg"``, ``"dg"``,
        ``"oracle"``)."""
        return self._kind

    @property
    def n_variables(self) -> int:
        """Number of variables."""
        return len(self._names)

    @property
    def n_samples(self) -> int | None:
        """Number of rows of the data (``None`` for the oracle)."""
        return self._n_samples

    @property
    def n_tests(self) -> int:
        """Distinct tests computed so far (each cache key counts once; a test computed
        again after :meth:`forget` counts again)."""
        return len(self._cache) + self._forgotten

    def forget(self) -> None:
        """Drop every cached p-value (the counters keep them): a test asked again is
        computed again, with the same p-value. For a learner whose search is done and
        whose later tests share few keys with it: millions of cached tests of hundreds
        of variables are gigabytes."""
        self._forgotten += len(self._cache)
        self._cache = {}
        self._skipped = set()

    @property
    def n_skipped(self) -> int:
        """Distinct tests the small-sample rule did not perform (part of :attr:`n_tests`)."""
        return len(self._skipped)

    @property
    def has_missing(self) -> bool:
        """Whether the data have missing values (each test then uses the rows complete
        on its own variables: :mod:`fedstruct.discovery.missing`)."""
        return self._masks is not None

    def rows_used(self, i: int, j: int, z: Iterable[int] = ()) -> int | None:
        """Rows behind the test of ``X_i ⊥ X_j | X_z``: those observed on all its
        variables (every row without missing values; ``None`` for the oracle)."""
        if self._masks is None:
            return self._n_samples
        return self._masks.count((i, j, *z))

    def rows_summary(self) -> dict[str, float]:
        """The fewest and the median rows behind the tests computed so far
        (``rows_min``, ``rows_median``) and how many were skipped (``skipped``);
        empty for the oracle or before any test."""
        if self._n_samples is None or not self._cache:
            return {}
        if self._masks is None:
            used = np.full(1, self._n_samples)
        else:
            masks = self._masks
            used = np.array([masks.count((i, j, *z)) for i, j, z in self._cache])
        return {
            "rows_min": float(used.min()),
            "rows_median": float(np.median(used)),
            "skipped": float(len(self._skipped)),
        }

    @property
    def cache(self) -> Mapping[CIKey, float]:
        """Read-only view of the cache: normalised key -> p-value."""
        return MappingProxyType(self._cache)

    def index(self, name: str) -> int:
        """Index of a variable name.

        Raises
        ------
        UnknownVariableError
            If the test has no variable of that name.
        """
        return variable_position(self._index, name, "this CI test")

    # ------------------------------------------------------------------ tests
    def query(self, i: int, j: int, z: Iterable[int] = ()) -> tuple[float, bool]:
        """The p-value of ``X_i ⊥ X_j | X_z`` and whether the test was skipped.

        A skipped test is one the small-sample rule of a discrete test (or a too
        small sample for Fisher-z) did not perform; its p-value is the rule's
        verdict (``0.0`` = dependent, ``1.0`` = independent).

        Raises
        ------
        UnknownVariableError
            If an index is out of range.
        GraphError
            If ``i == j``, ``z`` repeats an index or contains ``i`` or ``j``.
        """
        key = ci_key(i, j, z)
        if key not in self._cache:
            self._check(key)
        return self.query_key(key)

    def query_key(
        self, key: CIKey, computed: tuple[float, bool] | None = None
    ) -> tuple[float, bool]:
        """:meth:`query` for a key already normalised by :func:`ci_key` (not re-checked).

        The learners' fast path: they build keys with ``i < j``, sorted ``z`` of Python
        ints, disjoint from ``{i, j}``. ``computed`` is this test's ``(p, skipped)``
        from :meth:`compute_many`: used instead of computing it again when the key is
        not cached (a cached key answers from the cache, as always).
        """
        p = self._cache.get(key)
        if p is not None:
            self.n_cache_hits += 1
            return p, key in self._skipped
        p, skipped = self._compute(*key) if computed is None else computed
        self._cache[key] = p
        if skipped:
            self._skipped.add(key)
        if self.journal is not None:
            self.journal.append((key, p, skipped))
        return p, skipped

    def compute_many(
        self, i: int, j: int, sets: Sequence[tuple[int, ...]], pool: Sequence[int] = ()
    ) -> list[tuple[float, bool]] | None:
        """``(p, skipped)`` of ``X_i ⊥ X_j | X_s`` for every ``s`` of ``sets``, or ``None``.

        Computes without caching or counting (pass each value to :meth:`query_key`).
        ``i < j``; the sets are sorted tuples of one size, each a subset of ``pool``
        when ``pool`` is given (a test may prepare its counts over the whole pool once
        and reuse them for later calls with the same pool). ``None`` when the test has
        no batched form for these sets; the base class has none.
        """
        return None

    def record_many(self, keys: Sequence[CIKey], values: Sequence[tuple[float, bool]]) -> None:
        """:meth:`query_key` with ``computed`` for keys known not to be cached, in bulk."""
        cache = self._cache
        cache.update(zip(keys, (v[0] for v in values), strict=True))
        skipped = [k for k, v in zip(keys, values, strict=True) if v[1]]
        if skipped:
            self._skipped.update(skipped)
        if self.journal is not None:
            self.journal.extend((k, p, s) for k, (p, s) in zip(keys, values, strict=True))

    def compute_unconditional(
        self, pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[float, bool]] | None:
        """``(p, skipped)`` of ``X_i ⊥ X_j`` for every pair ``i < j`` of ``pairs``, or
        ``None``: :meth:`compute_many` for the first level of an adjacency search."""
        return None

    def absorb(self, entries: Iterable[tuple[CIKey, float, bool]], hits: int) -> None:
        """Add the tests another copy of this test computed (its :attr:`journal`) and
        its cache hits, as if they had been computed here in that order."""
        cache, skipped_keys = self._cache, self._skipped
        for key, p, skipped in entries:
            if key not in cache:
                cache[key] = p
                if skipped:
                    skipped_keys.add(key)
        self.n_cache_hits += hits

    def cache_arrays(self) -> dict[str, NDArray[Any]]:
        """The cache, in the order it was filled, as arrays (a checkpoint's form):
        ``pairs`` ``(n, 2)``, ``set_sizes`` ``(n,)``, ``sets`` (the conditioning sets'
        indices one after the other), ``pvalues`` and ``skipped`` ``(n,)``; plus
        ``hits``, the cache-hit count. :meth:`absorb_arrays` is the inverse."""
        keys = list(self._cache)
        return {
            "pairs": np.array([k[:2] for k in keys], dtype=np.int64).reshape(-1, 2),
            "set_sizes": np.array([len(k[2]) for k in keys], dtype=np.int64),
            "sets": np.array([v for k in keys for v in k[2]], dtype=np.int64),
            "pvalues": np.array([self._cache[k] for k in keys], dtype=np.float64),
            "skipped": np.array([k in self._skipped for k in keys], dtype=bool),
            "hits": np.array(self.n_cache_hits, dtype=np.int64),
        }

    def absorb_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> None:
        """:meth:`absorb` the tests and hits of :meth:`cache_arrays`' output."""
        sizes = np.asarray(arrays["set_sizes"], dtype=np.int64)
        sets = np.split(np.asarray(arrays["sets"], dtype=np.int64), np.cumsum(sizes)[:-1])
        pairs = np.asarray(arrays["pairs"], dtype=np.int64).reshape(-1, 2)
        pvalues, skipped = np.asarray(arrays["pvalues"]), np.asarray(arrays["skipped"])
        n = len(sizes)
        if {len(pairs), len(pvalues), len(skipped)} != {n} or sizes.sum() != len(arrays["sets"]):
            raise ValueError("the cached tests' arrays differ in length")
        entries = []
        for (i, j), z, p, s in zip(pairs.tolist(), sets, pvalues.tolist(), skipped, strict=False):
            key = (int(i), int(j), tuple(int(k) for k in z))
            self._check(key)
            entries.append((key, float(p), bool(s)))
        self.absorb(entries, int(arrays["hits"]))

    def pvalue(self, i: int, j: int, z: Iterable[int] = ()) -> float:
        """The (cached) p-value of ``X_i ⊥ X_j | X_z``; see :meth:`query`."""
        return self.query(i, j, z)[0]

    def pvalue_of(self, x: str, y: str, given: Iterable[str] = ()) -> float:
        """:meth:`pvalue` by variable names.

        Raises
        ------
        UnknownVariableError
            If a name is unknown.
        """
        return self.pvalue(self.index(x), self.index(y), [self.index(g) for g in given])

    def max_testable_size(self, i: int, j: int, candidates: Sequence[int]) -> int:
        """Largest ``k`` such that some ``k``-subset of ``candidates`` may give a test of
        ``i``, ``j`` that is performed *and can say independent*.

        Learners skip larger conditioning sets: every such test would be skipped by a
        small-sample rule whose verdict is "dependent" (a skipped test never removes
        an edge and is left out of the p-value summary, so nothing changes). The base
        class has no such rule and returns ``len(candidates)``.
        """
        return len(candidates)

    def is_skipped(self, i: int, j: int, z: Iterable[int] = ()) -> bool:
        """Whether the (already computed) test was skipped by the small-sample rule."""
        return ci_key(i, j, z) in self._skipped

    def prepare_level(self, level: int, neighbours: Sequence[Sequence[int]]) -> None:
        """The adjacency search starts a level whose tests condition on ``level``
        variables drawn from the frozen ``neighbours`` of each variable (PC-stable), or
        ends (``level = -1``): a test that can compute the level's tests together
        prepares for it (:class:`~fedstruct.discovery.discrete.DiscreteTest` at level
        1). Answers are the same either way; the base class does nothing."""
        return

    def barrier(self) -> None:
        """A point of a search after which nothing may rest on a provisional answer.

        The searches call it at the end of every level and phase (docs/fedfci.md,
        "Batches"). A test that computes every test when asked has nothing to do; a
        test that gathers its statistics in batches raises there when it answered a
        test provisionally, so that the batch is computed and the search run again.
        """
        return

    def _check(self, key: CIKey) -> None:
        i, j, z = key
        d = len(self._names)
        for k in (i, j, *z):
            if not 0 <= k < d:
                raise UnknownVariableError(
                    f"variable index {k} is out of range; this CI test has {d} variables "
                    "(indices 0..n-1)"
                )
        if i == j or i in z or j in z or len(set(z)) != len(z):
            raise GraphError(
                f"CI test of {self._names[i]!r} and {self._names[j]!r} given "
                f"{[self._names[k] for k in z]} is malformed; the two variables must differ "
                "and the conditioning set must not repeat or contain them"
            )

    @abstractmethod
    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        """Compute one test for a normalised key; return ``(p-value, skipped)``."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._kind!r}, {self.n_variables} variables, "
            f"n={self._n_samples}, {self.n_tests} tests cached)"
        )


class OracleTest(CITest):
    """The perfect CI test of a DAG (or MAG) with latent variables: d/m-separation.

    ``pvalue`` is ``1.0`` if the two variables are separated given the conditioning
    set in ``graph`` and ``0.0`` otherwise, so with any ``0 <= alpha < 1`` a learner
    sees exactly the graph's independences (Spirtes, Glymour & Scheines 2000, the
    "oracle" of their Chapter 5-6 correctness proofs). Backed by
    :class:`~fedstruct.graphs.separation.SeparationOracle`.

    Parameters
    ----------
    graph
        A DAG, or a mixed graph with ``->`` and ``<->`` edges (a MAG).
    latent
        Names of the variables not observed; the test's variables are the others,
        in the graph's order.

    Raises
    ------
    UnknownVariableError
        If a latent name is not in the graph.
    GraphError
        If the graph has circle or undirected edges.
    """

    def __init__(self, graph: Graph, latent: Iterable[str] = ()) -> None:
        hidden = {latent} if isinstance(latent, str) else set(latent)
        for name in sorted(hidden):
            if name not in graph:
                raise UnknownVariableError(
                    f"latent variable {name!r} is not in the graph; its variables are "
                    f"{list(graph.names)}"
                )
        observed = [n for n in graph.names if n not in hidden]
        super().__init__(observed, "oracle", None)
        self._oracle = SeparationOracle(graph, observed=observed)

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        return (1.0 if self._oracle.separated(i, j, z) else 0.0), False
