"""Running a server algorithm round by round, with checkpoints and a progress bar.

A server algorithm is plain Python against a :class:`Grid`, organised in rounds:
:meth:`ServerAlgorithm.run_round` takes the state after the previous round and
returns the next one. Several phases, loops over clients and early stopping all
live inside it. Because the state is explicit, it is saved after every round, and a
run resumed from its checkpoint continues to the identical result — provided the
algorithm draws its random numbers from ``(seed, round)`` (see :func:`round_rng`)
and its clients from :meth:`Client.rng`.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from fedstruct.errors import CheckpointError
from fedstruct.fl.checkpoint import read_header, read_tree, write_tree
from fedstruct.fl.grid import Grid
from fedstruct.fl.progress import show_progress
from fedstruct.fl.rounds import RoundReport, round_report

__all__ = [
    "CHECKPOINT_FILE",
    "LEGACY_CHECKPOINT_FILE",
    "ServerAlgorithm",
    "check_resumed",
    "load_checkpoint",
    "round_rng",
    "run_federation",
    "save_checkpoint",
]

S = TypeVar("S")
#: The resume state's file name in a run folder: safetensors + JSON
#: (:mod:`fedstruct.fl.checkpoint`), so opening it runs no code.
CHECKPOINT_FILE = "checkpoint.safetensors"
#: Where older fedstruct versions kept their resume state, as a pickle: never opened.
LEGACY_CHECKPOINT_FILE = "checkpoint.pkl"


def round_rng(seed: int, rnd: int, stream: int = 0) -> np.random.Generator:
    """The server's generator for round ``rnd``: depends on nothing but its arguments."""
    return np.random.default_rng([int(seed), int(rnd), int(stream), 0x5E4])


class ServerAlgorithm(ABC, Generic[S]):
    """The server side of a method, organised in rounds.

    Subclasses set :attr:`rounds` (the planned number, an upper bound when the
    algorithm stops early) and implement :meth:`init_state` and :meth:`run_round`.
    """

    #: Planned number of rounds (an upper bound if :meth:`is_done` stops early).
    rounds: int = 1

    @abstractmethod
    def init_state(self) -> S:
        """The state before round 1 (no messages are sent here)."""

    @abstractmethod
    def run_round(self, grid: Grid, state: S, rnd: int) -> S:
        """Run round ``rnd`` (from 1) and return the new state."""

    def is_done(self, state: S, rnd: int) -> bool:
        """Whether the run ends after round ``rnd`` (default: after :attr:`rounds`)."""
        return rnd >= self.rounds

    def describe(self, state: S) -> str:
        """A short text shown beside the progress bar (e.g. the latest metric)."""
        return ""


def save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (a crash mid-write leaves the previous file intact).

    ``payload`` holds ``fingerprint``, ``round`` and ``done`` (readable alone, before
    any state is decoded: :func:`read_checkpoint_header`), ``server_state`` and
    ``grid_state`` (trees of :mod:`fedstruct.fl.checkpoint`'s values).

    Raises
    ------
    CheckpointError
        If the state holds a type that is not registered for checkpoints.
    """
    header = {
        "fingerprint": payload["fingerprint"],
        "round": int(payload["round"]),
        "done": bool(payload["done"]),
    }
    state = {"server_state": payload["server_state"], "grid_state": payload["grid_state"]}
    write_tree(path, state, header)


def read_checkpoint_header(path: Path) -> dict[str, Any]:
    """The ``fingerprint``, ``round`` and ``done`` of the checkpoint at ``path``.

    Raises
    ------
    CheckpointError
        If it is missing (naming an old pickle checkpoint beside it, which is never
        opened), not a fedstruct checkpoint, or of a newer format.
    """
    _refuse_legacy(path)
    header = read_header(path)
    rnd, done = header.get("round"), header.get("done")
    if (
        isinstance(rnd, bool)
        or not isinstance(rnd, int)
        or not isinstance(done, bool)
        or not isinstance(header.get("fingerprint"), str)
    ):
        raise CheckpointError(
            f"checkpoint {path} has no round (a whole number), done (true or false) or "
            "fingerprint; start a new run"
        )
    return header


def load_checkpoint(path: Path, fingerprint: str | None = None) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    fingerprint
        When given, the checkpoint's must equal it; checked before its state is decoded.

    Raises
    ------
    CheckpointError
        If the file is missing, not a fedstruct checkpoint, names a type that is not
        registered, or belongs to a run with another configuration.
    """
    header = read_checkpoint_header(path)
    if fingerprint is not None and header["fingerprint"] != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} belongs to a run with another configuration; "
            "resume with the same configuration or start a new run"
        )
    _, state = read_tree(path)
    if not isinstance(state, dict) or not {"server_state", "grid_state"} <= set(state):
        raise CheckpointError(f"checkpoint {path} holds no server and grid state; start a new run")
    return {**header, **state}


