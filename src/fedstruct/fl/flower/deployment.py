"""The deployment backend: a server function on the grid of a real SuperLink.

A Flower ``ServerApp`` started by a SuperLink receives Flower's grid; wrapping it in
:class:`FlowerDeploymentBackend` lets any fedstruct method run there unchanged. The
server knows only the clients' names: every SuperNode holds its own data.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from flwr.serverapp import Grid as FlowerGridAPI

from fedstruct.data.client import ClientData
from fedstruct.fl.backend import Backend, Federated
from fedstruct.fl.flower.grid import FlowerGrid
from fedstruct.fl.grid import Grid
from fedstruct.fl.participation import Participation

__all__ = ["FlowerDeploymentBackend"]

T = TypeVar("T")


class FlowerDeploymentBackend(Backend):
    """Run on the SuperNodes connected to the SuperLink behind ``grid``.

    Parameters
    ----------
    grid
        The Flower grid given to the ``ServerApp``'s main.
    min_nodes
        Nodes to wait for before round 1 (default: every client); fewer lets a run
        start while other nodes join later (they take part from the next round).
    join_timeout, reply_timeout
        Seconds to wait for nodes to connect, and for the answers of one exchange.
    poll_interval
        Seconds between polls of the SuperLink for answers.
    max_in_flight
        At most this many messages of an exchange at the SuperLink at once (default:
        all; see :class:`FlowerGrid`).
    stop
        Set when the run is interrupted: the grid stops waiting and raises
        ``KeyboardInterrupt`` (see :class:`FlowerGrid`).
    """

    needs_client_data = False

    def __init__(
        self,
        grid: FlowerGridAPI,
        *,
        min_nodes: int | None = None,
        join_timeout: float = 120.0,
        reply_timeout: float = 600.0,
        poll_interval: float = 0.2,
        max_in_flight: int | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.grid = grid
        self.max_in_flight = max_in_flight
        self.stop = stop
        self.poll_interval = poll_interval
        self.min_nodes = min_nodes
        self.join_timeout = join_timeout
        self.reply_timeout = reply_timeout

    def run(
        self,
        server_fn: Callable[[Grid], T],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> T:
        """Run ``server_fn`` on a :class:`FlowerGrid` over the connected SuperNodes."""
        names = [c if isinstance(c, str) else c.name for c in clients]
        grid = FlowerGrid(
            self.grid,
            names,
            participation,
            seed,
            min_nodes=self.min_nodes,
            join_timeout=self.join_timeout,
            reply_timeout=self.reply_timeout,
            poll_interval=self.poll_interval,
            max_in_flight=self.max_in_flight,
            stop=self.stop,
        )
        return server_fn(grid)
