"""Submitting a run to a SuperLink: ``fedstruct run METHOD --backend flower``.

The run's folder gets a tiny Flower App (``flower-app/pyproject.toml``, whose
components are :mod:`fedstruct.deployment.app`); it is submitted with a run
config naming the method, its resolved settings, its ``config.json`` and the name of
its results folder on the SuperLink (new for a new run, :func:`~fedstruct.deployment.
results.new_name`, and kept in ``config.json`` under ``deployment``; the same for
``--resume``), each call to the SuperLink signed for itself
(:mod:`fedstruct.fl.flower.control`). The SuperLink's ServerApp writes ``metrics.json``,
plots, the model and the per-round checkpoint into that folder, inside the folder the
SuperLink keeps runs in (:func:`~fedstruct.deployment.contract.results_folder`); this
module polls the run's status until it ends, then fetches the folder's files back into
the run's own folder over the same signed channel
(:func:`~fedstruct.deployment.results.fetch`) and reads the results there, wherever the
submitter is. The SuperLink keeps its copy: ``fedstruct flower fetch RUN --out DIR``
brings it back later (:func:`fetch_run`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.status import Status

from fedstruct import __version__, errors
from fedstruct.deployment.catalogue import CATALOGUE
from fedstruct.deployment.contract import ERROR_FILE, RUN_CONFIG_DEFAULTS
from fedstruct.deployment.results import Fetched, fetch, mirror_progress, new_name, record_fetched
from fedstruct.errors import ConfigError, DeploymentError, FedstructError
from fedstruct.files import parse_json, read_text
from fedstruct.fl.checkpoint import write_atomically
from fedstruct.fl.flower.cluster import ControlKeyRefused, DeploymentOptions, Link
from fedstruct.fl.flower.control import pull_results, run_status, start_run
from fedstruct.runs.control import RunControl
from fedstruct.runs.folder import read_record, write_record
from fedstruct.runs.outcome import RunOutcome

__all__ = ["fetch_back", "fetch_run", "run_app", "submit", "write_app"]


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
    config, results = _results_folder(out, options, resume=control.resume)
    values: dict[str, str | int | float | bool] = {
        "method": name,
        "settings": json.dumps(settings, sort_keys=True),
        "config": json.dumps(config, sort_keys=True),
        "out": results,
        "resume": control.resume,
        "stop-after": control.stop_after or 0,
        "min-nodes": options.min_nodes,
        "join-timeout": options.join_timeout,
        "reply-timeout": options.reply_timeout,
    }
    run_app(name, out, results, values, options, control.progress)
    return _read_outcome(out)


def run_app(
    name: str,
    out: Path,
    results: str,
    values: dict[str, str | int | float | bool],
    options: DeploymentOptions,
    progress: bool,
) -> None:
    """Submit fedstruct's app with the run config ``values``, wait until it has ended
    (``name``: what it runs, in messages), and fetch its folder ``results`` on the
    SuperLink back into ``out`` (its lock held by the caller).

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
    write_record(out, "running", flower_run=int(run_id), results=results)
    status, details = _wait(run_id, link, options.key, name, out, results, progress)
    try:
        fetch_back(link, options.key, results, out, flower_run=int(run_id))
    except DeploymentError as exc:
        if status == "finished:completed" or isinstance(exc, ControlKeyRefused):
            raise DeploymentError(
                f"run {run_id} finished on the SuperLink, but its results could not be "
                f"fetched ({exc}); fetch them with 'fedstruct flower fetch {run_id} --out "
                f"{out}' and the same --superlink, --root-certificates and --control-key"
            ) from None
        # a run that failed before writing its folder: its error is Flower's details
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


def _results_folder(
    out: Path, options: DeploymentOptions, *, resume: bool
) -> tuple[dict[str, Any], str]:
    """The run's ``config.json`` and the name of its results folder on the SuperLink:
    a new name for a new run (written into ``config.json``), the recorded one for a
    resumed run.

    Raises
    ------
    ConfigError
        For a resumed run whose ``config.json`` names no results folder (submitted by a
        fedstruct that wrote the results on the SuperLink's machine only).
    """
    path = out / "config.json"
    config = parse_json(read_text(path, "config.json"), str(path))
    deployment = config.setdefault("deployment", {})
    if resume:
        if not options.results:
            raise ConfigError(
                f"--resume {out}: its config.json names no results folder on the SuperLink "
                "(the run was submitted by an older fedstruct); resume it with that "
                "fedstruct, or start the run again"
            )
        return config, options.results
    deployment["results"] = new_name(out)
    write_atomically(path, (json.dumps(config, indent=2) + "\n").encode())
    return config, deployment["results"]


def fetch_back(link: Link, key: Path | None, results: str, out: Path, **details: Any) -> Fetched:
    """Fetch the files of the run in results folder ``results`` on the SuperLink into
    the run's own folder ``out`` (its lock held by the caller; its ``config.json`` and
    the entries its ``run.json`` keeps are left alone), and record there the run's
    status and details as the SuperLink's record says, with ``details``.

    Raises
    ------
    DeploymentError
        As :func:`~fedstruct.deployment.results.fetch`.
    """
    record = read_record(out) or {}
    fetched = fetch(
        lambda request: pull_results(link, key, request),
        results,
        out,
        skip={"config.json"},
        kept=record.get("kept", []),
    )
    record_fetched(out, fetched.record, results=results, **details)
    return fetched