def check_resumed(
    server: ServerAlgorithm[S], saved: Mapping[str, Any], fresh: S, path: Path
) -> None:
    """Check a checkpoint's round, ``done`` and state against the run resuming it (the
    file's checksums catch an edit; these checks catch a file whose checksums were
    recomputed after the edit, before anything runs on it).

    Parameters
    ----------
    server
        The run's server algorithm (its planned rounds, when it is done).
    saved
        :func:`load_checkpoint`'s result.
    fresh
        ``server.init_state()``: the saved state must have its types and its arrays'
        dtypes and shapes.

    Raises
    ------
    CheckpointError
        For a round outside ``1..server.rounds``, a ``done`` the state contradicts
        (only the last planned round or a recorded early stop ends a run), a state
        entry of another type, dtype or shape than the run's, or a history that is not
        one record of plain values per round.
    """
    rnd, state = saved["round"], saved["server_state"]
    start_again = "the file was changed; start the run again without --resume"
    if not 1 <= rnd <= server.rounds:
        raise CheckpointError(
            f"checkpoint {path} says round {rnd}, outside this run's rounds 1..{server.rounds}; "
            f"{start_again}"
        )
    problem = _unlike(state, fresh, "its server_state")
    problem = problem or _history_problem(getattr(state, "history", None), rnd)
    if problem:
        raise CheckpointError(f"checkpoint {path}: {problem}; {start_again}")
    done = server.is_done(state, rnd)
    if saved["done"] != done:
        why = "the run ended" if done else "the run had rounds left"
        raise CheckpointError(
            f"checkpoint {path} says done = {str(saved['done']).lower()} after round {rnd}, "
            f"but its state says {why}; {start_again}"
        )


def _kind(value: Any) -> str:
    """What ``value`` is, as far as a saved state's shape goes (numbers are one kind,
    lists and tuples one, mappings one)."""
    if isinstance(value, bool | np.bool_):
        return "a boolean"
    if isinstance(value, int | float | np.integer | np.floating):
        return "a number"
    if isinstance(value, np.ndarray):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


def _unlike(saved: Any, fresh: Any, where: str) -> str:
    """How ``saved`` differs in kind from ``fresh`` (a new run's value there): another
    kind, an array of another dtype or shape, or the same in one of its entries,
    fields or items; ``""`` if it does not. ``None`` on either side is not compared
    (a value not set yet)."""
    if saved is None or fresh is None:
        return ""
    kind = _kind(fresh)
    if _kind(saved) != kind:
        return f"{where} is {_kind(saved)}, not {kind}"
    if isinstance(fresh, np.ndarray):
        if saved.dtype != fresh.dtype or saved.shape != fresh.shape:
            return (
                f"{where} is an array of {saved.dtype} {list(saved.shape)}, not of "
                f"{fresh.dtype} {list(fresh.shape)}"
            )
        return ""
    if isinstance(fresh, Mapping):
        pairs = [(saved[k], fresh[k], f"{where}[{k!r}]") for k in fresh if k in saved]
    elif isinstance(fresh, list | tuple):
        items = zip(saved, fresh, strict=False)  # a list may have grown since
        pairs = [(s, f, f"{where}[{k}]") for k, (s, f) in enumerate(items)]
    elif dataclasses.is_dataclass(fresh) and not isinstance(fresh, type):
        fields = [f.name for f in dataclasses.fields(fresh)]
        pairs = [(getattr(saved, n, None), getattr(fresh, n), f"{where}.{n}") for n in fields]
    else:
        return ""
    return next((p for p in (_unlike(*pair) for pair in pairs) if p), "")


#: The values a per-round record holds (numpy's numbers where a method kept them so).
_PLAIN = (int, float, str, bool, type(None), np.integer, np.floating, np.bool_)


