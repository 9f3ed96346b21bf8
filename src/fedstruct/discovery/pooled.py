"""A CI test whose statistics are summed across sites: pooled federated discovery.

:class:`PooledTest` is a :class:`~fedstruct.discovery.citest.CITest` over the variables
of a federation (the union of the sites' columns) that holds no row. It answers a test
from the sites' sufficient statistics summed together
(:mod:`~fedstruct.discovery.statistics`, :mod:`~fedstruct.discovery.from_statistics`),
so its p-value is the one the same test gives on the sites' rows concatenated (a
variable a site does not measure being a block of missing values there, deleted test by
test).

How a search runs on it (docs/fedfci.md, "Batches"). Asked a test it has not computed,
it answers "skipped, dependent" for now (such an answer never removes an edge), counts
the answer in :attr:`CITest.provisional` and notes what it needs. The searches stop a
pair's search when a step of it got such an answer and call :meth:`CITest.barrier` at
the end of every level and phase; there, with something noted, :meth:`barrier` raises
:class:`PendingTests`. Whoever runs the search then has the noted statistics computed by
the sites and summed (one exchange for the whole batch: every test of one level of the
adjacency search, one step of every pair's Possible-D-SEP search), gives them to
:meth:`PooledTest.absorb`, and runs the search again from the start: the tests already
computed answer from the cache, and the search goes one batch further. The search is
deterministic in its answers, so the run that finally completes with no provisional
answer is the search on the pooled rows, test for test.

A batch is bounded: once the statistics noted take ``max_batch_entries`` entries
(:data:`MAX_SITE_ENTRIES` by default, 160 MB of a site's counts; fedfci sets it from
the memory all sites' replies may take, :func:`batch_entries`), the search stops at
once and the batch is asked; the next run notes the level's next tests. A level then takes several
exchanges, and no process ever holds an unbounded batch.

Tests are settled without statistics when

- fewer than ``min_sites`` sites measure all of the test's variables: no statistic of
  fewer sites is ever asked for (a sum of one site is that site's statistic); the test
  is skipped as dependent, and a pair never tested is *undecided*
  (:meth:`PooledTest.undecided_pairs`);
- the small-sample rule of G² or χ² cannot perform it even on every row of the sites
  that measure its variables (without missing values, exactly the rule's decision).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.citest import CIKey, CITest
from fedstruct.discovery.discrete import xlogx_table
from fedstruct.discovery.from_statistics import (
    Moments,
    conditional_gaussian_test,
    degenerate_test,
    fisher_z_test,
    table_test,
    table_tests,
)
from fedstruct.discovery.small_sample import (
    SmallSampleRule,
    resolve_small_sample_rule,
    rule_max_size,
    rule_performs,
    skipped_pvalue,
)
from fedstruct.discovery.statistics import CELLS, MOMENTS, Frame, Plan, Request
from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = [
    "DEFAULT_PAIR_WINDOW",
    "MAX_SITE_ENTRIES",
    "POOLED_TESTS",
    "PendingTests",
    "PooledSites",
    "PooledTest",
    "batch_entries",
    "search_step",
]

#: The conditioning sets a pair's search step asks in one batch beyond those computed.
DEFAULT_PAIR_WINDOW = 32

#: The most entries (counts and sums) a batch asks of one site.
MAX_SITE_ENTRIES = 20_000_000


def batch_entries(megabytes: int, sites: int) -> int:
    """The entries a batch may ask of each of ``sites`` sites for all their replies to
    take at most ``megabytes`` together (8 bytes an entry), at most
    :data:`MAX_SITE_ENTRIES`."""
    return max(1, min(MAX_SITE_ENTRIES, megabytes * 2**20 // (8 * max(sites, 1))))


#: The tests a pooled search can run (``"auto"`` is resolved before: docs/fedfci.md).
POOLED_TESTS = ("g2", "chi2", "fisherz", "dg", "cg")


class PendingTests(Exception):
    """Raised by :meth:`PooledTest.barrier`: the search needs statistics first."""


@dataclass(frozen=True)
class PooledSites:
    """Who measures what: the sites' variables and rows, as the server knows them.

    Attributes
    ----------
    measured
        ``(sites, variables)`` booleans: whether each site's table has each variable.
    rows
        Each site's number of rows.
    complete
        ``(variables,)`` booleans: measured by every site, without a missing value at
        any (the tests on such variables read one matrix of all rows).
    """

    measured: NDArray[np.bool_]
    rows: NDArray[np.int64]
    complete: NDArray[np.bool_]

    def measuring(self, variables: Sequence[int]) -> NDArray[np.bool_]:
        """Which sites measure every variable of ``variables``."""
        return self.measured[:, list(variables)].all(axis=1)


@dataclass
class _Options:
    statistic: str
    rule: SmallSampleRule
    dof: str
    min_sites: int
    pooled_covariance: bool = True
    min_cell_rows: int = 5
    asked: dict[CIKey, Request] = field(default_factory=dict)


class PooledTest(CITest):
    """A CI test over summed sufficient statistics (module docstring).

    Parameters
    ----------
    frame
        The federation's variables as the test reads them
        (:class:`~fedstruct.discovery.statistics.Frame`).
    sites
        Who measures what (:class:`PooledSites`).
    test
        ``"g2"``, ``"chi2"``, ``"fisherz"``, ``"dg"`` or ``"cg"``.
    small_sample, dof
        The G²/χ² small-sample rule and degrees-of-freedom convention (as
        :class:`~fedstruct.discovery.discrete.DiscreteTest`).
    min_sites
        The fewest sites a test's statistics are summed over (default 2).
    covariance, min_cell_rows
        The conditional-Gaussian test's options (as
        :class:`~fedstruct.discovery.conditional_gaussian.ConditionalGaussianTest`).
    max_batch_entries
        The most entries (counts and sums) one batch may ask of a site; a larger level
        is asked in several batches, a search stopping where the batch is full.
    pair_window
        The most conditioning sets one step of a pair's search asks in a batch beyond
        those already computed (:attr:`CITest.ask_window`: the pair's next sets in
        order, the window doubling exchange by exchange); ``None``: every set a level
        may need at once (the fewest exchanges, a batch as large as the level).

    Raises
    ------
    ConfigError
        For an unknown test, rule or option.
    """

    def __init__(
        self,
        frame: Frame,
        sites: PooledSites,
        test: str,
        *,
        small_sample: str | SmallSampleRule = "toolbox",
        dof: str = "adjusted",
        min_sites: int = 2,
        covariance: str = "pooled",
        min_cell_rows: int = 5,
        max_batch_entries: int = MAX_SITE_ENTRIES,
        pair_window: int | None = DEFAULT_PAIR_WINDOW,
    ) -> None:
        if test not in POOLED_TESTS:
            raise ConfigError(unknown_choice_message("pooled CI test", test, POOLED_TESTS))
        super().__init__(frame.names, test, int(sites.rows.sum()))
        self.frame = frame
        self.sites = sites
        self._options = _Options(
            statistic=test,
            rule=resolve_small_sample_rule(small_sample),
            dof=dof,
            min_sites=int(min_sites),
            pooled_covariance=covariance == "pooled",
            min_cell_rows=int(min_cell_rows),
        )
        #: The moments of every variable of ``sites.complete`` on all rows, once asked.
        self._complete: Moments | None = None
        self._complete_raw: tuple[int, NDArray[np.float64]] | None = None
        self._complete_columns: dict[int, list[int]] = {}
        #: Rows behind each variable set's statistic (its tests' ``n``).
        self._rows: dict[tuple[int, ...], int] = {}
        #: The complete moments' first column of each variable (Fisher-z reads one).
        self._complete_first: dict[int, int] | None = None
        #: The most entries one batch asks of a site (counts and sums): a level whose
        #: statistics would take more is asked in several batches, so that a dense
        #: search never holds more than this per site (nor the server per batch).
        self.max_batch_entries = int(max_batch_entries)
        self.ask_window = None if pair_window is None else int(pair_window)
        self._noted: set[Request] = set()
        self._noted_entries = 0
        #: Per exchange, the tests computed and the rows of each statistic, as arrays.
        self._log: list[tuple[tuple[NDArray[Any], ...], tuple[NDArray[Any], ...]]] = []
        #: Every site measures every variable; and without a missing value.
        self._everyone = bool(sites.measured.all()) and len(sites.rows) >= min_sites
        self._all_complete = bool(sites.complete.all())
        self._moments = test in ("fisherz", "dg")
        #: The variables measured by every site without a missing value.
        self.complete_variables = tuple(int(v) for v in np.flatnonzero(sites.complete))
        self._complete_asked = Request(self.complete_variables, MOMENTS)
        self._xlogx = xlogx_table(self._n_samples or 0)
        self._card_array = np.asarray(frame.cards, dtype=np.float64)

    # ------------------------------------------------------------ the search's side
    def query_key(
        self, key: CIKey, computed: tuple[float, bool] | None = None
    ) -> tuple[float, bool]:
        """:meth:`CITest.query_key`; a test not computed yet is answered provisionally
        ("skipped, dependent", not cached) and noted for the next batch, unless it is
        settled without statistics (module docstring)."""
        if key in self._cache or computed is not None:
            return super().query_key(key, computed)
        settled = self._settled(key)
        if settled is None and self._complete is not None and self._reads_complete(key):
            settled = self._from_complete(key)
        if settled is not None:
            return super().query_key(key, settled)
        request = self._request(key)
        self._options.asked[key] = request
        self.provisional += 1
        if request not in self._noted:
            self._noted.add(request)
            self._noted_entries += self._entries(request)
            if self._noted_entries >= self.max_batch_entries:
                raise PendingTests(len(self._options.asked))  # a batch of bounded size
        return 0.0, True

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        raise AssertionError("PooledTest answers through query_key")  # pragma: no cover

    def max_testable_size(self, i: int, j: int, candidates: Sequence[int]) -> int:
        """See :meth:`CITest.max_testable_size`: ``-1`` for a pair fewer than
        ``min_sites`` sites measure together (undecided: no test of it is ever asked),
        else at most the candidates that many sites measure together with the pair (a
        larger set could not be pooled) and, for G² and χ² under a "dependent"
        small-sample rule, the largest set the rule can perform on every row of the
        sites measuring the pair (:func:`~fedstruct.discovery.small_sample.rule_max_size`:
        a larger set is skipped as dependent, as in a one-process search)."""
        opts = self._options
        together = self.sites.measuring((i, j))
        if int(together.sum()) < opts.min_sites:
            return -1
        if len(candidates):
            with_each = self.sites.measured[together][:, list(candidates)].sum(axis=0)
            candidates = [
                v for v, k in zip(candidates, with_each, strict=True) if k >= opts.min_sites
            ]
        if opts.statistic not in ("g2", "chi2"):
            return len(candidates)
        most = int(self.sites.rows[together].sum())
        return rule_max_size(opts.rule, self._card_array, i, j, candidates, most)

    def barrier(self) -> None:
        """Raise :class:`PendingTests` when a test was answered provisionally."""
        if self._options.asked:
            raise PendingTests(len(self._options.asked))

    def start_search(self) -> None:
        """Forget the provisional answers of a search abandoned at a barrier."""
        self._options.asked.clear()
        self._noted.clear()
        self._noted_entries = 0
        self.provisional = 0

    def _entries(self, request: Request) -> int:
        """The entries ``request``'s statistic takes (counts and sums)."""
        frame = self.frame
        if request.form == MOMENTS:
            w = sum(frame.width(v) for v in request.variables)
            return 1 + w + w * (w + 1) // 2
        a = sum(not frame.discrete[v] for v in request.variables)
        return frame.cells(request.variables) * (1 + a + a * (a + 1) // 2)

    # ---------------------------------------------------------- what the sites compute
    def wants_complete_moments(self) -> bool:
        """Whether the run's tests read the moments of the completely measured variables
        and those are not known yet (:meth:`complete_plan` asks for them)."""
        return self._moments and self._complete is None and len(self.complete_variables) > 1

    def complete_plan(self) -> Plan:
        """The plan of the completely measured variables' moment matrix alone."""
        return Plan.of(self.frame, [self._complete_asked])

    def pending(self) -> list[Request]:
        """The statistics the noted tests need, each once, in the order first noted."""
        seen: dict[Request, None] = {}
        for request in self._options.asked.values():
            seen.setdefault(request, None)
        return list(seen)

    def pending_tests(self) -> list[CIKey]:
        """The tests noted since the last :meth:`start_search`."""
        return list(self._options.asked)

    def absorb_statistics(
        self, plan: Plan, counts: NDArray[np.int64], sums: NDArray[np.float64]
    ) -> int:
        """Take the summed statistics of ``plan`` (the sites' ``counts`` and ``sums``
        vectors added up): every noted test they answer gets its p-value, cached.
        Returns how many tests were computed."""
        answered: dict[tuple[int, ...], tuple[NDArray, NDArray]] = {}
        for k, request in enumerate(plan.requests):
            c, s = plan.counts_of(k, counts), plan.sums_of(k, sums)
            if request == self._complete_request():
                self._set_complete(int(c[0]), np.array(s, dtype=np.float64))
            else:
                answered[request.variables] = (c, s)
        out = []
        tables = []
        rows_before = len(self._rows)
        opts = self._options
        for key, request in opts.asked.items():
            if key in self._cache:
                continue
            if request == self._complete_request() and self._complete is not None:
                value = self._from_complete(key)
            elif request.variables in answered:
                c, s = answered[request.variables]
                if opts.statistic in ("g2", "chi2"):  # computed together, below
                    self._rows[request.variables] = int(np.sum(c))
                    tables.append((key, c, request.variables))
                    continue
                value = self._from_statistics(key, request, c, s)
            else:
                continue
            out.append((key, *value))
        if tables:
            values = table_tests(
                tables,
                self.frame.cards,
                statistic=opts.statistic,
                dof=opts.dof,
                rule=opts.rule,
                evidence=self.evidence,
                xlogx=self._xlogx,
            )
            out.extend((key, *v) for (key, _, _), v in zip(tables, values, strict=True))
        self.absorb(out, 0)
        new_rows = list(self._rows.items())[rows_before:]
        self._log.append((_pack_entries(out), _pack_sets(new_rows)))
        return len(out)

    def state(self) -> dict[str, NDArray[Any]]:
        """What a checkpoint keeps (:meth:`restore` reads it back): the tests computed
        from statistics (the others are settled again as the search is replayed), the
        rows behind each statistic and the complete variables' moments; kept as one
        batch of arrays per exchange, so the state costs no pass over the cache."""
        out: dict[str, NDArray[Any]] = {}
        for k, name in enumerate(("pairs", "set_sizes", "sets", "pvalues", "skipped")):
            parts = [entries[k] for entries, _ in self._log]
            out[f"cache_{name}"] = np.concatenate(parts) if parts else _EMPTY[name]
        out["cache_hits"] = np.array(0, dtype=np.int64)
        for k, name in enumerate(("sizes", "sets", "counts")):
            parts = [rows[k] for _, rows in self._log]
            out[f"rows_{name}"] = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        if self._complete_raw is not None:
            out["complete_count"] = np.array(self._complete_raw[0], dtype=np.int64)
            out["complete_sums"] = self._complete_raw[1]
        return out

    def restore(self, state: Mapping[str, NDArray[Any]]) -> None:
        """Take back what :meth:`state` gave (on a test with no computed test yet)."""
        cache = {k[len("cache_") :]: v for k, v in state.items() if k.startswith("cache_")}
        self.absorb_arrays(cache)
        sizes = np.asarray(state["rows_sizes"], dtype=np.int64)
        sets = np.asarray(state["rows_sets"], dtype=np.int64)
        members = np.split(sets, np.cumsum(sizes)[:-1]) if len(sizes) else []
        counts = np.asarray(state["rows_counts"], dtype=np.int64).tolist()
        self._rows = {
            tuple(int(v) for v in m): int(c) for m, c in zip(members, counts, strict=True)
        }
        self._log = [
            (
                tuple(cache[name] for name in ("pairs", "set_sizes", "sets", "pvalues", "skipped")),
                (sizes, sets, np.asarray(state["rows_counts"], dtype=np.int64)),
            )
        ]
        if "complete_count" in state:
            self._set_complete(int(state["complete_count"]), np.asarray(state["complete_sums"]))

    # ------------------------------------------------------------------- reports
    def undecided_pairs(self) -> list[tuple[int, int]]:
        """The pairs no ``min_sites`` sites measure together: never tested."""
        measured = self.sites.measured.astype(np.int64)
        together = measured.T @ measured
        d = len(self._names)
        return [
            (a, b)
            for a in range(d)
            for b in range(a + 1, d)
            if together[a, b] < self._options.min_sites
        ]

    def rows_used(self, i: int, j: int, z: Iterable[int] = ()) -> int | None:
        """Rows behind the test (the sites' rows complete on its variables), once its
        statistic is known."""
        return self._rows.get(tuple(sorted((i, j, *z))))

    def rows_summary(self) -> dict[str, float]:
        """The fewest and the median rows behind the tests computed from statistics,
        and how many tests were skipped."""
        if not self._rows:
            return {}
        used = np.array(list(self._rows.values()))
        return {
            "rows_min": float(used.min()),
            "rows_median": float(np.median(used)),
            "skipped": float(len(self._skipped)),
        }

    # ------------------------------------------------------------------ internals
    def _uses_moments(self) -> bool:
        return self._options.statistic in ("fisherz", "dg")

    def _reads_complete(self, key: CIKey) -> bool:
        if not self._moments:
            return False
        if self._all_complete:
            return True
        i, j, z = key
        return bool(self.sites.complete[[i, j, *z]].all())

    def _complete_request(self) -> Request:
        return self._complete_asked

    def _request(self, key: CIKey) -> Request:
        if self._reads_complete(key):
            return self._complete_request()
        variables = tuple(sorted((key[0], key[1], *key[2])))
        return Request(variables, MOMENTS if self._uses_moments() else CELLS)

    def _settled(self, key: CIKey) -> tuple[float, bool] | None:
        """A test decided without statistics (module docstring), or ``None``."""
        i, j, z = key
        opts = self._options
        if self._everyone:  # every site measures every variable: all rows count
            most = self._n_samples or 0
        else:
            sites = self.sites.measuring((i, j, *z))
            if int(sites.sum()) < opts.min_sites:
                return 0.0, True
            most = int(self.sites.rows[sites].sum())
        if opts.statistic in ("g2", "chi2") and not rule_performs(
            opts.rule, self.frame.cards, i, j, z, most
        ):
            no_missing = self._all_complete or bool(self.sites.complete[[i, j, *z]].all())
            if opts.rule.verdict == "dependent" or no_missing:
                return skipped_pvalue(opts.rule, most), True
        return None

    def _set_complete(self, count: int, sums: NDArray[np.float64]) -> None:
        self._complete_raw = (count, sums)
        self._complete = Moments(count, sums)
        self._rows[self.complete_variables] = count  # every test on these: all the rows
        start = 0
        for v in self.complete_variables:
            width = self.frame.width(v)
            self._complete_columns[v] = list(range(start, start + width))
            start += width

    def _from_complete(self, key: CIKey) -> tuple[float, bool]:
        assert self._complete is not None
        return self._moments_test(self._complete, self._complete_columns, key)

    def _moments_test(
        self, moments: Moments, blocks: Mapping[int, Sequence[int]], key: CIKey
    ) -> tuple[float, bool]:
        if self._options.statistic == "fisherz":
            if blocks is self._complete_columns:  # the same map for every test: once
                if self._complete_first is None:
                    self._complete_first = {v: b[0] for v, b in blocks.items()}
                first = self._complete_first
            else:
                first = {v: b[0] for v, b in blocks.items()}
            return fisher_z_test(moments, first, key, self._names, self.evidence)  # type: ignore[arg-type]
        return degenerate_test(moments, blocks, self.frame.discrete, key, self.evidence)  # type: ignore[arg-type]

    def _from_statistics(
        self, key: CIKey, request: Request, counts: NDArray, sums: NDArray
    ) -> tuple[float, bool]:
        opts, frame = self._options, self.frame
        variables = request.variables
        if request.form == MOMENTS:
            moments = Moments(int(counts[0]), sums)
            self._rows[variables] = moments.n
            blocks: dict[int, list[int]] = {}
            start = 0
            for v in variables:
                blocks[v] = list(range(start, start + frame.width(v)))
                start += frame.width(v)
            return self._moments_test(moments, blocks, key)
        self._rows[variables] = int(np.sum(counts))
        if opts.statistic in ("g2", "chi2"):
            return table_test(
                counts,
                variables,
                key,
                frame.cards,
                xlogx=self._xlogx,
                statistic=opts.statistic,
                dof=opts.dof,
                rule=opts.rule,
                evidence=self.evidence,
            )
        return conditional_gaussian_test(
            counts,
            sums,
            variables,
            frame,
            key,
            pooled=opts.pooled_covariance,
            min_cell_rows=opts.min_cell_rows,
            evidence=self.evidence,
        )


T = TypeVar("T")

_EMPTY = {
    "pairs": np.zeros((0, 2), dtype=np.int64),
    "set_sizes": np.zeros(0, dtype=np.int64),
    "sets": np.zeros(0, dtype=np.int64),
    "pvalues": np.zeros(0, dtype=np.float64),
    "skipped": np.zeros(0, dtype=bool),
}


def _pack_entries(entries: Sequence[tuple[CIKey, float, bool]]) -> tuple[NDArray[Any], ...]:
    """Computed tests as the arrays of :meth:`CITest.cache_arrays`."""
    return (
        np.array([k[:2] for k, _, _ in entries], dtype=np.int64).reshape(-1, 2),
        np.array([len(k[2]) for k, _, _ in entries], dtype=np.int64),
        np.array([v for k, _, _ in entries for v in k[2]], dtype=np.int64),
        np.array([p for _, p, _ in entries], dtype=np.float64),
        np.array([skip for _, _, skip in entries], dtype=bool),
    )


def _pack_sets(rows: Sequence[tuple[tuple[int, ...], int]]) -> tuple[NDArray[Any], ...]:
    """Variable sets and their rows as three arrays (sizes, members, rows)."""
    return (
        np.array([len(v) for v, _ in rows], dtype=np.int64),
        np.array([x for v, _ in rows for x in v], dtype=np.int64),
        np.array([n for _, n in rows], dtype=np.int64),
    )


def search_step(search: Callable[[PooledTest], T], test: PooledTest) -> T | Plan:
    """Run ``search`` (e.g. ``lambda t: fci(t, alpha=0.05)``) on ``test`` from the start.

    Returns its result when it completed on computed tests only, else the
    :class:`~fedstruct.discovery.statistics.Plan` of the statistics its next batch
    needs: have the sites compute it, give the sums to
    :meth:`PooledTest.absorb_statistics` and call again (module docstring).
    """
    test.start_search()
    try:
        result = search(test)
        test.barrier()
    except PendingTests:
        return Plan.of(test.frame, test.pending())
    return result
