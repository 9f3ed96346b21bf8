"""``fedstruct status``: where a run stands while it runs (a run folder, or a deployed
run by its Flower run id), once or refreshed with ``--watch``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.live import Live
from rich.text import Text

from fedstruct.errors import ConfigError, DeploymentError

if TYPE_CHECKING:
    from fedstruct.fl.flower.cluster import Link
    from fedstruct.runs.progress import RunProgress

from fedstruct.cli.app import app, bad_input_exits_2, out_console

T = TypeVar("T")

#: What ``--watch`` waits between two looks (tests replace it: no test sleeps).
_sleep: Callable[[float], None] = time.sleep
#: The most metrics a status shows (the rest are in the run's files).
_SHOWN_METRICS = 12


@app.command()
@bad_input_exits_2
def status(
    run: Annotated[
        str,
        typer.Argument(
            help="A run's --out folder, or with --superlink the run id of a deployed run."
        ),
    ],
    watch: Annotated[
        bool, typer.Option("--watch", help="Refresh until the run has ended.")
    ] = False,
    interval: Annotated[
        float, typer.Option(help="Seconds between two refreshes with --watch.")
    ] = 5.0,
    superlink: Annotated[
        str | None,
        typer.Option(help="The SuperLink's host:port: RUN is a deployed run's id."),
    ] = None,
    root_certificates: Annotated[
        Path | None, typer.Option(help="CA certificate of the TLS SuperLink.")
    ] = None,
    control_key: Annotated[
        Path | None, typer.Option(help="Private control key the SuperLink accepts.")
    ] = None,
) -> None:
    """Where a run stands: round, sites asked and answered, bytes, elapsed and remaining
    time, last metrics."""
    if interval <= 0:
        raise ConfigError(f"--interval {interval:g}: give the seconds between refreshes, > 0")
    if superlink is None:
        if root_certificates is not None or control_key is not None:
            raise ConfigError(
                "--root-certificates and --control-key are for a deployed run: add "
                "--superlink HOST:PORT and give its run id"
            )
        folder = Path(run)
        _show(lambda: _folder_status(folder), watch, interval)
        return
    run_id = _run_id(run)
    from fedstruct.fl.flower.cluster import DeploymentOptions

    options = DeploymentOptions(
        superlink=superlink,
        root_certificates=str(root_certificates) if root_certificates else None,
        control_key=str(control_key) if control_key else None,
    )
    link = options.link()
    _show(lambda: _deployed_status(link, options.key, run_id), watch, interval)


def _run_id(run: str) -> int:
    """A deployed run's id as given.

    Raises
    ------
    ConfigError
        If it is not a whole number.
    """
    try:
        run_id = int(run)
    except ValueError:
        run_id = -1
    if run_id < 0:
        raise ConfigError(
            f"{run} is not a run id: with --superlink give the id Flower gave the run "
            "('fedstruct run ... --backend flower' prints it)"
        )
    return run_id


def _show(look: Callable[[], tuple[str, bool]], watch: bool, interval: float) -> None:
    """Print what ``look`` says (its text, and whether the run has ended); with
    ``watch`` look again every ``interval`` seconds until it has ended: refreshed in
    place on a terminal, else printed each time it changes."""
    text, ended = look()
    if not watch:
        out_console.print(text, highlight=False, soft_wrap=True)
        return
    if out_console.is_terminal:
        with Live(Text(text), console=out_console, auto_refresh=False) as live:
            while not ended:
                _sleep(interval)
                text, ended = look()
                live.update(Text(text), refresh=True)
        return
    out_console.print(text, highlight=False, soft_wrap=True)
    while not ended:
        _sleep(interval)
        shown = text
        text, ended = look()
        if _without_clock(text) != _without_clock(shown):
            out_console.print(text, highlight=False, soft_wrap=True)


def _without_clock(text: str) -> str:
    """``text`` without its elapsed and remaining lines (which change every look)."""
    return "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith(("elapsed", "remaining"))
    )


def _folder_status(folder: Path) -> tuple[str, bool]:
    from fedstruct.runs.progress import run_progress

    progress = run_progress(folder)
    return describe(progress), progress.ended


def _deployed_status(link: Link, key: Path | None, run_id: int) -> tuple[str, bool]:
    """Flower's status of run ``run_id`` and, from the progress of its folder on the
    SuperLink (:func:`~fedstruct.deployment.results.pull_progress`), where it stands.

    Raises
    ------
    DeploymentError
        If the SuperLink does not answer, or knows no such run.
    """
    from fedstruct.deployment.results import pull_progress
    from fedstruct.fl.flower.control import pull_results, run_results_folder, run_status
    from fedstruct.runs.progress import progress_of

    try:
        flower, details = run_status(link, key, run_id)
        _, folder, method = run_results_folder(link, key, run_id)
    except DeploymentError as exc:  # say which run it was about
        raise DeploymentError(f"run {run_id}: {exc}") from None
    lines = [f"run {run_id} at {link.address}: {flower or 'pending'}"]
    first = details.splitlines()[0] if details else ""
    if first and flower.startswith("finished") and flower != "finished:completed":
        lines.append(f"  {first}")
    try:
        progress = pull_progress(lambda request: pull_results(link, key, request), folder)
    except DeploymentError:  # its folder is not written yet (or no longer there)
        progress = None
    if progress is not None:
        state = _FLOWER_STATES.get(flower, "running")
        lines.append(describe(progress_of(Path(folder), method, state, progress)))
    return "\n".join(lines), flower.startswith("finished")


#: The state of a run as ``describe`` names it, for Flower's finished statuses.
_FLOWER_STATES = {
    "finished:completed": "finished",
    "finished:failed": "failed",
    "finished:stopped": "stopped",
}


def describe(progress: RunProgress) -> str:
    """The lines ``fedstruct status`` prints for ``progress``."""
    p = progress
    rounds = f" of {p.rounds}" if p.rounds else ""
    lines = [
        f"{p.folder}: a {p.method} run, {p.state}",
        f"  round      {p.round}{rounds}",
    ]
    if p.asked or p.answered:
        silent = sorted(set(p.asked) - set(p.answered))
        missing = f" (no answer: {', '.join(silent)})" if silent else ""
        lines.append(f"  sites      {len(p.asked)} asked, {len(p.answered)} answered{missing}")
    if p.bytes_down is not None and p.bytes_up is not None:
        lines.append(f"  bytes      {p.bytes_down:,} down, {p.bytes_up:,} up")
    lines.append(f"  elapsed    {_duration(p.elapsed)}")
    if p.state == "running":
        remaining = (
            "unknown (no round has finished yet)"
            if p.remaining is None
            else f"about {_duration(p.remaining)}"
        )
        lines.append(f"  remaining  {remaining}")
    if p.error:
        lines.append(f"  error      {p.error}")
    metrics = {k: v for k, v in p.metrics.items() if k != "round"}  # the line above says it
    if metrics:
        shown = list(metrics.items())[:_SHOWN_METRICS]
        more = len(metrics) - len(shown)
        text = ", ".join(f"{k} {_number(v)}" for k, v in shown)
        text += f", ... ({more} more)" if more else ""
        which = "metrics   " if p.state == "finished" else "last round"
        lines.append(f"  {which} {text}")
    return "\n".join(lines)


def _number(value: float) -> str:
    """A whole number as it is, another to 4 significant digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _duration(seconds: float | None) -> str:
    """``seconds`` as ``1 h 02 min``, ``3 min 05 s`` or ``12 s`` (``unknown`` for ``None``)."""
    if seconds is None:
        return "unknown"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"
