"""Progress of long work on stderr: a rich bar on a terminal, plain lines otherwise.

Under ``nohup``, in a log file or a CI job, stderr is not a terminal and a rich bar
shows nothing until the work ends; there every update becomes one plain line
(``LABEL: round 3/50 · WHAT · 0:01:02 elapsed``), at most one per ``every`` seconds
(rounds print each one; the many small steps of an adjacency search do not flood the
log). Federated rounds (:func:`~fedstruct.fl.federation.run_federation`), recipes'
pieces of work and FedCDnv's local adjacency search report through `show_progress`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["Tracker", "elapsed_text", "show_progress"]

#: The rich bar on screen, if any: progress shown while it is (a client's adjacency
#: search inside a round) becomes another line of it, as a terminal shows one live
#: display at a time.
_live: Progress | None = None


class Tracker(Protocol):
    """What `show_progress` yields: call ``update`` as the work goes on."""

    def update(self, completed: int, info: str = "") -> None:
        """``completed`` of the total done; ``info``: what the last step found."""

    def advance(self, info: str = "") -> None:
        """One more done."""


class _Bar:
    """A rich progress bar (on a terminal)."""

    def __init__(self, bar: Progress, task: int, completed: int) -> None:
        self._bar, self._task, self._done = bar, task, completed

    def update(self, completed: int, info: str = "") -> None:
        self._done = completed
        self._bar.update(self._task, completed=completed, info=info)

    def advance(self, info: str = "") -> None:
        self.update(self._done + 1, info)


class _Lines:
    """One plain line per update on stderr (not a terminal), at most one per
    ``every`` seconds, and the line that says all is done once."""

    def __init__(self, label: str, total: int, unit: str, completed: int, every: float) -> None:
        self._label, self._total, self._unit, self._every = label, total, unit, every
        self._done = completed
        self._start = time.monotonic()
        self._last = -float("inf")
        self._finished = False

    def update(self, completed: int, info: str = "") -> None:
        self._done = completed
        now = time.monotonic()
        finished = completed >= self._total
        if self._finished or (not finished and now - self._last < self._every):
            return  # the end is said once; before it, a line per ``every`` seconds
        self._last, self._finished = now, finished
        what = f"{self._unit} {completed}/{self._total}".strip()
        parts = [f"{self._label}: {what}", info, f"{elapsed_text(now - self._start)} elapsed"]
        print(" · ".join(p for p in parts if p), file=sys.stderr, flush=True)

    def advance(self, info: str = "") -> None:
        self.update(self._done + 1, info)


class _Silent:
    def update(self, completed: int, info: str = "") -> None:
        """Nothing to show."""

    def advance(self, info: str = "") -> None:
        """Nothing to show."""


def elapsed_text(seconds: float) -> str:
    """``H:MM:SS``, as rich's elapsed column writes it."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


@contextmanager
def show_progress(
    label: str,
    total: int,
    *,
    enabled: bool = True,
    completed: int = 0,
    unit: str = "",
    every: float = 0.0,
) -> Iterator[Tracker]:
    """Show the progress of ``total`` steps of work on stderr.

    Parameters
    ----------
    label
        What the work is (in front of the bar or line).
    total
        Steps in all.
    enabled
        Show nothing when ``False``.
    completed
        Steps already done (a resumed run).
    unit
        The steps' name in plain lines (``"round"``: ``round 3/50``).
    every
        The fewest seconds between two plain lines (the last step always prints).

    Yields
    ------
    Tracker
        Its ``update``/``advance`` move the bar or print the line.
    """
    if not enabled:
        yield _Silent()
        return
    global _live
    console = Console(stderr=True)
    if not console.is_terminal:
        yield _Lines(label, total, unit, completed, every)
        return
    if _live is not None:  # work inside a round: one more line under the round's bar
        outer = _live
        task = outer.add_task(label, total=total, completed=completed, info="")
        try:
            yield _Bar(outer, task, completed)
        finally:
            outer.remove_task(task)
        return
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    with bar:
        _live = bar
        try:
            task = bar.add_task(label, total=total, completed=completed, info="")
            yield _Bar(bar, task, completed)
        finally:
            _live = None
