"""The ``flower-sim`` backend: Flower's simulation engine (Ray) on this machine.

The server function runs inside a Flower ``ServerApp`` (a thread of this process)
against a :class:`FlowerGrid`; every client runs in a Flower ``ClientApp`` on Ray
actors, one virtual SuperNode per client (``partition-id`` = its position).

An interrupt (Ctrl-C, i.e. SIGINT, or SIGTERM) sets a stop event before Flower
sees it: the ServerApp's thread stops at its next poll instead of waiting out the
reply timeout, the round in progress is dropped (the checkpoint keeps the last
complete round, so ``--resume`` gives the uninterrupted result), and Flower shuts
Ray down before the ``KeyboardInterrupt`` leaves :meth:`FlowerSimBackend.run`.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from flwr.app import Context
from flwr.serverapp import Grid as FlowerGridAPI
from flwr.serverapp import ServerApp

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError
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


@contextmanager
def _stop_on_interrupt(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGINT or SIGTERM; a second one raises ``KeyboardInterrupt`` here.

    Only the main thread can own signal handlers; elsewhere this does nothing (the
    caller's ``finally`` still sets ``stop``).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
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

    before = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


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
    """

    def __init__(
        self,
        num_cpus: int | None = None,
        cpus_per_client: float = 1.0,
        reply_timeout: float = 600.0,
        stop_grace: float = 30.0,
    ) -> None:
        self.num_cpus = num_cpus or os.cpu_count() or 1
        self.cpus_per_client = cpus_per_client
        self.reply_timeout = reply_timeout
        self.stop_grace = stop_grace

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

        data = list(clients)
        names = [c.name for c in data]  # type: ignore[union-attr]
        outcome: dict[str, Any] = {}
        server_app = ServerApp()
        stop = threading.Event()

        @server_app.main()
        def main(grid: FlowerGridAPI, context: Context) -> None:
            outcome["thread"] = threading.current_thread()
            try:
                deployment = FlowerDeploymentBackend(
                    grid, reply_timeout=self.reply_timeout, poll_interval=0.02, stop=stop
                )
                outcome["result"] = deployment.run(server_fn, method, names, participation, seed)
            except BaseException as exc:  # re-raised in the caller's thread below
                outcome["error"] = exc

        cache: dict[int, Client] = {}

        def factory(context: Context) -> Client:
            part = partition_of(context)
            if part not in cache:
                if not 0 <= part < len(data):
                    raise ConfigError(
                        f"partition {part} does not exist; clients are 0..{len(data) - 1}"
                    )
                cache[part] = method.make_client(data[part])  # type: ignore[arg-type]
            return cache[part]

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
        try:
            with quiet_flower(), _stop_on_interrupt(stop):
                run_simulation(
                    server_app,
                    make_client_app(factory),
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
