"""What a run tells an observer after each round (``on_round`` of
:func:`~fedstruct.fl.federation.run_federation`): the round, the sites asked and
answered, the bytes so far, the round's duration and its history record. An observer
only reads: it changes nothing the run computes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fedstruct.fl.grid import Grid

__all__ = ["RoundReport", "round_report"]


@dataclass(frozen=True)
class RoundReport:
    """One finished round, as an observer sees it.

    Attributes
    ----------
    round
        The round just finished (from 1).
    rounds
        The rounds planned (an upper bound for a method that may stop early).
    done
        Whether the method is done after this round.
    asked
        The sites sent a message in this round.
    answered
        The sites whose answer arrived in this round (on time, or late from an earlier
        round).
    bytes_down, bytes_up
        Payload bytes sent to the sites, and from them, over the run so far.
    seconds
        How long the round took, its checkpoint included.
    record
        The round's record in the method's history (what ``history.json`` gets for
        it); empty for a method whose state keeps no history.
    """

    round: int
    rounds: int
    done: bool
    asked: tuple[str, ...]
    answered: tuple[str, ...]
    bytes_down: int
    bytes_up: int
    seconds: float
    record: Mapping[str, Any] = field(default_factory=dict)


def round_report(
    grid: Grid, state: Any, rnd: int, *, rounds: int, done: bool, seconds: float
) -> RoundReport:
    """The :class:`RoundReport` of round ``rnd``: who was asked and answered, from the
    grid's byte accounting (a site asked got bytes down in the round, a site that
    answered sent bytes up), and the last record of ``state.history`` if it is this
    round's."""
    asked: set[str] = set()
    answered: set[str] = set()
    for r, client, direction in grid.traffic.records:
        if r == rnd:
            (asked if direction == "down" else answered).add(client)
    history = getattr(state, "history", None)
    record: Mapping[str, Any] = {}
    if isinstance(history, list) and history and isinstance(history[-1], Mapping):
        last = history[-1]
        if last.get("round", rnd) == rnd:
            record = dict(last)
    return RoundReport(
        round=rnd,
        rounds=rounds,
        done=done,
        asked=tuple(sorted(asked)),
        answered=tuple(sorted(answered)),
        bytes_down=grid.traffic.total("down"),
        bytes_up=grid.traffic.total("up"),
        seconds=seconds,
        record=record,
    )
