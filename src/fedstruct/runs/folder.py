"""A run's folder: its record (``run.json``), its lock (``run.lock``), and reuse.

``run.json`` says what the run is doing or how it ended (``status``: ``running``,
``finished``, ``stopped``, ``failed``) and which of the folder's entries it wrote
(``files``; top-level names, a folder as one name). A later ``--overwrite`` deletes
only the run's own files, and only when ``run.json`` is a valid fedstruct run record.

A run's files are the entries that appear while a fedstruct process holds the
folder's lock for it: every other entry is ``kept``. The list is taken when a process
starts writing the folder (a new run: the entries already there; ``--resume``: every
entry the run did not list, such as notes or figures added while it was stopped), and
brought up to date as the run writes (:func:`write_record`), so an entry added while
no process runs is never the run's. A run killed outright (SIGKILL, power loss)
leaves ``status: running`` and the list of its last update; the names every run
writes (``config.json``, ``checkpoint.safetensors``, ``model.json``, ...) are
counted as its too (the run refused to start over one it did not write).

``run.lock`` holds the pid, host and start time of the process writing the folder,
from before the folder is prepared until the run ends. A second run or resume on a
locked folder is refused, naming the owner; a lock whose process has ended (same
host: no such pid, or a pid now held by a process started at another time) is stale:
it is named on stderr and taken over. A ``run.lock`` that is not a regular file (a
folder, a FIFO) is no fedstruct lock and is refused in one line, never read or
deleted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fedstruct.errors import ConfigError
from fedstruct.files import describe_mode, parse_json, read_text
from fedstruct.fl.checkpoint import write_atomically
from fedstruct.fl.federation import CHECKPOINT_FILE

__all__ = [
    "LOCK_FILE",
    "PROGRESS_FILE",
    "RUN_FILE",
    "RUN_FORMAT",
    "folder_lock",
    "lock_owner",
    "prepare_out",
    "read_record",
    "record_files",
    "record_status",
    "reopen",
    "run_state",
    "update_files",
    "valid_record",
    "write_record",
]

logger = logging.getLogger(__name__)

#: The run's record: status and the files it wrote.
RUN_FILE = "run.json"
#: ``run.json``'s ``format`` entry.
RUN_FORMAT = "fedstruct.run"
#: The lock held while a process writes the folder.
LOCK_FILE = "run.lock"
#: Where the run says how far it is, rewritten after every round (:mod:`~fedstruct.runs.progress`).
PROGRESS_FILE = "progress.json"
#: Names a run writes whatever the method; an entry of these names that the previous
#: run did not write is never written over.
_OWN_NAMES = (
    "config.json", RUN_FILE, "metrics.json", "history.json", CHECKPOINT_FILE,
    "model.json", "model.safetensors", PROGRESS_FILE,
)  # fmt: skip
#: Files that mark a folder as holding a fedstruct run (of any version).
_RUN_MARKERS = ("config.json", RUN_FILE, "metrics.json")
#: The largest ``run.lock`` read (a few short fields).
_LOCK_LIMIT = 4096
#: Statuses a record may have.
_STATUSES = ("running", "finished", "stopped", "failed")


# ------------------------------------------------------------------- record


def _is_plain_name(name: object) -> bool:
    """A file name without any folder part (never ``..``, a separator or a root)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
    )


