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

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from fedstruct.errors import CheckpointError
from fedstruct.fl.checkpoint import read_header, read_tree, write_tree
from fedstruct.fl.grid import Grid
from fedstruct.fl.progress import show_progress

__all__ = [
    "CHECKPOINT_FILE",
    "LEGACY_CHECKPOINT_FILE",
    "ServerAlgorithm",
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
    if not isinstance(header.get("round"), int) or not isinstance(header.get("fingerprint"), str):
        raise CheckpointError(f"checkpoint {path} has no round or fingerprint; start a new run")
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
            if done or (stop_after is not None and rnd >= stop_after):
                break
    return state, rnd
