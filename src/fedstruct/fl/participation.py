"""Who takes part in a round, who drops out, who is late.

The participation model is backend-independent: a :class:`Grid` asks it for the
round's :class:`RoundPlan` and applies it, so the in-process grid and the Flower
grids make the same choices for the same seed. Every draw depends only on
``(seed, round)`` and the sorted client names, never on earlier draws, so a run
resumed from a checkpoint makes exactly the choices the uninterrupted run made.

Per round, in this order:

1. *availability*: clients between their join and leave rounds (:class:`Schedule`);
2. *sampling*: ``max(min_clients, round(sample_rate * available))`` clients drawn
   without replacement (all of them when fewer are available);
3. *dropout*: each sampled client fails to answer with probability ``dropout``;
4. *stragglers*: each client is slow with probability ``straggler_rate`` (its
   simulated round time is ``straggler_slowdown`` instead of 1); with a
   ``deadline``, answers slower than the deadline are lost for the round;
5. *communication frequency*: a share ``always_report`` of the clients (fixed for
   the run) reports every round; the others report in a round with probability
   ``report_rate``. A client that computed an answer in a round in which it does
   not report delivers it at the next round in which it does report, as a late
   answer with its staleness (CAFE's communication-frequency set-up).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fedstruct.constraints import Interval, check_fields
from fedstruct.data.schedule import Schedule

__all__ = ["Participation", "RoundPlan"]

_SALT_SAMPLE, _SALT_DROP, _SALT_SLOW, _SALT_REPORT, _SALT_ALWAYS = range(5)


@dataclass(frozen=True)
class RoundPlan:
    """The participation decisions of one round (client names)."""

    rnd: int
    available: tuple[str, ...]
    sampled: tuple[str, ...]
    dropped: frozenset[str]
    latency: dict[str, float]
    reports: frozenset[str]
    deadline: float | None

    def answers(self, name: str) -> bool:
        """Whether ``name`` computes an answer this round (not dropped, within deadline)."""
        if name in self.dropped:
            return False
        return self.deadline is None or self.latency.get(name, 1.0) <= self.deadline


@dataclass(frozen=True)
class Participation:
    """How clients take part in rounds (see the module docstring for the order).

    Parameters
    ----------
    sample_rate
        Share of the available clients asked each round, in ``(0, 1]``.
    min_clients
        At least this many are asked when available.
    dropout
        Probability that an asked client does not answer in a round.
    straggler_rate
        Probability that a client is slow in a round.
    straggler_slowdown
        Simulated round time of a slow client (a normal client takes 1).
    deadline
        Answers slower than this are lost for the round; ``None`` waits for all.
    report_rate
        Communication frequency: probability that a client reports in a round.
    always_report
        Share of clients that report every round regardless of ``report_rate``.
    schedule
        Join and leave rounds per client name.
    """

    sample_rate: float = 1.0
    min_clients: int = 1
    dropout: float = 0.0
    straggler_rate: float = 0.0
    straggler_slowdown: float = 4.0
    deadline: float | None = None
    report_rate: float = 1.0
    always_report: float = 0.0
    schedule: Schedule = field(default_factory=Schedule)

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "participation")

    @property
    def is_full(self) -> bool:
        """Whether every client answers on time in every round it belongs to."""
        return (
            self.sample_rate == 1.0
            and self.dropout == 0.0
            and (self.deadline is None or self.straggler_rate == 0.0)
            and (self.report_rate == 1.0 or self.always_report == 1.0)
        )

    def plan(self, names: Sequence[str], rnd: int, seed: int) -> RoundPlan:
        """The decisions for round ``rnd`` over clients ``names`` (any order).

        Parameters
        ----------
        names
            All clients of the federation (connected or not).
        rnd
            The round, from 1.
        seed
            The run's seed.
        """
        everyone = sorted(names)
        available = self.schedule.active(everyone, rnd)
        k = len(available)
        n_ask = min(k, max(self.min_clients, math.floor(self.sample_rate * k + 0.5)))
        rng = _rng(seed, rnd, _SALT_SAMPLE)
        sampled = tuple(sorted(available[i] for i in rng.permutation(k)[:n_ask]))

        # One uniform per client of the federation, so a client's fate does not
        # depend on who else is sampled.
        u_drop = _rng(seed, rnd, _SALT_DROP).random(len(everyone))
        u_slow = _rng(seed, rnd, _SALT_SLOW).random(len(everyone))
        u_report = _rng(seed, rnd, _SALT_REPORT).random(len(everyone))
        always = self._always_reporting(everyone, seed)
        dropped = frozenset(n for n, u in zip(everyone, u_drop, strict=True) if u < self.dropout)
        latency = {
            n: (self.straggler_slowdown if u < self.straggler_rate else 1.0)
            for n, u in zip(everyone, u_slow, strict=True)
        }
        reports = frozenset(
            n
            for n, u in zip(everyone, u_report, strict=True)
            if n in always or u < self.report_rate
        )
        return RoundPlan(
            rnd=rnd,
            available=tuple(available),
            sampled=sampled,
            dropped=dropped,
            latency=latency,
            reports=reports,
            deadline=self.deadline,
        )

    def _always_reporting(self, everyone: list[str], seed: int) -> frozenset[str]:
        if self.always_report == 0.0:
            return frozenset()
        order = _rng(seed, 0, _SALT_ALWAYS).permutation(len(everyone))
        count = math.floor(self.always_report * len(everyone) + 0.5)
        return frozenset(everyone[i] for i in order[:count])


_CONSTRAINTS = {
    "sample_rate": Interval(float, 0, 1, closed="right"),
    "min_clients": Interval(int, 1),
    "dropout": Interval(float, 0, 1),
    "straggler_rate": Interval(float, 0, 1),
    "straggler_slowdown": Interval(float, 1),
    "deadline": Interval(float, 0, closed="neither", allow_none=True),
    "report_rate": Interval(float, 0, 1, closed="right"),
    "always_report": Interval(float, 0, 1),
}


def _rng(seed: int, rnd: int, salt: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(rnd), salt, 0xF1])
