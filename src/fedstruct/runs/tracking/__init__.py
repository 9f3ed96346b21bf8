"""Tracking a run in MLflow or TensorBoard (``fedstruct run ... --track KIND``).

A tracked run logs, besides its folder's files: its settings (``config.json``) when
it starts, each round's numbers as ``round/NAME`` at step = the round while it runs,
and when it ends the numbers of every round again where they differ from what was
logged (so the series equal ``history.json``'s), the final metrics (``metrics.json``'s,
as ``NAME``) and the run's files (MLflow: as artifacts). The rounds are followed from
the run's progress file (:mod:`fedstruct.runs.progress`), which the process that runs
the rounds rewrites after each: the same way for a run here (``local``,
``flower-sim``) and a deployed run whose folder the submitter sees (the folder the
ServerApp writes, on this machine or a shared disk); otherwise a deployed run's rounds
are logged from ``history.json`` when its results are read back.

The extra (``pip install "fedstruct[track]"``) is imported, and the tracking store
reached, by :func:`check_tracking` before the run writes anything: a missing extra or an
unreachable URI is one line (a :class:`~fedstruct.errors.ConfigError`, exit 2).
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from fedstruct.errors import ConfigError, FedstructError, FedstructWarning
from fedstruct.fl.federation import CHECKPOINT_FILE
from fedstruct.runs.control import Tracking
from fedstruct.runs.folder import LOCK_FILE, run_state, valid_record
from fedstruct.runs.outcome import RunOutcome
from fedstruct.runs.progress import numeric_values, read_progress

__all__ = [
    "EXTRA",
    "ROUND_PREFIX",
    "Tracker",
    "check_tracking",
    "missing_extra",
    "open_tracker",
    "track_run",
]

#: How to install what tracking needs.
EXTRA = 'pip install "fedstruct[track]"'
#: The prefix of a per-round series' name (``round/test_accuracy``).
ROUND_PREFIX = "round/"
#: Seconds between two looks at the run's progress file while it runs.
FOLLOW_INTERVAL = 1.0
#: Files of a run folder that are not logged: its lock, and its checkpoint (the state
#: to resume from, as large as the model; the model's own files are logged).
_NOT_LOGGED = (LOCK_FILE, CHECKPOINT_FILE)

logger = logging.getLogger(__name__)


class Tracker(Protocol):
    """Where a tracked run is logged (one MLflow run, one TensorBoard event folder)."""

    #: One line saying where the run was logged (printed after the run).
    where: str

    def log_round(self, rnd: int, values: Mapping[str, float]) -> None:
        """Log round ``rnd``'s numbers (each as ``round/NAME`` at step ``rnd``)."""
        ...

    def finish(self, metrics: Mapping[str, float], last_round: int, files: Sequence[Path]) -> None:
        """Log the final metrics and the run's files."""
        ...

    def end(self, status: str) -> None:
        """End the tracked run: ``finished``, ``stopped`` or ``failed``."""
        ...


def missing_extra(kind: str, exc: ImportError) -> ConfigError:
    """The one-line error of ``--track kind`` without the extra installed."""
    name = getattr(exc, "name", None) or str(exc)
    return ConfigError(f"--track {kind} needs the 'track' extra ({name} is not installed): {EXTRA}")


def check_tracking(tracking: Tracking, out: Path) -> None:
    """Import what ``tracking`` needs and reach its store, writing nothing in ``out``.

    Raises
    ------
    ConfigError
        If the extra is not installed (naming ``pip install "fedstruct[track]"``), or
        the tracking URI cannot be reached or used.
    """
    _backend(tracking.kind).check(tracking, out)


def open_tracker(tracking: Tracking, out: Path, config: Mapping[str, Any]) -> Tracker:
    """A new tracked run for the run in ``out`` whose ``config.json`` is ``config``,
    its settings logged.

    Raises
    ------
    ConfigError
        As :func:`check_tracking`.
    """
    tracker: Tracker = _backend(tracking.kind).start(tracking, out, config)
    return tracker


def _backend(kind: str) -> Any:
    """The module that tracks in ``kind`` (imported now; the extra it needs is imported
    by its ``check`` and ``start``)."""
    if kind == "mlflow":
        from fedstruct.runs.tracking import mlflow_runs

        return mlflow_runs
    from fedstruct.runs.tracking import tensorboard_events

    return tensorboard_events


