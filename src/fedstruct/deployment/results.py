"""A deployed run's results, back to whoever submitted it (docs/deploy.md, "Results back
to the submitter").

The ServerApp writes a run's folder on the SuperLink's machine, in the SuperLink's runs
folder, under a name the submitter chose when it first submitted the run
(:func:`new_name`, kept in ``config.json`` so that ``--resume`` finds the folder).
fedstruct's results call on the SuperLink's Control API
(:data:`~fedstruct.fl.flower.control.RESULTS_PATH`, authenticated, signed and bound to
its arguments like every call there) answers one JSON request with :func:`answer`:

- ``{"folder": NAME}``: the folder's list: the run's record (its ``run.json``) and, for
  each file the run wrote (``run.json``'s ``files``, folders walked; links, other
  entries that are not regular files, and hidden files such as a write in progress,
  left out), its path in the folder, size and SHA-256;
- ``{"folder": NAME, "file": PATH, "offset": N}``: at most :data:`CHUNK` bytes of that
  file from byte ``N``, so that no answer is larger than that, whatever the model;
- ``{"folder": NAME, "progress": true}``: the run's ``progress.json`` as it is now
  (rewritten after every round, :mod:`fedstruct.runs.progress`; ``null`` before the
  first), also while the run runs: what ``fedstruct status RUN --superlink`` shows and
  what the submitter mirrors into its own folder while it waits (:func:`mirror_progress`).

:func:`fetch` asks for the list, then every file chunk by chunk into a temporary file
beside its place, and puts a file in place (an atomic rename) only once its size and
SHA-256 are the listed ones. A path is relative and made of plain names (no ``..``, no
root, no backslash); it is written only inside the destination folder, never through a
link, and never over an entry that is not the run's (an entry the destination's
``run.json`` keeps, docs/artifacts.md): what a SuperLink sends cannot write anywhere
else. Everything travels as JSON and raw bytes: no pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedstruct.deployment.contract import results_folder
from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.files import file_digest, parse_json
from fedstruct.runs.folder import LOCK_FILE, RUN_FILE, read_record, record_files, write_record
from fedstruct.runs.progress import PROGRESS_FILE

__all__ = [
    "CHUNK",
    "MAX_FILES",
    "Fetched",
    "answer",
    "fetch",
    "mirror_progress",
    "new_name",
    "pull_progress",
    "record_fetched",
]

#: The most bytes of a file one answer holds.
CHUNK = 4 * 1024 * 1024
#: The most files a run's folder may list.
MAX_FILES = 10_000
#: The most bytes of a request's JSON.
_REQUEST_LIMIT = 64 * 1024
#: ``run.json`` entries that are the folder's own, not the run's details.
_RECORD_OWN = ("format", "status", "files", "kept", "settings_digest", "inputs")
#: The most bytes of a progress answer (a round's record of metrics: far less).
_PROGRESS_LIMIT = 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


def new_name(out: Path) -> str:
    """A new name for a run's folder on the SuperLink: ``out``'s name (its letters,
    digits, ``.``, ``_`` and ``-``; ``run`` if none) and 8 random hex digits."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", out.name).strip(".-")[:40] or "run"
    return f"{stem}-{secrets.token_hex(4)}"


# ----------------------------------------------------------- the SuperLink's side
def answer(request: str, environ: Mapping[str, str] = os.environ) -> bytes:
    """The answer to a results request (module docstring): the folder's list (JSON) or
    a chunk of one of its files.

    Raises
    ------
    DeploymentError
        One line: a request that is not one, a folder outside the SuperLink's runs
        folder or holding no run, a file that is not one of the run's.
    """
    asked = _request(request)
    folder = results_folder(asked["folder"], environ)
    try:
        record = read_record(folder) if folder.is_dir() else None
    except ConfigError as exc:
        raise DeploymentError(str(exc)) from None
    if record is None:
        raise DeploymentError(
            f"the SuperLink keeps no run in its results folder {asked['folder']!r} (the run "
            "failed before it wrote anything, or its folder was removed)"
        )
    if asked.get("progress"):
        progress = folder / PROGRESS_FILE
        return progress.read_bytes()[:_PROGRESS_LIMIT] if progress.is_file() else b"null"
    files = _run_files(folder, record)
    if "file" not in asked:
        listed = [
            {"name": name, "size": path.stat().st_size,
             "sha256": file_digest(path, "a result file", error=DeploymentError)}
            for name, path in sorted(files.items())
        ]  # fmt: skip
        return json.dumps({"folder": asked["folder"], "record": record, "files": listed}).encode()
    path = files.get(asked["file"])
    if path is None:
        raise DeploymentError(
            f"{asked['file']!r} is not a file of the run in results folder {asked['folder']!r}"
        )
    with path.open("rb") as handle:
        handle.seek(asked["offset"])
        return handle.read(CHUNK)


