"""A run's progress while it runs: ``progress.json``, rewritten after every round, and
what ``fedstruct status`` reads from a run folder.

``progress.json`` is written by the process that runs the rounds (the ServerApp on a
deployment) through a temporary file and one rename, so a reader never sees half of
it; it holds only what the run already knows (the round's record in its history, the
sites asked and answered, the bytes so far, how long the rounds took), so writing it
changes nothing the run computes. docs/artifacts.md lists its entries.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fedstruct.errors import CheckpointError, ConfigError
from fedstruct.files import parse_json, read_text
from fedstruct.fl.checkpoint import write_atomically
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.fl.rounds import RoundReport
from fedstruct.runs.folder import (
    PROGRESS_FILE,
    RUN_FILE,
    lock_owner,
    read_record,
    record_status,
)

__all__ = [
    "PROGRESS_FILE",
    "PROGRESS_FORMAT",
    "ProgressFile",
    "RunProgress",
    "check_progress",
    "numeric_values",
    "progress_of",
    "read_progress",
    "run_progress",
]

#: Its ``format`` entry.
PROGRESS_FORMAT = "fedstruct.progress"
#: The largest progress file read (a few numbers and the sites' names).
_LIMIT = 4 * 1024 * 1024


def numeric_values(record: Mapping[str, Any]) -> dict[str, float]:
    """The entries of a history record that are numbers (``True``/``False`` as 1/0),
    the others (names, lists) left out."""
    values: dict[str, float] = {}
    for key, value in record.items():
        if isinstance(value, bool):
            values[key] = float(value)
        elif isinstance(value, (int, float)):
            values[key] = value
    return values


@dataclass
class ProgressFile:
    """Writes ``out/progress.json`` after every round (the ``on_round`` observer a run's
    fit passes on: :class:`~fedstruct.runs.contract.RunContext`).

    Parameters
    ----------
    out
        The run folder.
    clock
        Wall-clock time in seconds (``time.time``; tests pass their own).
    """

    out: Path
    clock: Callable[[], float] = time.time
    started: float = field(init=False)
    timed: int = field(default=0, init=False)
    seconds: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def __call__(self, report: RoundReport) -> None:
        """Record ``report``'s round."""
        self.timed += 1
        self.seconds += report.seconds
        progress = {
            "format": PROGRESS_FORMAT,
            "round": report.round,
            "rounds": report.rounds,
            "done": report.done,
            "asked": list(report.asked),
            "answered": list(report.answered),
            "bytes_down": report.bytes_down,
            "bytes_up": report.bytes_up,
            "started": self.started,
            "updated": self.clock(),
            "timed_rounds": self.timed,
            "seconds_in_rounds": self.seconds,
            "metrics": numeric_values(report.record),
        }
        write_atomically(self.out / PROGRESS_FILE, (json.dumps(progress) + "\n").encode())


def read_progress(out: Path) -> dict[str, Any] | None:
    """``out/progress.json``, checked; ``None`` when there is none.

    Raises
    ------
    ConfigError
        If it is not a progress file of this fedstruct.
    """
    path = out / PROGRESS_FILE
    if not path.is_file():
        return None
    progress = parse_json(read_text(path, PROGRESS_FILE, limit=_LIMIT), str(path))
    return check_progress(progress, str(path))