class _Logged:
    """What a tracker has logged of the rounds, so that each number is logged once."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.values: dict[tuple[int, str], float] = {}

    def round(self, rnd: int, values: Mapping[str, float]) -> None:
        """Log the numbers of round ``rnd`` not yet logged with the same value."""
        new = {k: v for k, v in values.items() if not _same(self.values.get((rnd, k)), float(v))}
        if new:
            self.tracker.log_round(rnd, new)
            self.values.update({(rnd, k): float(v) for k, v in new.items()})

    def history(self, history: Sequence[Mapping[str, Any]]) -> int:
        """Log every round of ``history`` (``history.json``); the last round's number."""
        last = 0
        for k, record in enumerate(history, start=1):
            rnd = record.get("round", k)
            rnd = rnd if isinstance(rnd, int) and not isinstance(rnd, bool) else k
            self.round(rnd, numeric_values(record))
            last = max(last, rnd)
        return last


def _same(logged: float | None, value: float) -> bool:
    if logged is None:
        return False
    return logged == value or (math.isnan(logged) and math.isnan(value))


class _Follower:
    """Logs each round from the run's progress file while the run runs (a thread that
    looks every :data:`FOLLOW_INTERVAL` seconds), skipping the file a previous session
    of the run left."""

    def __init__(self, out: Path, logged: _Logged) -> None:
        self.out = out
        self.logged = logged
        self.seen = self._look()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._follow, name="fedstruct-track", daemon=True)

    def _look(self) -> tuple[Any, ...] | None:
        try:
            progress = read_progress(self.out)
        except FedstructError:
            return None
        if progress is None:
            return None
        return (progress["round"], progress.get("updated"), progress["metrics"])

    def poll(self) -> None:
        """Log the round the progress file holds if it is new."""
        now = self._look()
        if now is None or now == self.seen:
            return
        self.seen = now
        rnd, _, metrics = now
        self.logged.round(rnd, numeric_values(metrics))

    def _follow(self) -> None:
        while not self.stopped.wait(FOLLOW_INTERVAL):
            try:
                self.poll()
            except Exception as exc:  # the run goes on; its end logs every round again
                logger.warning("tracking a round failed: %s", exc)

    def start(self) -> None:
        """Start following."""
        self.thread.start()

    def stop(self) -> None:
        """Stop following (returns once the thread has ended)."""
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()


@contextmanager
def track_run(
    tracking: Tracking | None, out: Path, config: Mapping[str, Any]
) -> Iterator[Callable[[RunOutcome], RunOutcome]]:
    """Track the run in ``out`` (``config``: its ``config.json``) while the block runs
    it; yields the function the block passes the run's outcome to when it has ended,
    which logs the rounds, the final metrics and the files, and returns the outcome
    (its ``tracked``: where). Without ``tracking`` nothing is logged. A run that ends
    in an exception is ended as failed (stopped for an interrupt). Logging that fails
    once the run has its results is a warning: the run's files are in its folder.

    Raises
    ------
    ConfigError
        As :func:`open_tracker`, before the block runs.
    """
    if tracking is None:
        yield lambda outcome: outcome
        return
    tracker = open_tracker(tracking, out, config)
    logged = _Logged(tracker)
    follower = _Follower(out, logged)

    def finish(outcome: RunOutcome) -> RunOutcome:
        follower.stop()
        try:
            last = logged.history(outcome.history)
            tracker.finish(numeric_values(outcome.metrics), last, _run_files(out))
            state = run_state(out)
            tracker.end(state if state in ("finished", "stopped") else "failed")
        except Exception as exc:
            _warn(f"logging the run to {tracking.kind} failed ({tracker.where})", exc)
        else:
            outcome.tracked = tracker.where
        return outcome

    follower.start()
    try:
        yield finish
    except BaseException as exc:
        follower.stop()
        try:
            tracker.end("stopped" if isinstance(exc, KeyboardInterrupt) else "failed")
        except Exception as error:  # the run's own exception is the one to see
            logger.warning("ending the tracked run failed: %s", error)
        raise
    finally:
        follower.stop()


def _run_files(out: Path) -> list[Path]:
    """The files and folders of the run in ``out`` to log: those ``run.json`` lists (every
    entry, without a valid record), less its lock and checkpoint."""
    record = valid_record(out)
    names = record["files"] if record is not None else [p.name for p in out.iterdir()]
    return [out / n for n in sorted(names) if n not in _NOT_LOGGED and (out / n).exists()]


def _warn(what: str, exc: Exception) -> None:
    """Say on stderr, in one line, that tracking failed."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    warnings.warn(f"{what}: {reason}", FedstructWarning, stacklevel=3)