def _request(request: str) -> dict[str, Any]:
    """The checked request: ``folder`` (a string), maybe ``file`` and ``offset``."""
    if len(request) > _REQUEST_LIMIT:
        raise DeploymentError("a results request is longer than a request can be")
    asked = parse_json(request, "a results request", error=DeploymentError)
    if not isinstance(asked, dict):
        asked = {"not": "a request"}
    folder, file, offset = (asked.get(k) for k in ("folder", "file", "offset"))
    good = (
        isinstance(folder, str)
        and folder
        and (
            (
                set(asked) <= {"folder", "file", "offset"}
                and (file is None or (isinstance(file, str) and _whole(offset)))
            )
            or (set(asked) == {"folder", "progress"} and asked["progress"] is True)
        )
    )
    if not good:
        raise DeploymentError(
            "a results request must be {'folder': NAME}, {'folder': NAME, 'file': PATH, "
            "'offset': N} or {'folder': NAME, 'progress': true}"
        )
    return asked


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _run_files(folder: Path, record: dict[str, Any]) -> dict[str, Path]:
    """The run's regular files in ``folder`` by their paths in it (``a/b``), without its
    record and lock, links and hidden files."""
    found: dict[str, Path] = {}
    for top in record_files(folder, record):
        if top in (RUN_FILE, LOCK_FILE) or top.startswith("."):
            continue
        path = folder / top
        if path.is_symlink():
            continue
        if path.is_dir():
            for root, dirs, names in os.walk(path):  # links to folders are not walked
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    if not name.startswith("."):
                        _add(found, folder, Path(root) / name)
        else:
            _add(found, folder, path)
    return found


def _add(found: dict[str, Path], folder: Path, path: Path) -> None:
    if stat.S_ISREG(path.lstat().st_mode):
        if len(found) >= MAX_FILES:
            raise DeploymentError(
                f"the run in results folder {folder.name!r} has more than {MAX_FILES} files"
            )
        found[path.relative_to(folder).as_posix()] = path


# --------------------------------------------------------------- the fetcher's side
@dataclass(frozen=True)
class Fetched:
    """What :func:`fetch` brought back.

    Attributes
    ----------
    record
        The run's record on the SuperLink (its ``run.json``).
    files
        The paths written (relative to the destination).
    size
        Their bytes.
    """

    record: dict[str, Any]
    files: list[str] = field(default_factory=list)
    size: int = 0


def fetch(
    ask: Callable[[str], bytes],
    folder: str,
    out: Path,
    *,
    skip: Collection[str] = (),
    kept: Collection[str] = (),
) -> Fetched:
    """Bring the run's files in results folder ``folder`` into ``out`` (module
    docstring), asking with ``ask(request JSON) -> answer bytes`` (the signed call);
    the files named in ``skip`` are left out; ``kept``: the entries of ``out`` that are
    not the run's, never written over.

    Raises
    ------
    DeploymentError
        One line: the SuperLink's refusal or a list that is not one, a path that would
        leave ``out``, pass through a link or write over a kept entry (before anything
        is written), a file whose bytes are not the listed ones.
    """
    listing = parse_json(
        ask(json.dumps({"folder": folder})), "the SuperLink's list of results",
        error=DeploymentError,
    )  # fmt: skip
    record, files = _checked_listing(listing)
    wanted = [f for f in files if f["name"] not in skip]
    for entry in wanted:
        top = _parts(entry["name"])[0]
        if top in kept:
            raise DeploymentError(
                f"{out / top} is not the run's (the folder keeps it) and the run's results "
                f"hold {entry['name']!r}: move it away and fetch again"
            )
    out.mkdir(parents=True, exist_ok=True)
    for entry in wanted:
        _fetch_file(ask, folder, entry, out)
    return Fetched(record, [f["name"] for f in wanted], sum(f["size"] for f in wanted))


