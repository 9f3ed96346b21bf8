"""The ``flower-sim`` backend: Flower's simulation engine (Ray) on this machine.

The server function runs inside a Flower ``ServerApp`` (a thread of this process)
against a :class:`FlowerGrid`; every client runs in a Flower ``ClientApp`` on Ray
actors, one virtual SuperNode per client (``partition-id`` = its position).

An interrupt (Ctrl-C, i.e. SIGINT, or SIGTERM) sets a stop event before Flower
sees it: the ServerApp's thread stops at its next poll instead of waiting out the
reply timeout, the round in progress is dropped (the checkpoint keeps the last
complete round, so ``--resume`` gives the uninterrupted result), and Flower shuts
Ray down before the ``KeyboardInterrupt`` leaves :meth:`FlowerSimBackend.run`: the
run is recorded as stopped, as an interrupted local run is. SIGTERM takes that path
too: Ray's start replaces this process's SIGTERM handler with one that exits at once
(and its C++ core prints a stack dump), so the backend starts Ray itself, then takes
the signal back (:func:`_ray_environment`, :func:`_stop_on_interrupt`).

Before round 1 the backend waits until Ray has started a worker process that runs a
task (:func:`_check_workers_start`), as every client's actor needs one: a run whose
workers die at start (seen under a memory limit) fails in one line after
``start_timeout`` seconds, where it used to wait for ever. For that wait to be
possible at all, Ray's raylet must not hold the first connection (and with it this
process's interpreter) until its prestarted workers register, which it would do for
ever if they die (:func:`_ray_environment`).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from flwr.app import Context
from flwr.serverapp import Grid as FlowerGridAPI
from flwr.serverapp import ServerApp

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.fl.backend import Backend, Federated
from fedstruct.fl.client import Client
from fedstruct.fl.flower.client_app import make_client_app, partition_of
from fedstruct.fl.flower.deployment import FlowerDeploymentBackend
from fedstruct.fl.grid import Grid
from fedstruct.fl.participation import Participation

__all__ = ["FlowerSimBackend", "quiet_flower"]

T = TypeVar("T")


@contextmanager
def quiet_flower(level: int = logging.ERROR) -> Iterator[None]:
    """Keep Flower's and Ray's INFO chatter out of the run's output."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    os.environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    logger = logging.getLogger("flwr")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _ray_environment() -> None:
    """Settings Ray reads from the environment when it starts (a user's own win):

    - ``RAY_prestart_worker_first_driver=0``: the raylet answers this process's first
      connection at once, instead of when the workers it prestarts have registered
      (which never happens if they die at start; ``ray.init`` then holds the
      interpreter, so nothing in this process could report it).
    - ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER=1``: Ray's C++ handler of fatal signals,
      which also takes SIGTERM and prints a stack dump for it, is not installed.
    """
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")