def read_record(out: Path) -> dict[str, Any] | None:
    """``out/run.json``, checked; ``None`` when the folder has none.

    Raises
    ------
    ConfigError
        If it is not JSON, not a fedstruct run record (written by an older fedstruct,
        which did not list its files, or by hand), or lists a file outside the folder.
    """
    path = out / RUN_FILE
    if not path.is_file():
        return None
    keep = "the folder's files are left as they are"
    try:
        record = parse_json(read_text(path, RUN_FILE), str(path))
    except ConfigError as exc:
        raise ConfigError(f"{exc}; {keep}") from None
    if not isinstance(record, dict) or record.get("format") != RUN_FORMAT:
        raise ConfigError(
            f'{path} is not a record of this fedstruct (no "format": "{RUN_FORMAT}"), so '
            "the run's files cannot be told from others: the folder is never emptied; "
            "delete its files yourself or choose a new folder"
        )
    for key in ("files", "kept"):
        names = record.get(key)
        if not isinstance(names, list) or not all(_is_plain_name(n) for n in names):
            raise ConfigError(
                f"{path}: {key!r} is not a list of file names in the folder; the folder is "
                "never emptied: delete its files yourself or choose a new folder"
            )
    if record.get("status") not in _STATUSES:
        raise ConfigError(
            f"{path}: status {record.get('status')!r} is not one of {list(_STATUSES)}"
        )
    inputs = record.get("inputs", {})
    if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
        raise ConfigError(
            f"{path}: 'inputs' is not an object of file -> SHA-256; the file was changed by "
            "hand: start a new run"
        )
    return record


def _entries(out: Path) -> set[str]:
    """Names in ``out`` other than its lock."""
    return {p.name for p in out.iterdir()} - {LOCK_FILE} if out.is_dir() else set()


def record_files(out: Path, record: dict[str, Any]) -> list[str]:
    """The entries of ``out`` that the recorded run wrote: those it lists and, for a run
    killed before its last record (status ``running``), the names every run writes
    that it did not keep (its checkpoint, written after the list's last update)."""
    listed = set(record["files"])
    if record["status"] == "running":
        listed |= set(_OWN_NAMES) - set(record["kept"])
    return sorted(name for name in listed if (out / name).exists() or (out / name).is_symlink())


#: Entries of ``run.json`` that :func:`write_record` keeps from the previous record.
_CARRIED = ("settings_digest", "inputs")


def write_record(
    out: Path,
    status: str,
    *,
    kept: Iterable[str] | None = None,
    settings_digest: str | None = None,
    inputs: dict[str, str] | None = None,
    **details: Any,
) -> None:
    """Write ``out/run.json`` atomically: ``status``, ``details``, and the files the run
    wrote so far: every entry not ``kept`` (called by the process that holds the
    folder's lock, so the entries that appeared since the list was taken are its own).

    Parameters
    ----------
    kept
        Entries that are not the run's (default: the current record's, or, without
        one, every entry but ``config.json``, which the run writes first).
    settings_digest
        SHA-256 of the settings the run started with (``config.json``; default: the
        current record's), checked by ``--resume``.
    inputs
        SHA-256 of each input file the run read, by absolute path (default: the
        current record's), checked by ``--resume``.
    """
    try:
        previous = read_record(out) or {}
    except ConfigError:
        previous = {}
    if kept is None:
        kept = previous["kept"] if previous else sorted(_entries(out) - {"config.json"})
    carried = {key: previous[key] for key in _CARRIED if key in previous}
    given = {"settings_digest": settings_digest, "inputs": inputs}
    carried.update({key: value for key, value in given.items() if value is not None})
    kept = sorted(set(kept))
    files = sorted(_entries(out) - set(kept) | {RUN_FILE})
    record = {
        "format": RUN_FORMAT, "status": status, **details, "files": files, "kept": kept, **carried
    }  # fmt: skip
    write_atomically(out / RUN_FILE, (json.dumps(record, indent=2) + "\n").encode())


def update_files(out: Path) -> None:
    """Bring ``run.json``'s list of files up to date, its status and details unchanged
    (as the run writes: before it fits, after it; a deployment writes some beside
    the server's)."""
    try:
        record = read_record(out)
    except ConfigError:
        return
    if record is not None:
        own = ("format", "status", "files", "kept", *_CARRIED)
        details = {k: v for k, v in record.items() if k not in own}
        write_record(out, record["status"], **details)


