"""Running a method on a backend: one entry point for every method.

A method exposes how to build its clients and its server algorithm (the
:class:`Federated` protocol); :func:`run_on_backend` hands both to a
:class:`Backend`, which provides the grid the server algorithm runs against:

- ``"local"`` (:class:`LocalBackend`): in-process, the default;
- ``"flower-sim"``: Flower's simulation engine (Ray) on this machine;
- a :class:`Backend` object, e.g. the deployment backend a Flower ``ServerApp``
  builds around the grid of a real SuperLink.

Every registered backend provides a grid here. Submitting a run to a SuperLink
(``fedstruct run ... --backend flower``) is not a backend but a launcher
(:mod:`fedstruct.runs.launch`). No method changes when a backend is added.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fedstruct.errors import ConfigError, DataError, NoAnswerError, unknown_choice_message

if TYPE_CHECKING:  # the runtime imports are in the functions: a ClientApp process
    # imports this module (fedstruct.fl.flower registers its backends) and none of these
    from fedstruct.data.client import ClientData
    from fedstruct.fl.client import Client
    from fedstruct.fl.federation import ServerAlgorithm
    from fedstruct.fl.grid import Grid
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.rounds import RoundReport
    from fedstruct.fl.secagg import SecAggConfig

__all__ = [
    "Backend",
    "Federated",
    "LocalBackend",
    "RunResult",
    "backend_names",
    "get_backend",
    "register_backend",
    "register_elsewhere",
    "run_on_backend",
]

T = TypeVar("T")

#: Backend name -> a function making the backend; ``local`` here, ``flower-sim``
#: registered by :mod:`fedstruct.fl.flower` (without importing Flower until used).
_REGISTRY: dict[str, Callable[[], Backend]] = {}


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``get_backend(name)`` call ``factory()`` (a backend package registers its own)."""
    _REGISTRY[name] = factory


#: Names that are not backends but say where such a run goes instead (name -> where),
#: e.g. ``flower``, a deployment submitted to a SuperLink.
_ELSEWHERE: dict[str, str] = {}


def register_elsewhere(name: str, where: str) -> None:
    """Make ``get_backend(name)`` say ``backend {name!r} {where}`` instead of listing
    the backends: ``name`` is no backend, but a run that goes elsewhere."""
    _ELSEWHERE[name] = where


def backend_names() -> tuple[str, ...]:
    """The registered backend names, sorted."""
    return tuple(sorted(_REGISTRY))


class Federated(Protocol):
    """What a method provides to run on any backend."""

    def make_client(self, data: ClientData) -> Client:
        """The method's client holding ``data``."""
        ...

    def make_server(self) -> ServerAlgorithm[Any]:
        """A fresh server algorithm."""
        ...