def fetch_run(
    run_id: int, out: Path, options: DeploymentOptions, *, overwrite: bool = False
) -> Fetched:
    """``fedstruct flower fetch RUN --out DIR``: bring the results of run ``run_id``
    from the SuperLink into ``out``, a whole run's folder there (``--resume``, ``show``
    and ``predict`` work on it): the folder of the run itself (the one that submitted
    it, or an earlier fetch of it) is brought up to date, any other must be new or
    empty, or hold another run and ``overwrite`` (its files only are replaced). Its
    ``config.json`` names the SuperLink, CA and control key of ``options``, so that
    ``--resume`` submits from here.

    Raises
    ------
    DeploymentError
        One line: an unknown run, a run still going, the SuperLink's refusal.
    ConfigError
        ``out`` holds another run (without ``overwrite``) or files of no run.
    """
    from fedstruct.fl.flower.control import run_results_folder
    from fedstruct.runs.folder import folder_lock, prepare_out

    link = options.link()
    status, results, _ = run_results_folder(link, options.key, run_id)
    if not status.startswith("finished"):
        raise DeploymentError(
            f"run {run_id} is {status or 'pending'} on the SuperLink; fetch it once it has ended"
        )
    out = out.resolve()
    with folder_lock(out):
        record = read_record(out)
        if record is not None and _is_of(out, record, results):  # the run's own folder
            kept = list(record["kept"])
        else:
            kept = prepare_out(out, overwrite=overwrite)
            write_record(out, "running", kept=kept, results=results, flower_run=run_id)
        path = out / "config.json"
        ours = path.is_file()  # the submitter's, or an earlier fetch's: kept as it is
        fetched = fetch(
            lambda request: pull_results(link, options.key, request),
            results,
            out,
            skip={"config.json"} if ours else (),
            kept=kept,
        )
        config = (
            None
            if ours or not path.is_file()
            else parse_json(read_text(path, "config.json"), str(path))
        )
        if isinstance(config, dict):
            config["deployment"] = {
                **config.get("deployment", {}),
                "superlink": options.superlink,
                "root_certificates": options.root_certificates,
                "control_key": options.control_key,
                "results": results,
            }
            write_atomically(path, (json.dumps(config, indent=2) + "\n").encode())
        record_fetched(out, fetched.record, results=results, flower_run=run_id)
        return fetched


def _is_of(out: Path, record: dict[str, Any], results: str) -> bool:
    """Whether the run recorded in ``out`` is the one whose folder on the SuperLink is
    ``results`` (its ``run.json`` or its ``config.json`` says so)."""
    if record.get("results") == results:
        return True
    try:
        config = parse_json(read_text(out / "config.json", "config.json"), "config.json")
    except ConfigError:
        return False
    deployment = config.get("deployment") if isinstance(config, dict) else None
    return isinstance(deployment, dict) and deployment.get("results") == results


#: How Flower's run status details begin when the ServerApp raised.
_SERVERAPP_FAILED = "ServerApp failed with exception: "
#: The longest wait between two looks at a run's status (the first comes sooner): the
#: results are fetched at most this long after the run ends.
_STATUS_POLL = 0.5
#: The shortest time between two copies of a running run's progress.
_MIRROR_EVERY = 1.0


def _wait(
    run_id: str,
    link: Link,
    key: Path | None,
    name: str,
    out: Path,
    results: str,
    progress: bool,
) -> tuple[str, str]:
    """Poll the run's status until it has finished; return ``(status, details)``. While
    it runs, its progress on the SuperLink is mirrored into ``out`` (at most every
    :data:`_MIRROR_EVERY` seconds), for ``fedstruct status DIR`` and ``--track``."""
    view = Status(f"run {run_id} submitted", console=Console(stderr=True)) if progress else None
    started = time.monotonic()
    mirrored, where = float("-inf"), ""
    wait = 0.1
    if view is not None:
        view.start()
    try:
        while True:
            try:
                status, details = run_status(link, key, int(run_id))
            except ControlKeyRefused:
                raise
            except DeploymentError:
                raise DeploymentError(_lost(link, run_id, name, out)) from None
            if status.startswith("finished"):
                return status, details
            if status == "running" and time.monotonic() - mirrored >= _MIRROR_EVERY:
                where, mirrored = _mirror(link, key, results, out), time.monotonic()
            if view is not None:
                elapsed = time.monotonic() - started
                view.update(
                    f"run {run_id} on {link.address}: {status or 'pending'}{where} "
                    f"({elapsed:.0f} s)"
                )
            time.sleep(wait)
            wait = min(_STATUS_POLL, wait * 1.5)
    finally:
        if view is not None:
            view.stop()


def _lost(link: Link, run_id: str, name: str, out: Path) -> str:
    """What to say when the SuperLink is lost during run ``run_id`` of ``name``."""
    if name == CATALOGUE:  # nothing to resume: it is asked again
        return (
            f"lost the SuperLink at {link.address} during catalogue run {run_id}; ask again "
            f"once it is back: 'fedstruct flower catalogue --out {out} --overwrite'"
        )
    return (
        f"lost the SuperLink at {link.address} during run {run_id}; its checkpoint in the "
        "run's results folder on the SuperLink holds the finished rounds: resume with "
        f"'fedstruct run {name} --resume {out}'"
    )


def _mirror(link: Link, key: Path | None, results: str, out: Path) -> str:
    """Mirror the run's progress into ``out``; the round it is at (``", round 2 of
    5"``), or ``""`` when the SuperLink has none to give yet."""
    from fedstruct.runs.progress import read_progress

    try:
        mirror_progress(lambda request: pull_results(link, key, request), results, out)
        progress = read_progress(out)
    except (DeploymentError, ConfigError):  # no folder or round yet: the next look
        return ""
    return f", round {progress['round']} of {progress['rounds']}" if progress else ""


def _read_outcome(out: Path) -> RunOutcome:
    metrics = json.loads((out / "metrics.json").read_text())
    history = json.loads((out / "history.json").read_text())
    figures = json.loads((out / "run.json").read_text()).get("figures", [])
    return RunOutcome(metrics, history, [out / f for f in figures])