@contextmanager
def _stop_on_interrupt(stop: threading.Event) -> Iterator[Callable[[], None]]:
    """Set ``stop`` on SIGINT or SIGTERM; a second one raises ``KeyboardInterrupt`` here.
    Yields a function that installs the handlers again (after Ray's start replaced the
    one of SIGTERM).

    Only the main thread can own signal handlers; elsewhere this does nothing (the
    caller's ``finally`` still sets ``stop``).
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set():  # a second interrupt: leave now, whatever Ray still does
            raise KeyboardInterrupt(signal.Signals(signum).name)
        # The server thread raises KeyboardInterrupt at its next poll and ends; Flower
        # then stops its workers, each after the ClientApp call it waits on, and only
        # then shuts Ray down. Raising here instead would shut Ray down under a worker
        # blocked in ray.get: that call never returns, and the process hangs at exit
        # joining it (or Ray's core worker ends the process before run.json is written).
        stop.set()

    def install() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, interrupt)

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    install()
    try:
        yield install
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _start_ray(backend_config: dict[str, Any]) -> bool:
    """Start Ray as Flower's simulation would (its own ``RayBackend``, which calls
    ``ray.init``; :func:`~fedstruct.fl.flower.adapter.start_ray_backend`), unless Ray is
    running; whether this call started it.

    Raises
    ------
    DeploymentError
        One line, if Ray does not start.
    """
    import ray

    from fedstruct.fl.flower.adapter import start_ray_backend

    if ray.is_initialized():
        return False
    try:
        start_ray_backend(backend_config)
    except Exception as exc:  # Ray's own errors (RuntimeError, ConnectionError...)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DeploymentError(f"Ray did not start on this machine: {reason}") from None
    return True


def _check_workers_start(cpus: float, timeout: float, stop: threading.Event) -> None:
    """Wait until Ray runs a task in a worker process of its own (every client's actor
    needs one), at most ``timeout`` seconds; Ray gives a starting worker 60 s to
    register before it declares it dead and starts another.

    Raises
    ------
    DeploymentError
        One line, if the task's worker died, or none ran it within ``timeout``
        seconds (workers that die at start, e.g. for want of memory).
    KeyboardInterrupt
        If ``stop`` is set meanwhile.
    """
    import ray

    def alive() -> bool:
        return True

    task = ray.remote(num_cpus=cpus, num_gpus=0, max_retries=0)(alive).remote()
    deadline = time.monotonic() + timeout
    while not ray.wait([task], timeout=0.5)[0]:
        if stop.is_set() or time.monotonic() > deadline:
            ray.cancel(task, force=True)
            if stop.is_set():
                raise KeyboardInterrupt("the run was interrupted before round 1")
            raise DeploymentError(
                f"Ray started no worker process that runs within {timeout:.0f} s: its "
                f"workers die at start (too little memory?) or the machine is overloaded; "
                f"Ray's log: {_ray_logs()}"
            )
    try:
        ray.get(task)
    except ray.exceptions.RayError as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DeploymentError(
            f"Ray's worker process died at start ({reason}); Ray's log: {_ray_logs()}"
        ) from None


def _ray_logs() -> str:
    """Where this process's Ray writes its logs (``raylet.out`` names dead workers)."""
    try:
        import ray

        node = ray._private.worker._global_node
        return str(Path(node.get_logs_dir_path()) / "raylet.out")
    except Exception:  # a private API: if it moved, say where Ray's logs usually are
        return "/tmp/ray/session_latest/logs/raylet.out"


#: The federation (method, every client's data) a Ray worker process last read from the
#: object store, under its reference's id (:func:`_factory`).
_HELD: dict[str, tuple[Federated, list[ClientData]]] = {}


def _held(ref: Any) -> tuple[Federated, list[ClientData]]:
    """The method and clients behind ``ref``, read from Ray's object store once per
    worker process (and run)."""
    key = ref.hex()
    if key not in _HELD:
        import ray

        _HELD.clear()  # a worker serves one run at a time
        _HELD[key] = ray.get(ref)
    return _HELD[key]


def _factory(method: Federated, data: list[ClientData]) -> Callable[[Context], Client]:
    """The ClientApp's factory, holding the federation as one object-store reference.

    Flower's Ray backend pickles the ClientApp, and so its factory with what it holds,
    with every message it sends to a worker: a factory holding the clients' data cost
    every message time in the number of clients (0.065 s to read 500 clients' data back),
    and a round the square of it. The data go to the object store once; each worker
    process reads them once (:func:`_held`), and a message carries the reference.
    """
    import ray

    ref = ray.put((method, data))
    count = len(data)

    def factory(context: Context) -> Client:
        part = partition_of(context)
        if not 0 <= part < count:
            raise ConfigError(f"partition {part} does not exist; clients are 0..{count - 1}")
        model, clients = _held(ref)
        return model.make_client(clients[part])  # type: ignore[attr-defined,no-any-return]

    return factory