class Backend(ABC):
    """Where a federation runs: it provides the grid and runs the server function on it."""

    #: Whether the clients' data must be in this process (``False`` for deployments,
    #: where every node holds its own data and the server knows only client names).
    needs_client_data: bool = True

    @abstractmethod
    def run(
        self,
        server_fn: Callable[[Grid], T],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> T:
        """Build the grid over ``clients`` and return ``server_fn(grid)``."""


class LocalBackend(Backend):
    """In-process: every client is an object in this process (:class:`LocalGrid`)."""

    def run(
        self,
        server_fn: Callable[[Grid], T],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> T:
        """Run ``server_fn`` on a :class:`LocalGrid` of ``method``'s clients, each
        holding :meth:`site_data` of its site."""
        from fedstruct.fl.grid import LocalGrid

        built = [method.make_client(self.site_data(c)) for c in clients]  # type: ignore[arg-type]
        return server_fn(LocalGrid(built, participation, seed))

    def site_data(self, data: ClientData) -> ClientData:
        """What the client of site ``data.name`` holds: its rows as they are (a
        bootstrap's replicate resamples them: :class:`~fedstruct.fl.bootstrap.ResampledSites`)."""
        return data


register_backend("local", LocalBackend)


def get_backend(backend: str | Backend) -> Backend:
    """The backend called ``backend`` (or ``backend`` itself if it is one).

    Raises
    ------
    ConfigError
        For an unknown name, or a name registered with :func:`register_elsewhere`
        (``"flower"``: a deployment is submitted to a SuperLink with ``fedstruct run ...
        --backend flower``, and its ``ServerApp`` builds the backend around the real grid).
    """
    if isinstance(backend, Backend):
        return backend
    if backend in _ELSEWHERE:
        raise ConfigError(f"backend {backend!r} {_ELSEWHERE[backend]}")
    if backend not in _REGISTRY:
        raise ConfigError(unknown_choice_message("backend", backend, _REGISTRY))
    return _REGISTRY[backend]()


@dataclass(frozen=True)
class RunResult:
    """What a run leaves behind: the server's final state, the grid, the last round."""

    state: Any
    grid: Grid
    last_round: int


def run_on_backend(
    method: Federated,
    clients: Sequence[ClientData] | Sequence[str],
    *,
    backend: str | Backend = "local",
    participation: Participation | None = None,
    seed: int = 0,
    secure_aggregation: SecAggConfig | None = None,
    checkpoint: Path | None = None,
    resume: bool = False,
    fingerprint: str = "",
    progress: bool = False,
    stop_after: int | None = None,
    label: str = "federation",
    on_round: Callable[[RoundReport], None] | None = None,
) -> RunResult:
    """Run ``method`` over ``clients`` on ``backend``.

    Parameters
    ----------
    clients
        The clients' data; for a backend whose nodes hold their own data
        (``needs_client_data = False``) their names suffice.
    secure_aggregation
        How the server sums summable replies (:func:`fedstruct.fl.summation.send_and_sum`):
        ``None`` in the clear, a :class:`~fedstruct.fl.secagg.SecAggConfig` securely,
        on whichever backend (it is set on the grid the backend provides).
    on_round
        Called after each round (:func:`~fedstruct.fl.federation.run_federation`).

    Raises
    ------
    ConfigError
        For an unknown backend.
    DataError
        If the clients are empty, their names repeat, or data is missing where the
        backend needs it.
    """
    from fedstruct.data.client import ClientData, check_federation
    from fedstruct.fl.federation import run_federation

    chosen = get_backend(backend)
    if chosen.needs_client_data:
        if any(not isinstance(c, ClientData) for c in clients):
            raise DataError("this backend runs the clients here: give ClientData, not names")
        check_federation(clients)  # type: ignore[arg-type]
    elif not clients:
        raise DataError("a federation needs at least one client")

    def server_fn(grid: Grid) -> RunResult:
        grid.secure_aggregation = secure_aggregation
        server = method.make_server()
        state, last = run_federation(
            server,
            grid,
            checkpoint=checkpoint,
            resume=resume,
            fingerprint=fingerprint,
            progress=progress,
            stop_after=stop_after,
            label=label,
            on_round=on_round,
        )
        cut_short = stop_after is not None and last >= stop_after
        if not (cut_short and not server.is_done(state, last)):
            if not grid.answers:
                raise _no_answer(grid, last)
            if grid.sums_withheld and not grid.sums_released:
                raise _nothing_released(grid, last)
        return RunResult(state, grid, last)

    return chosen.run(server_fn, method, clients, participation, seed)


def _no_answer(grid: Grid, last: int) -> NoAnswerError:
    """The error of a run in which no client answered in any of its ``last`` rounds."""
    p = grid.participation
    return NoAnswerError(
        f"no client answered in any of the {last} rounds, so nothing was learned "
        f"(dropout={p.dropout:g}, deadline={p.deadline}, {grid.lost_answers} answers lost): "
        "lower --set dropout, raise --set deadline, or check that the sites' nodes are running"
    )


def _nothing_released(grid: Grid, last: int) -> NoAnswerError:
    """The error of a secure run none of whose ``last`` rounds released a sum: each
    had fewer than ``min_clients`` clients left to sum (one client alone, dropouts), so
    every sum was withheld and nothing was learned from the clients."""
    config = grid.secure_aggregation
    least = config.min_clients if config is not None else 2
    p = grid.participation
    return NoAnswerError(
        f"secure aggregation released no sum in any of the {last} rounds, so nothing was "
        f"learned: each round had fewer than min_clients = {least} clients left to sum "
        f"({grid.n_nodes} in the federation, dropout={p.dropout:g}, {grid.sums_withheld} "
        "sums withheld); run with more clients, lower --set dropout, or check that the "
        "sites' nodes are running"
    )