def _history_problem(history: Any, rnd: int) -> str:
    """What is wrong with a saved state's ``history`` after round ``rnd``: it must hold
    one record per round (an object of plain values, its ``round`` the record's);
    ``""`` if nothing is (or the state keeps no history)."""
    if history is None:
        return ""
    if not isinstance(history, list) or len(history) != rnd:
        found = len(history) if isinstance(history, list) else _kind(history)
        return f"its history holds {found} records after round {rnd}, not one per round"
    for k, record in enumerate(history, start=1):
        if not isinstance(record, dict) or not all(
            isinstance(key, str) and isinstance(value, _PLAIN) for key, value in record.items()
        ):
            return f"its history's record {k} is not an object of numbers and names"
        if record.get("round", k) != k or isinstance(record.get("round"), bool):
            return f"its history's record {k} says round {record.get('round')!r}"
    return ""


def _refuse_legacy(path: Path) -> None:
    legacy = path.with_name(LEGACY_CHECKPOINT_FILE)
    if not path.is_file() and legacy.is_file():
        raise CheckpointError(
            f"{legacy} is a pickle checkpoint of an older fedstruct, which is never opened "
            "(a pickle can run code); start the run again without --resume"
        )


def run_federation(
    server: ServerAlgorithm[S],
    grid: Grid,
    *,
    checkpoint: Path | None = None,
    resume: bool = False,
    fingerprint: str = "",
    progress: bool = False,
    stop_after: int | None = None,
    label: str = "federation",
    on_round: Callable[[RoundReport], None] | None = None,
) -> tuple[S, int]:
    """Run ``server`` on ``grid`` until it is done.

    Parameters
    ----------
    server
        The server algorithm.
    grid
        The backend.
    checkpoint
        File to save the state to after every round (``None``: no checkpoints).
    resume
        Continue from ``checkpoint`` instead of starting anew.
    fingerprint
        Identifies the run's configuration; a checkpoint with another fingerprint
        is refused on resume.
    progress
        Show the rounds' progress on stderr: a rich bar on a terminal, one plain
        line per round otherwise (:func:`fedstruct.fl.progress.show_progress`).
    stop_after
        Stop after this round even if the algorithm is not done (the checkpoint
        then holds an unfinished run, as after an interruption).
    label
        Text in front of the progress bar.
    on_round
        Called after each round, once its checkpoint is saved, with what an observer
        may see of it (:class:`~fedstruct.fl.rounds.RoundReport`: a run's progress
        file, its tracking); it changes nothing the run computes.

    Returns
    -------
    tuple
        The final state and the number of the last round run.

    Raises
    ------
    CheckpointError
        On resume without a valid checkpoint of the same configuration.
    """
    state: S = server.init_state()
    start = 1
    if resume:
        if checkpoint is None:
            raise CheckpointError("resume needs a checkpoint path")
        saved = load_checkpoint(checkpoint, fingerprint)
        if type(saved["server_state"]) is not type(state):
            raise CheckpointError(
                f"checkpoint {checkpoint} holds a {type(saved['server_state']).__name__}, not "
                f"this method's {type(state).__name__}; start a new run"
            )
        check_resumed(server, saved, state, checkpoint)
        state = saved["server_state"]
        try:
            grid.set_state(saved["grid_state"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(
                f"checkpoint {checkpoint} does not fit this run's grid and clients ({exc!r}); "
                "start a new run"
            ) from None
        start = int(saved["round"]) + 1
        if saved.get("done"):
            return state, int(saved["round"])

    rnd = start - 1
    with show_progress(
        label, server.rounds, enabled=progress, completed=start - 1, unit="round"
    ) as bar:
        for rnd in range(start, server.rounds + 1):
            began = time.perf_counter()
            grid.begin_round(rnd)
            state = server.run_round(grid, state, rnd)
            done = server.is_done(state, rnd)
            if checkpoint is not None:
                save_checkpoint(
                    checkpoint,
                    {
                        "fingerprint": fingerprint,
                        "round": rnd,
                        "done": done,
                        "server_state": state,
                        "grid_state": grid.get_state(),
                    },
                )
            bar.update(rnd, server.describe(state))
            if on_round is not None:
                seconds = time.perf_counter() - began
                on_round(
                    round_report(grid, state, rnd, rounds=server.rounds, done=done, seconds=seconds)
                )
            if done or (stop_after is not None and rnd >= stop_after):
                break
    return state, rnd