class FlowerSimBackend(Backend):
    """Run the federation on Flower's simulation engine.

    Parameters
    ----------
    num_cpus
        CPUs Ray may use (default: all of this machine's).
    cpus_per_client
        CPUs reserved per ClientApp; with 2 CPUs and 1 per client, two clients
        compute at the same time.
    reply_timeout
        Seconds the server waits for the answers of one exchange.
    stop_grace
        Seconds to wait, after an interrupt, for the ServerApp's thread to end.
    start_timeout
        Seconds Ray may take, before round 1, to start a worker process that runs
        (:func:`_check_workers_start`); a run whose workers die at start fails then.
    messages_per_worker
        Messages of an exchange waiting at the simulated SuperLink per ClientApp worker
        (``num_cpus / cpus_per_client`` workers): enough to keep the workers busy, few
        enough that Flower's search for each node's next message stays cheap (the cost
        of a run with many clients, :class:`FlowerGrid`).
    """

    def __init__(
        self,
        num_cpus: int | None = None,
        cpus_per_client: float = 1.0,
        reply_timeout: float = 600.0,
        stop_grace: float = 30.0,
        start_timeout: float = 300.0,
        messages_per_worker: int = 4,
    ) -> None:
        self.num_cpus = num_cpus or os.cpu_count() or 1
        self.cpus_per_client = cpus_per_client
        self.reply_timeout = reply_timeout
        self.stop_grace = stop_grace
        self.start_timeout = start_timeout
        self.messages_per_worker = messages_per_worker

    @property
    def max_in_flight(self) -> int:
        """Messages of an exchange at the simulated SuperLink at once."""
        workers = max(1, int(self.num_cpus // self.cpus_per_client))
        return max(1, self.messages_per_worker * workers)

    def run(
        self,
        server_fn: Callable[[Grid], T],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> T:
        """Run ``server_fn`` in a ServerApp against one virtual SuperNode per client."""
        from flwr.simulation import run_simulation

        data = [c for c in clients if isinstance(c, ClientData)]
        if len(data) != len(clients):  # names only: a deployment's run
            raise ConfigError("flower-sim runs the clients here: give their data, not names")
        names = [c.name for c in data]
        outcome: dict[str, Any] = {}
        server_app = ServerApp()
        stop = threading.Event()

        @server_app.main()
        def main(grid: FlowerGridAPI, context: Context) -> None:
            outcome["thread"] = threading.current_thread()
            try:
                deployment = FlowerDeploymentBackend(
                    grid,
                    reply_timeout=self.reply_timeout,
                    poll_interval=0.02,
                    max_in_flight=self.max_in_flight,
                    stop=stop,
                )
                outcome["result"] = deployment.run(server_fn, method, names, participation, seed)
            except BaseException as exc:  # re-raised in the caller's thread below
                outcome["error"] = exc

        backend_config = {
            "client_resources": {"num_cpus": self.cpus_per_client, "num_gpus": 0.0},
            "init_args": {
                "num_cpus": self.num_cpus,
                "num_gpus": 0,
                "include_dashboard": False,
                "logging_level": logging.ERROR,
                "log_to_driver": False,
            },
        }
        _ray_environment()
        try:
            with quiet_flower(), _stop_on_interrupt(stop) as take_signals_back:
                started = _start_ray(backend_config)
                take_signals_back()  # ray.init made SIGTERM exit the process at once
                try:
                    _check_workers_start(self.cpus_per_client, self.start_timeout, stop)
                except BaseException:
                    if started:
                        import ray

                        ray.shutdown()
                    raise
                run_simulation(
                    server_app,
                    make_client_app(_factory(method, data)),
                    num_supernodes=len(data),
                    backend_config=backend_config,  # type: ignore[arg-type]
                )
        finally:
            stop.set()  # whatever ended the simulation, the server thread ends too
            thread = outcome.get("thread")
            if thread is not None and thread is not threading.current_thread():
                thread.join(self.stop_grace)
        if "error" in outcome:
            raise outcome["error"]
        if "result" not in outcome:
            raise ConfigError("the Flower simulation ended without running the server")
        return outcome["result"]