def reopen(out: Path) -> None:
    """Take the recorded run in ``out`` up again (``--resume``, by the process that now
    holds the lock): its status becomes ``running``, and every entry it did not write
    (notes, figures added while it was stopped or after it was killed) is kept: never
    listed as the run's, never deleted by a later ``--overwrite``.

    Raises
    ------
    ConfigError
        If ``out`` holds no valid ``run.json``, or an entry of a name every run writes
        (``model.json``, ...) that the run did not write.
    """
    record = read_record(out)
    if record is None:
        raise ConfigError(
            f"{out} has no {RUN_FILE}: --resume needs the folder of a run started by "
            "'fedstruct run'"
        )
    kept = _entries(out) - set(record_files(out, record)) - {RUN_FILE}
    clash = [name for name in _OWN_NAMES if name in kept]
    if clash:
        raise ConfigError(
            f"--resume {out}: the folder holds {clash[0]}, which the run did not write and "
            "would write over; move it away and resume again"
        )
    write_record(out, "running", kept=kept)


def valid_record(out: Path) -> dict[str, Any] | None:
    """``out``'s ``run.json`` as :func:`read_record` checks it; ``None`` when there is
    none or it is not a valid record."""
    try:
        return read_record(out)
    except ConfigError:
        return None


def run_state(out: Path) -> str | None:
    """The run's status as ``run.json`` says, ``interrupted`` for a run recorded as
    running that no live process holds; ``None`` without a valid record."""
    record = valid_record(out)
    return None if record is None else record_status(out, record)


def record_status(out: Path, record: dict[str, Any]) -> str:
    """The status ``record`` (``out``'s checked ``run.json``, from :func:`read_record`)
    says, ``interrupted`` for a run recorded as running that no live process holds."""
    if record["status"] == "running" and lock_owner(out) is None:
        return "interrupted"
    return str(record["status"])


# ------------------------------------------------------------------ prepare


def prepare_out(out: Path, *, overwrite: bool = False) -> list[str]:
    """Make ``out`` (created and locked by :func:`folder_lock`) ready for a new run and
    return the entries it keeps (not the new run's).

    A folder holding another run is refused, or, with ``overwrite``, cleared of that
    run's files only (those ``run.json`` lists). The folder of a run that failed
    before saving any round is reused without ``overwrite``.

    Raises
    ------
    ConfigError
        If ``out`` is a file, holds another run (without ``overwrite``), holds files
        but no valid ``run.json`` (never emptied, even with ``overwrite``), or holds a
        file the new run would write over that no earlier run wrote.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the run")
    entries = _entries(out)
    if not entries:
        return []
    record = read_record(out)
    if record is None:
        markers = [m for m in _RUN_MARKERS if m in entries]
        what = (
            f"holds {markers[0]} but no fedstruct run.json, so none of its files is known "
            "to be a run's"
            if markers
            else "is not empty and holds no fedstruct run (no run.json)"
        )
        raise ConfigError(
            f"--out {out} {what}; choose a new or empty folder (it is never emptied for you)"
        )
    theirs = record_files(out, record)
    reusable = record["status"] == "failed" and CHECKPOINT_FILE not in theirs
    if not (overwrite or reusable):
        raise ConfigError(
            f"--out {out} holds another run ({record['status']}); choose a new folder, or "
            "add --overwrite to replace it (only the files that run wrote are deleted)"
        )
    kept = sorted(entries - set(theirs))
    clash = [name for name in _OWN_NAMES if name in kept]
    if clash:
        raise ConfigError(
            f"--out {out} holds {clash[0]}, which no earlier run wrote and the new run would "
            "write over; move it away or choose a new folder"
        )
    for name in theirs:
        _remove(out / name)
    return kept


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


# --------------------------------------------------------------------- lock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):
        return False
    return True


def _read_lock(path: Path) -> dict[str, Any]:
    """The lock's owner as it records it; empty when unreadable (never blocks: a lock
    that is not a regular file reads as empty)."""
    try:
        owner = parse_json(read_text(path, LOCK_FILE, limit=_LOCK_LIMIT), str(path))
    except ConfigError:
        return {}
    return owner if isinstance(owner, dict) else {}


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started, as ``BOOT-ID/TICKS`` (the boot's id and the start
    time in clock ticks since boot, from Linux's ``/proc``); ``None`` where the system
    does not tell (no ``/proc``) or the process does not exist."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat_line.rpartition(")")[2].split()  # after the command's name
    try:
        return f"{boot}/{int(fields[19])}"  # field 22, starttime
    except (IndexError, ValueError):
        return None


def _why_stale(owner: dict[str, Any]) -> str | None:
    """Why the lock's process is known to have ended (only knowable on this host):
    no process has its pid, or the process that has it now started at another time
    than the lock records (the pid was reused); ``None`` when it may be alive."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return "its owner is unreadable"  # no process can be named as its owner
    if owner.get("host") != socket.gethostname():
        return None
    if not _alive(pid):
        return f"{_who(owner)} has ended"
    started = owner.get("started")
    now = _process_start(pid) if isinstance(started, str) else None
    if now is not None and now != started:
        return f"{_who(owner)} has ended (its pid {pid} now belongs to another process)"
    return None


