"""The pooled-discovery server: the search runs here, its tests on summed statistics.

Round 1 asks every site for its schema (``fedfci.describe``, in the clear) and builds
the federation's variables: the union of the sites' columns, each with one kind (sites
that disagree are refused) and its number of levels. Round 2 sums the sites' margins
(``fedfci.margins``): each variable's pooled mean and deviation, and, for
``ci_test="auto"``, the rows observed on each pair; the test is chosen from the pooled
kinds, a variable constant over the pooled rows is refused or left out, and the
:class:`~fedstruct.discovery.statistics.Frame` every later request carries is fixed.
Every later round is one exchange: the search (PC, FCI or RFCI of
:mod:`fedstruct.discovery`) runs on a :class:`~fedstruct.discovery.pooled.PooledTest`
until it needs a batch of statistics (:func:`~fedstruct.discovery.pooled.search_step`);
the batch is asked of every site and summed (``fedfci.stats``, through secure
aggregation when the run has it), its tests are computed, and the search runs again;
the round that completes it ends the run. Every site must be in every sum: a batch
summed over fewer sites would pool other rows than the rest of the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery import LocalResult, fci, pc, rfci
from fedstruct.discovery.knowledge import load_knowledge
from fedstruct.discovery.pooled import PooledSites, PooledTest, batch_entries, search_step
from fedstruct.discovery.statistics import Frame, Plan
from fedstruct.errors import DataError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.summation import send_and_sum
from fedstruct.graphs import Graph
from fedstruct.methods.fedfci.client import DESCRIBE, FRAME, LEVELS, MARGINS, encode_plan
from fedstruct.methods.fedfci.config import FedFCIConfig
from fedstruct.methods.fedfci.privacy import StatisticsPrivacy

__all__ = ["FedFCIResult", "FedFCIServer", "FedFCIState", "choose_pooled_test"]


@dataclass
class FedFCIResult:
    """What the search found: its graph over the frame's variables (undecided pairs
    still adjacent), separating sets, per-pair p-values and counts."""

    graph: Graph
    sepsets: dict[tuple[int, int], tuple[int, ...]]
    pvalues: NDArray[np.float64]
    undecided: list[tuple[int, int]]
    n_tests: int
    tests_by_phase: dict[str, int]
    rows: dict[str, float]


@dataclass
class FedFCIState:
    """What the server holds between rounds (every field a checkpoint can keep)."""

    names: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    sites: tuple[int, ...] = ()
    measured: NDArray[np.bool_] | None = None
    rows: NDArray[np.int64] | None = None
    complete: NDArray[np.bool_] | None = None
    frame: Frame | None = None
    test: str = ""
    evidence: float = 1.0
    excluded: tuple[str, ...] = ()
    tests: dict[str, NDArray[Any]] = field(default_factory=dict)
    exchanges: int = 0
    result: FedFCIResult | None = None
    history: list[dict[str, float]] = field(default_factory=list)


#: The most codes a categorical or ordinal variable may have (a site's file is refused
#: above: the data layer's ``max_site_levels`` default).
MAX_LEVELS = 100

checkpoint.register(FedFCIState)
checkpoint.register(FedFCIResult)
checkpoint.register(Frame)


def choose_pooled_test(kinds: Sequence[str], together: NDArray[np.int64], cg_min_rows: int) -> str:
    """``ci_test="auto"`` on the pooled kinds (:func:`~fedstruct.discovery.choose_ci_test`'s
    rule): G² when every variable is categorical or ordinal, Fisher-z when none is
    categorical, else the conditional-Gaussian test when the median over the pairs of
    the pooled rows observed on both reaches ``cg_min_rows``, the degenerate one below."""
    if all(k != "continuous" for k in kinds):
        return "g2"
    if all(k != "categorical" for k in kinds):
        return "fisherz"
    d = len(kinds)
    pairs = together[np.triu_indices(d, 1)] if d > 1 else np.array([together[0, 0]])
    return "cg" if float(np.median(pairs)) >= cg_min_rows else "dg"


class FedFCIServer(ServerAlgorithm[FedFCIState]):
    """Pooled federated discovery on any grid (module docstring)."""

    def __init__(self, config: FedFCIConfig, levels: Mapping[str, int] | None = None) -> None:
        self.config = config
        #: Public numbers of levels of the categorical and ordinal variables (the
        #: federation schema's, a network's states): what a DP run reads instead of
        #: the sites' level counts.
        self.levels = dict(levels) if levels is not None else None
        self.rounds = config.max_exchanges + 2
        self.knowledge = load_knowledge(config.knowledge)
        self._test: PooledTest | None = None
        #: The search's outcome after the last exchange (the next batch, or its
        #: result), so that the next round does not run it again.
        self._next: LocalResult | Plan | None = None

    def init_state(self) -> FedFCIState:
        """Nothing known before round 1."""
        return FedFCIState()

    def is_done(self, state: FedFCIState, rnd: int) -> bool:
        """Done once the search has completed."""
        return state.result is not None or rnd >= self.rounds

    def describe(self, state: FedFCIState) -> str:
        """The exchanges taken and the tests computed so far."""
        if not state.tests:
            return "schema" if not state.test else f"{state.test} test chosen"
        done = " · search complete" if state.result is not None else ""
        return f"exchange {state.exchanges}: {len(state.tests['cache_pvalues']):,} tests{done}"

    def run_round(self, grid: Grid, state: FedFCIState, rnd: int) -> FedFCIState:
        """Round 1: the sites' schemas; round 2: their margins; then one batch."""
        if rnd == 1:
            return self._describe(grid, state)
        if rnd == 2:
            return self._margins(grid, state)
        return self._exchange(grid, state, rnd)

    # ------------------------------------------------------------------ round 1
    def _describe(self, grid: Grid, state: FedFCIState) -> FedFCIState:
        replies = grid.send_and_receive({n: Message(DESCRIBE) for n in grid.node_ids()})
        if len(replies) < self.config.min_sites:
            raise DataError(
                f"{len(replies)} site(s) answered; pooled discovery sums statistics over at "
                f"least min_sites = {self.config.min_sites} sites"
            )
        names: list[str] = []
        kinds: dict[str, str] = {}
        seen_in: dict[str, str] = {}
        evidence = {float(r.metrics["evidence"]) for r in replies.values()}
        for node, reply in sorted(replies.items()):
            site = grid.node_name(node)
            for name, kind in zip(reply.config["names"], reply.config["kinds"], strict=True):  # type: ignore[call-overload]
                if name not in kinds:
                    names.append(name)
                    kinds[name], seen_in[name] = kind, site
                elif kinds[name] != kind:
                    raise DataError(
                        f"variable {name!r} is {kinds[name]} at site {seen_in[name]!r} but {kind} "
                        f"at site {site!r}; give it one kind at every site (--set kinds or the "
                        "files' columns)"
                    )
        if self.config.dp_epsilon is not None:
            numeric = [n for n in names if kinds[n] == "continuous"]
            if numeric:
                raise DataError(
                    f"dp_epsilon: differential privacy on pooled statistics takes categorical "
                    f"and ordinal variables (G², χ²) only, and {numeric[0]!r} is continuous "
                    "(its sums have no bound on their sensitivity); discretise it, or drop "
                    "dp_epsilon"
                )
        sites = tuple(sorted(replies))
        measured = np.zeros((len(sites), len(names)), dtype=bool)
        for s, node in enumerate(sites):
            for name in replies[node].config["names"]:  # type: ignore[union-attr]
                measured[s, names.index(name)] = True
        state.names = tuple(names)
        state.kinds = tuple(kinds[n] for n in names)
        state.sites = sites
        state.measured = measured
        state.rows = np.array([int(replies[n].metrics["n"]) for n in sites], dtype=np.int64)
        state.evidence = min(evidence)
        state.history.append(
            {"round": 1, "sites": float(len(sites)), "variables": float(len(names))}
        )
        return state

    # ------------------------------------------------------------------ round 2
    def _margins(self, grid: Grid, state: FedFCIState) -> FedFCIState:
        if self.config.dp_epsilon is not None:
            return self._public_frame(state)
        request = Message(MARGINS, config={FRAME: list(state.names), LEVELS: MAX_LEVELS})
        total = send_and_sum(grid, {n: request for n in state.sites})
        self._check_everyone(grid, state, total.nodes, "the margins")
        assert state.measured is not None and state.rows is not None
        rows = float(total.metrics["n"])
        missing = np.asarray(total.arrays["missing"], dtype=np.float64)
        observed = rows - missing
        unmeasured = (~state.measured * state.rows[:, None]).sum(axis=0)
        counts = np.asarray(total.arrays["levels"], dtype=np.int64)
        mean = np.asarray(total.arrays["total"]) / np.maximum(observed, 1)
        square = np.asarray(total.arrays["square"]) / np.maximum(observed, 1)
        sd = np.sqrt(np.maximum(square - mean * mean, 0.0))
        complete = missing == unmeasured  # no site misses a value of what it measures
        cards = [int(np.flatnonzero(row).max()) + 1 if row.any() else 1 for row in counts]
        constant = (observed <= 0) | (sd <= 1e-12 * np.maximum(np.abs(mean), 1.0))
        keep = ~constant
        if constant.any():
            named = [state.names[v] for v in np.flatnonzero(constant)]
            if self.config.constant_columns == "error":
                first = int(np.flatnonzero(constant)[0])
                what = (
                    "has no value at any site"
                    if observed[first] == 0
                    else ("is constant over the sites' pooled rows")
                )
                raise DataError(
                    f"variable {named[0]!r} {what}, so no test can relate it to anything; "
                    "drop the column or set constant_columns=exclude to leave it out"
                )
            state.excluded = tuple(named)
        apart = np.asarray(total.arrays["apart"], dtype=np.float64)[np.ix_(keep, keep)]
        together = rows - apart
        kinds = [k for k, ok in zip(state.kinds, keep, strict=True) if ok]
        test = self.config.ci_test
        if test == "auto":
            test = choose_pooled_test(kinds, together, self.config.cg_min_rows)
        kept = tuple(n for n, ok in zip(state.names, keep, strict=True) if ok)
        discrete = _discrete_for(test, kinds, kept)
        state.frame = Frame(
            kept,
            discrete,
            tuple(c for c, ok in zip(cards, keep, strict=True) if ok),
            tuple(0.0 if d else float(m) for d, m in zip(discrete, mean[keep], strict=True)),
            tuple(1.0 if d else float(s) for d, s in zip(discrete, sd[keep], strict=True)),
        )
        state.names, state.kinds = state.frame.names, tuple(kinds)
        state.measured = state.measured[:, keep]
        state.complete = (state.measured.all(axis=0) & complete[keep]).astype(bool)
        state.test = test
        state.history.append(
            {"round": 2, "sites": float(len(total.nodes)), "excluded": float(len(state.excluded))}
        )
        return state

    # ----------------------------------------------------------- later rounds
    def _public_frame(self, state: FedFCIState) -> FedFCIState:
        """Round 2 of a DP run: the frame from the public levels, no release (the sites'
        margins would spend budget on what the schema already says)."""
        assert state.measured is not None
        levels = self.levels or {}
        unknown = [n for n in state.names if n not in levels]
        if unknown:
            raise DataError(
                f"dp_epsilon: a DP run reads each variable's number of levels from public "
                f"information (the federation schema of your files, a network's states), "
                f"and none is given for {unknown[0]!r}; run on files, or give levels="
            )
        test = self.config.ci_test if self.config.ci_test != "auto" else "g2"
        d = len(state.names)
        state.frame = Frame(
            state.names,
            _discrete_for(test, state.kinds, state.names),
            tuple(max(int(levels[n]), 1) for n in state.names),
            (0.0,) * d,
            (1.0,) * d,
        )
        state.complete = np.zeros(d, dtype=bool)
        state.test = test
        state.history.append({"round": 2, "sites": float(len(state.sites)), "excluded": 0.0})
        return state

    def _privacy(self) -> StatisticsPrivacy:
        cfg = self.config
        assert cfg.dp_epsilon is not None
        return StatisticsPrivacy(cfg.dp_epsilon, cfg.dp_delta, cfg.dp_releases)

    def epsilon_spent(self, state: FedFCIState) -> float | None:
        """Each site's ε after the run's releases (every exchange; all sites release
        alike), ``None`` without DP."""
        if self.config.dp_epsilon is None:
            return None
        return self._privacy().spent(state.exchanges)

    def _pooled_test(self, state: FedFCIState) -> PooledTest:
        """The run's pooled test, rebuilt from the state after a resume."""
        if self._test is None:
            assert state.frame is not None and state.measured is not None
            assert state.rows is not None and state.complete is not None
            cfg = self.config
            test = PooledTest(
                state.frame,
                PooledSites(state.measured, state.rows, state.complete),
                state.test,
                small_sample=cfg.small_sample,
                dof=cfg.dof,
                min_sites=cfg.min_sites,
                pair_window=cfg.window,
                max_batch_entries=batch_entries(cfg.batch_megabytes, len(state.rows)),
            )
            test.evidence = state.evidence
            if state.tests:
                test.restore(state.tests)
            self._test = test
        return self._test

    def _first_step(self, test: PooledTest, state: FedFCIState) -> LocalResult | Plan:
        """The search's first batch; a run whose tests read the moments of the variables
        every site measures completely asks for that one matrix first, without running
        the search on provisional answers (its tests all read it)."""
        if state.exchanges == 0 and test.wants_complete_moments():
            return test.complete_plan()
        return search_step(self._search, test)

    def _search(self, test: PooledTest) -> LocalResult:
        cfg = self.config
        knowledge = None if self.knowledge is None else self.knowledge.within(test.names)
        common: dict[str, Any] = {"alpha": cfg.alpha, "depth": cfg.depth, "knowledge": knowledge}
        if cfg.algorithm == "fci":
            return fci(test, pds_depth=cfg.pds_depth, workers=1, **common)
        if cfg.algorithm == "rfci":
            return rfci(test, **common)
        return pc(test, **common)

    def _exchange(self, grid: Grid, state: FedFCIState, rnd: int) -> FedFCIState:
        test = self._pooled_test(state)
        step = self._next if self._next is not None else self._first_step(test, state)
        self._next = None
        if isinstance(step, Plan):
            message = encode_plan(step)
            total = send_and_sum(grid, {n: message for n in state.sites})
            self._check_everyone(grid, state, total.nodes, f"exchange {state.exchanges + 1}")
            counts = np.asarray(total.arrays["counts"])
            if counts.dtype.kind == "f":  # noised (privacy.py): counts again
                counts = np.maximum(np.rint(counts), 0)
            computed = test.absorb_statistics(
                step,
                counts.astype(np.int64),
                np.asarray(total.arrays["sums"], dtype=np.float64),
            )
            state.exchanges += 1
            state.history.append(
                {
                    "round": float(rnd),
                    "exchange": float(state.exchanges),
                    "requests": float(len(step.requests)),
                    "tests": float(computed),
                    "entries": float(step.n_counts + step.n_sums),
                }
            )
            step = search_step(self._search, test)
            self._next = step  # the next round starts from this batch
        state.tests = test.state()
        if not isinstance(step, Plan):
            state.result = FedFCIResult(
                graph=step.graph,
                sepsets=dict(step.sepsets),
                pvalues=np.asarray(step.pvalues, dtype=np.float64),
                undecided=test.undecided_pairs(),
                n_tests=test.n_tests,
                tests_by_phase=dict(step.tests_by_phase),
                rows=test.rows_summary(),
            )
        return state

    @staticmethod
    def _check_everyone(grid: Grid, state: FedFCIState, nodes: Sequence[int], what: str) -> None:
        missing = [grid.node_name(n) for n in state.sites if n not in set(nodes)]
        if missing:
            raise DataError(
                f"site(s) {missing} are not in the sum of {what}: pooled statistics need every "
                "site in every exchange (resume the run when they are back)"
            )


def _discrete_for(test: str, kinds: Sequence[str], names: Sequence[str]) -> tuple[bool, ...]:
    """Which variables ``test`` reads as categories: every one for G²/χ² (a continuous
    one is refused), none for Fisher-z, the categorical ones for the mixed tests."""
    if test in ("g2", "chi2"):
        for name, kind in zip(names, kinds, strict=True):
            if kind == "continuous":
                raise DataError(
                    f"variable {name!r} is continuous: ci_test={test} needs categories; use "
                    "ci_test=auto (a mixed-data test) or discretise it"
                )
        return (True,) * len(kinds)
    if test == "fisherz":
        return (False,) * len(kinds)
    return tuple(k == "categorical" for k in kinds)