def _checked_listing(listing: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    bad = DeploymentError("the SuperLink's list of results is not one fedstruct makes")
    if not isinstance(listing, dict) or not isinstance(listing.get("record"), dict):
        raise bad
    files = listing.get("files")
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise bad
    for entry in files:
        if not (
            isinstance(entry, dict)
            and set(entry) == {"name", "size", "sha256"}
            and isinstance(entry["name"], str)
            and isinstance(entry["size"], int)
            and entry["size"] >= 0
            and isinstance(entry["sha256"], str)
            and _SHA256.fullmatch(entry["sha256"])
        ):
            raise bad
        _parts(entry["name"])
    if len({e["name"] for e in files}) != len(files):
        raise bad
    return listing["record"], files


def _parts(name: str) -> list[str]:
    """The plain names of a relative path ``a/b`` (never ``..``, a root, a backslash).

    Raises
    ------
    DeploymentError
        For any other path.
    """
    parts = name.split("/")
    if not all(
        p not in ("", ".", "..") and "\\" not in p and "\0" not in p and not p.startswith(".")
        for p in parts
    ) or parts[0] in (RUN_FILE, LOCK_FILE):
        raise DeploymentError(
            f"the SuperLink's list of results names {name!r}, which is not a path inside a "
            "run's folder; nothing was written"
        )
    return parts


def _fetch_file(ask: Callable[[str], bytes], folder: str, entry: dict[str, Any], out: Path) -> None:
    """Bring one listed file into ``out`` (checked, then renamed into place)."""
    name, size = entry["name"], entry["size"]
    parts = _parts(name)
    place = out
    for part in parts[:-1]:
        place = place / part
        if place.is_symlink() or (place.exists() and not place.is_dir()):
            raise DeploymentError(f"{place} is not a folder of the run; the results hold {name!r}")
        place.mkdir(exist_ok=True)
    target = place / parts[-1]
    if target.is_dir() and not target.is_symlink():
        raise DeploymentError(f"{target} is a folder; the results hold a file {name!r}")
    fd, tmp = tempfile.mkstemp(dir=place, prefix=f".{parts[-1]}-")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as handle:
            offset = 0
            while offset < size:
                chunk = ask(json.dumps({"folder": folder, "file": name, "offset": offset}))
                if not chunk or offset + len(chunk) > size or len(chunk) > CHUNK:
                    raise DeploymentError(
                        f"the SuperLink sent {name!r} in pieces that do not make its listed "
                        f"{size} bytes; fetch again"
                    )
                handle.write(chunk)
                digest.update(chunk)
                offset += len(chunk)
        if digest.hexdigest() != entry["sha256"]:
            raise DeploymentError(
                f"{name!r} changed while it was fetched (its SHA-256 is not the listed one); "
                "fetch again"
            )
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pull_progress(ask: Callable[[str], bytes], folder: str) -> dict[str, Any] | None:
    """The ``progress.json`` of the run in results folder ``folder`` on the SuperLink,
    checked as a progress file (``None`` before its first round).

    Raises
    ------
    DeploymentError
        The SuperLink's refusal, or an answer that is not a progress file.
    """
    from fedstruct.runs.progress import check_progress

    answer = ask(json.dumps({"folder": folder, "progress": True}))
    if len(answer) > _PROGRESS_LIMIT:
        raise DeploymentError("the SuperLink's progress of the run is larger than one can be")
    text = answer.decode(errors="replace")
    progress = parse_json(text, "the run's progress", error=DeploymentError)
    if progress is None:
        return None
    try:
        return check_progress(progress, f"the progress of run folder {folder!r}")
    except ConfigError as exc:
        raise DeploymentError(str(exc)) from None


def mirror_progress(ask: Callable[[str], bytes], folder: str, out: Path) -> None:
    """Write the progress of the run in results folder ``folder`` on the SuperLink into
    ``out/progress.json`` (the run's own folder, its lock held by the caller), so that
    ``fedstruct status DIR`` and ``--track`` follow a deployed run as a local one."""
    from fedstruct.fl.checkpoint import write_atomically

    progress = pull_progress(ask, folder)
    if progress is not None:
        write_atomically(out / PROGRESS_FILE, (json.dumps(progress) + "\n").encode())


def record_fetched(out: Path, record: Mapping[str, Any], **details: Any) -> None:
    """Write ``out``'s ``run.json`` (by the process holding its lock) with the status
    and details of the run's record on the SuperLink, and ``details``; the files it
    lists are those now in ``out`` that it does not keep."""
    status = record.get("status")
    if status not in ("running", "finished", "stopped", "failed"):
        status = "failed"
    theirs = {k: v for k, v in record.items() if k not in _RECORD_OWN}
    write_record(out, str(status), **{**theirs, **details})
