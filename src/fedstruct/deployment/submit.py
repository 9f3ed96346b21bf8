"""Submitting a run to a SuperLink: ``fedstruct run METHOD --backend flower``.

The run's folder gets a tiny Flower App (``flower-app/pyproject.toml``, whose
components are :mod:`fedstruct.deployment.app`); it is submitted with a run
config naming the method, its resolved settings and the folder itself, each call to
the SuperLink signed for itself (:mod:`fedstruct.fl.flower.control`). The SuperLink's
ServerApp writes ``config.json``, ``metrics.json``, plots and the per-round checkpoint
into the folder (a path on the SuperLink's machine, inside the folder the SuperLink
keeps runs in: :func:`~fedstruct.deployment.contract.results_folder`), and
this module polls the run's status until it ends and reads the results back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.status import Status

from fedstruct import __version__, errors
from fedstruct.deployment.contract import ERROR_FILE, RUN_CONFIG_DEFAULTS
from fedstruct.errors import DeploymentError, FedstructError
from fedstruct.fl.flower.cluster import ControlKeyRefused, DeploymentOptions, Link
from fedstruct.fl.flower.control import run_status, start_run
from fedstruct.runs.control import RunControl
from fedstruct.runs.outcome import RunOutcome

__all__ = ["run_app", "submit", "write_app"]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def write_app(folder: Path) -> Path:
    """Write the Flower App whose components are fedstruct's deployment apps."""
    folder.mkdir(parents=True, exist_ok=True)
    config = "\n".join(f"{k} = {_toml(v)}" for k, v in RUN_CONFIG_DEFAULTS.items())
    (folder / "pyproject.toml").write_text(
        f"""[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "fedstruct-run"
version = "{__version__}"
description = "A fedstruct run on a Flower deployment"
license = "MIT"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "fedstruct"

[tool.flwr.app.components]
serverapp = "fedstruct.deployment.app:server_app"
clientapp = "fedstruct.deployment.app:client_app"

[tool.flwr.app.config]
{config}
"""
    )
    return folder


def submit(
    name: str,
    out: Path,
    settings: dict[str, Any],
    options: DeploymentOptions,
    control: RunControl,
) -> RunOutcome:
    """Submit run ``name`` to the SuperLink, wait for it, and read its results;
    ``control``'s ``resume`` and ``stop_after`` go to the ServerApp in the run config,
    its ``progress`` decides whether this side shows the run's progress.

    Raises
    ------
    DeploymentError
        If the SuperLink cannot be reached, refuses the run, or is lost mid-run (the
        checkpoint in ``out`` then holds the finished rounds).
    FedstructError
        The server side's own error (same class, same one-line message), e.g. a
        SuperNode hosting a partition that does not exist.
    """
    out = out.resolve()
    values: dict[str, str | int | float | bool] = {
        "method": name,
        "settings": json.dumps(settings, sort_keys=True),
        "out": str(out),
        "resume": control.resume,
        "stop-after": control.stop_after or 0,
        "min-nodes": options.min_nodes,
        "join-timeout": options.join_timeout,
        "reply-timeout": options.reply_timeout,
    }
    run_app(name, out, values, options, control.progress)
    return _read_outcome(out)


def run_app(
    name: str,
    out: Path,
    values: dict[str, str | int | float | bool],
    options: DeploymentOptions,
    progress: bool,
) -> None:
    """Submit fedstruct's app with the run config ``values`` (results folder ``out``)
    and wait until it has completed (``name``: what it runs, in messages).

    Raises
    ------
    DeploymentError, FedstructError
        As :func:`submit`.
    """
    link = options.link()
    app = write_app(out / "flower-app")
    (out / ERROR_FILE).unlink(missing_ok=True)
    run_id = str(start_run(link, options.key, app, values))
    Console(stderr=True).print(
        f"submitted: run {run_id} at {link.address} ('fedstruct status {run_id} --superlink "
        f"{link.address}' tells how far it is)",
        highlight=False,
        soft_wrap=True,
    )
    status, details = _wait(run_id, link, options.key, name, out, progress)
    if status == "finished:completed":
        return
    error = out / ERROR_FILE
    if error.is_file():
        saved = json.loads(error.read_text())
        cls = getattr(errors, saved["class"], None)
        if isinstance(cls, type) and issubclass(cls, FedstructError):
            raise cls(saved["message"])
    first = details.splitlines()[0] if details else "no details"
    if first.startswith(_SERVERAPP_FAILED):  # Flower's words around the ServerApp's error
        raise DeploymentError(f"run {run_id} failed: {first.removeprefix(_SERVERAPP_FAILED)}")
    raise DeploymentError(f"run {run_id} ended {status}: {first}")


#: How Flower's run status details begin when the ServerApp raised.
_SERVERAPP_FAILED = "ServerApp failed with exception: "


def _wait(
    run_id: str,
    link: Link,
    key: Path | None,
    name: str,
    out: Path,
    progress: bool,
) -> tuple[str, str]:
    """Poll the run's status until it has finished; return ``(status, details)``."""
    view = Status(f"run {run_id} submitted", console=Console(stderr=True)) if progress else None
    started = time.monotonic()
    if view is not None:
        view.start()
    try:
        while True:
            try:
                status, details = run_status(link, key, int(run_id))
            except ControlKeyRefused:
                raise
            except DeploymentError:
                raise DeploymentError(
                    f"lost the SuperLink at {link.address} during run {run_id}; the checkpoint "
                    f"in {out} holds the finished rounds: resume with "
                    f"'fedstruct run {name} --resume {out}'"
                ) from None
            if status.startswith("finished"):
                return status, details
            if view is not None:
                elapsed = time.monotonic() - started
                view.update(
                    f"run {run_id} on {link.address}: {status or 'pending'} ({elapsed:.0f} s)"
                )
            time.sleep(1.0)
    finally:
        if view is not None:
            view.stop()


def _read_outcome(out: Path) -> RunOutcome:
    metrics = json.loads((out / "metrics.json").read_text())
    history = json.loads((out / "history.json").read_text())
    figures = json.loads((out / "run.json").read_text()).get("figures", [])
    return RunOutcome(metrics, history, [out / f for f in figures])
