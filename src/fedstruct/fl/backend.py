"""Running a method on a backend: one entry point for every method.

A method exposes how to build its clients and its server algorithm (the
:class:`Federated` protocol); :func:`run_on_backend` wires them to a grid and runs
the federation. Backends: ``"local"`` (in-process, the default). The Flower
backends plug in here, so no method changes when a backend is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fedstruct.data.client import ClientData, check_federation
from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.fl.client import Client
from fedstruct.fl.federation import ServerAlgorithm, run_federation
from fedstruct.fl.grid import Grid, LocalGrid
from fedstruct.fl.participation import Participation

__all__ = ["BACKENDS", "Federated", "RunResult", "run_on_backend"]

BACKENDS = ("local",)


class Federated(Protocol):
    """What a method provides to run on any backend."""

    def make_client(self, data: ClientData) -> Client:
        """The method's client holding ``data``."""
        ...

    def make_server(self) -> ServerAlgorithm[Any]:
        """A fresh server algorithm."""
        ...


@dataclass(frozen=True)
class RunResult:
    """What a run leaves behind: the server's final state, the grid, the last round."""

    state: Any
    grid: Grid
    last_round: int


def run_on_backend(
    method: Federated,
    clients: Sequence[ClientData],
    *,
    backend: str = "local",
    participation: Participation | None = None,
    seed: int = 0,
    checkpoint: Path | None = None,
    resume: bool = False,
    fingerprint: str = "",
    progress: bool = False,
    stop_after: int | None = None,
    label: str = "federation",
) -> RunResult:
    """Run ``method`` over ``clients`` on ``backend``.

    Raises
    ------
    ConfigError
        For an unknown backend.
    DataError
        If the clients are empty or their names repeat.
    """
    if backend not in BACKENDS:
        raise ConfigError(unknown_choice_message("backend", backend, BACKENDS))
    check_federation(clients)
    grid = LocalGrid([method.make_client(c) for c in clients], participation, seed)
    state, last = run_federation(
        method.make_server(),
        grid,
        checkpoint=checkpoint,
        resume=resume,
        fingerprint=fingerprint,
        progress=progress,
        stop_after=stop_after,
        label=label,
    )
    return RunResult(state, grid, last)