def _stale(owner: dict[str, Any]) -> bool:
    """Whether the lock's process has ended (:func:`_why_stale`)."""
    return _why_stale(owner) is not None


def lock_owner(out: Path) -> dict[str, Any] | None:
    """The live owner (``pid``, ``host``, ``since``, ``started``) of ``out``'s lock, or
    ``None`` when it has none or a stale one."""
    path = out / LOCK_FILE
    if not path.is_file():
        return None
    owner = _read_lock(path)
    return None if _stale(owner) else owner


@contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Hold ``out/run.lock`` (``out`` created if absent) for the block.

    Raises
    ------
    ConfigError
        If ``out`` is a file, cannot be created or written, another live process
        holds it (naming its pid and host), or its ``run.lock`` is not a regular file.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the run")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the run into --out {out} ({exc.strerror or exc}); choose a "
            "folder you can write to"
        ) from exc
    path = out / LOCK_FILE
    me: dict[str, Any] = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    started = _process_start(os.getpid())
    if started is not None:
        me["started"] = started
    _acquire(path, me)
    try:
        yield
    finally:
        if _read_lock(path).get("pid") == me["pid"]:
            path.unlink(missing_ok=True)


def _acquire(path: Path, me: dict[str, Any]) -> None:
    for _ in range(3):
        if _link_new(path, me):
            return
        _check_lock_file(path)
        owner = _read_lock(path)
        why = _why_stale(owner)
        if why is None:
            raise ConfigError(_held_message(path, owner))
        logger.warning("%s: taking over a stale lock: %s", path.parent, why)
        path.unlink(missing_ok=True)
    raise ConfigError(f"{path} keeps being taken by another process; try again")


def _check_lock_file(path: Path) -> None:
    """Refuse a ``run.lock`` that is not a regular file (a folder, a FIFO, a link): no
    fedstruct process wrote it, so it is neither read (a FIFO would block) nor deleted.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else describe_mode(mode)
        raise ConfigError(
            f"{path} is {kind}, not a lock fedstruct wrote, so it is left as it is; if no "
            f"fedstruct run is writing {path.parent}, remove it and run again"
        )


def _link_new(path: Path, me: dict[str, Any]) -> bool:
    """Create ``path`` holding ``me`` in one step; ``False`` if it exists."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".run.lock-")
    except OSError as exc:
        raise ConfigError(
            f"cannot write the run into --out {path.parent} ({exc.strerror or exc}); choose "
            "a folder you can write to"
        ) from exc
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(me) + "\n")
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        Path(tmp).unlink(missing_ok=True)


def _who(owner: dict[str, Any]) -> str:
    return f"process {owner.get('pid')} on {owner.get('host')}"


def _held_message(path: Path, owner: dict[str, Any]) -> str:
    since = f" since {owner['since']}" if owner.get("since") else ""
    if owner.get("host") == socket.gethostname():
        return (
            f"--out {path.parent} is in use by fedstruct {_who(owner)}{since}; wait for it "
            "to end, or choose another folder"
        )
    return (
        f"--out {path.parent} is locked by fedstruct {_who(owner)}{since}; if that process "
        f"has ended, delete {path} and run again"
    )