def check_progress(progress: Any, where: str) -> dict[str, Any]:
    """``progress`` (parsed JSON, from ``where``) if it is a progress file's content.

    Raises
    ------
    ConfigError
        If it is not a progress file of this fedstruct.
    """
    numbers = ("round", "rounds", "bytes_down", "bytes_up", "timed_rounds")
    if (
        not isinstance(progress, dict)
        or progress.get("format") != PROGRESS_FORMAT
        or not all(_whole(progress.get(key)) for key in numbers)
        or not isinstance(progress.get("metrics"), dict)
    ):
        raise ConfigError(
            f"{where} is not a progress file of this fedstruct; it is rewritten after the "
            "run's next round"
        )
    return progress


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands (``fedstruct status DIR``).

    Attributes
    ----------
    folder
        The run folder.
    method
        The method's name.
    state
        ``running``, ``finished``, ``stopped``, ``failed`` or ``interrupted``
        (:func:`~fedstruct.runs.folder.run_state`).
    round, rounds
        The last round finished, and the rounds planned.
    asked, answered
        The sites asked in that round, and those that answered (empty if unknown).
    bytes_down, bytes_up
        Payload bytes to and from the sites so far (``None`` if unknown).
    elapsed
        Seconds the run has taken (``None`` if unknown): while it runs, since this
        process began its rounds; once it has ended, what ``run.json`` records.
    remaining
        Seconds left while it runs, from the mean time of its finished rounds times the
        rounds left (``None``: unknown, before a round has finished; 0 once it has ended).
    metrics
        The last metrics: ``metrics.json``'s once the run has finished, else the last
        round's record in its history.
    error
        Why a failed run failed (``""`` otherwise).
    """

    folder: Path
    method: str
    state: str
    round: int
    rounds: int
    asked: tuple[str, ...] = ()
    answered: tuple[str, ...] = ()
    bytes_down: int | None = None
    bytes_up: int | None = None
    elapsed: float | None = None
    remaining: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str = ""

    @property
    def ended(self) -> bool:
        """Whether the run is no longer running (finished, stopped, failed, interrupted)."""
        return self.state != "running"


def run_progress(out: Path, now: float | None = None) -> RunProgress:
    """Where the run in folder ``out`` stands, from its ``run.json``, ``config.json``,
    ``progress.json`` and, once it has finished, ``metrics.json``.

    Parameters
    ----------
    now
        The wall-clock time to measure the elapsed time against (default: now).

    Raises
    ------
    ConfigError
        If ``out`` is not a folder holding a fedstruct run (a valid ``run.json`` and
        ``config.json``).
    """
    if not out.is_dir():
        raise ConfigError(f"{out} is not a folder; give the --out folder of a fedstruct run")
    record = read_record(out)
    if record is None:
        raise ConfigError(
            f"{out} holds no {RUN_FILE}, so it is not the folder of a fedstruct run; give "
            "the --out folder of 'fedstruct run'"
        )
    from fedstruct.runs.contract import read_config  # the contract imports this module

    config = read_config(out)
    state = record_status(out, record)
    progress = read_progress(out) or {}
    rounds = progress.get("rounds", config["settings"].get("rounds", 0))
    done = progress["round"] if progress else _checkpoint_round(out)
    metrics = numeric_values(progress.get("metrics", {}))
    elapsed = remaining = None
    if state == "running":
        began = _lock_since(out) or progress.get("started")
        if isinstance(began, (int, float)):
            elapsed = max((time.time() if now is None else now) - float(began), 0.0)
        remaining = _remaining(progress, rounds, done)
    else:
        if isinstance(record.get("seconds"), (int, float)):
            elapsed = float(record["seconds"])
        if state == "finished":
            metrics = _finished_metrics(out) or metrics
            done = max(done, _history_rounds(out))
            remaining = 0.0
    bytes_down = progress.get("bytes_down", metrics.get("bytes_down"))
    bytes_up = progress.get("bytes_up", metrics.get("bytes_up"))
    return RunProgress(
        folder=out,
        method=str(config["method"]),
        state=state,
        round=int(done),
        rounds=int(rounds) if _whole(rounds) else 0,
        asked=tuple(progress.get("asked", ())),
        answered=tuple(progress.get("answered", ())),
        bytes_down=None if bytes_down is None else int(bytes_down),
        bytes_up=None if bytes_up is None else int(bytes_up),
        elapsed=elapsed,
        remaining=remaining,
        metrics={k: v for k, v in metrics.items() if not _non_finite(v)},
        error=str(record.get("error", "")) if state == "failed" else "",
    )


def progress_of(
    folder: Path, method: str, state: str, progress: Mapping[str, Any], now: float | None = None
) -> RunProgress:
    """Where a run stands from its progress file's content alone (a deployed run's, as
    the SuperLink gives it: :func:`~fedstruct.deployment.results.pull_progress`), in
    ``state`` (as :func:`run_progress`'s) as its server says."""
    done, rounds = int(progress["round"]), int(progress["rounds"])
    started, updated = progress.get("started"), progress.get("updated")
    clock = time.time() if now is None else now
    elapsed = remaining = None
    if isinstance(started, (int, float)):
        end = clock if state == "running" else updated
        elapsed = max(float(end) - float(started), 0.0) if isinstance(end, (int, float)) else None
    if state == "running":
        remaining = _remaining(progress, rounds, done)
    elif state == "finished":
        remaining = 0.0
    metrics = numeric_values(progress.get("metrics", {}))
    return RunProgress(
        folder=folder,
        method=method,
        state=state,
        round=done,
        rounds=rounds,
        asked=tuple(str(site) for site in progress.get("asked", ())),
        answered=tuple(str(site) for site in progress.get("answered", ())),
        bytes_down=int(progress["bytes_down"]),
        bytes_up=int(progress["bytes_up"]),
        elapsed=elapsed,
        remaining=remaining,
        metrics={k: v for k, v in metrics.items() if not _non_finite(v)},
    )


def _remaining(progress: Mapping[str, Any], rounds: int, done: int) -> float | None:
    """Seconds left: the mean time of the rounds timed so far times the rounds left
    (``None`` before a round has been timed)."""
    if not progress.get("timed_rounds"):
        return None
    mean = float(progress["seconds_in_rounds"]) / progress["timed_rounds"]
    return 0.0 if progress["done"] else mean * max(rounds - done, 0)


def _lock_since(out: Path) -> float | None:
    """When the process now writing ``out`` took its lock (``None`` if unknown)."""
    owner = lock_owner(out) or {}
    try:
        return datetime.strptime(str(owner.get("since")), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _checkpoint_round(out: Path) -> int:
    """The round the run's checkpoint holds (0 without one)."""
    try:
        return int(read_checkpoint_header(out / CHECKPOINT_FILE)["round"])
    except CheckpointError:
        return 0


def _finished_metrics(out: Path) -> dict[str, float]:
    """``metrics.json``'s numbers (empty if it is missing or unreadable)."""
    try:
        metrics = parse_json(read_text(out / "metrics.json", "metrics.json"), str(out))
    except ConfigError:
        return {}
    return numeric_values(metrics) if isinstance(metrics, dict) else {}


def _history_rounds(out: Path) -> int:
    """The rounds ``history.json`` records (0 if it is missing or unreadable)."""
    try:
        history = parse_json(read_text(out / "history.json", "history.json"), str(out))
    except ConfigError:
        return 0
    return len(history) if isinstance(history, list) else 0
