"""What a server algorithm talks to: who is there, and send-and-receive.

A server algorithm sees only a :class:`Grid`:

- :meth:`Grid.node_ids` — the nodes asked this round (after sampling);
- :meth:`Grid.send_and_receive` — one message per node in, the answers that
  arrived on time out (a missing answer is a dropout, a straggler past the
  deadline, or a node that reports late);
- :meth:`Grid.late_replies` — answers computed in earlier rounds that arrive now;
- :meth:`Grid.exchange_outside_rounds` — one message per connected node
  (:meth:`Grid.connected_ids`) outside the participation model, for what it does not
  simulate: a deployment's handshake, each site scoring the final model.

Node ids are the clients' positions ``0..K-1`` in the federation, on every backend,
so server code that iterates ``sorted(replies)`` sums in the same order everywhere.
The base class applies the :class:`Participation` model, stamps the round into each
message's config, and counts bytes; a backend only implements :meth:`Grid._exchange`
(and, if nodes can vanish, :meth:`Grid._connected`).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fedstruct.errors import ProtocolError
from fedstruct.fl.client import Client
from fedstruct.fl.message import Message
from fedstruct.fl.participation import Participation, RoundPlan
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.fl.traffic import Traffic

__all__ = ["Grid", "LateReply", "LocalGrid"]


@dataclass(frozen=True)
class LateReply:
    """An answer computed in round ``sent_round`` and delivered ``staleness`` rounds later."""

    node: int
    message: Message
    sent_round: int
    staleness: int


class Grid(ABC):
    """Base of every backend: participation, round stamping and byte accounting.

    Parameters
    ----------
    names
        Client names by node id (node ``i`` is ``names[i]``).
    participation
        Who takes part in each round; default: everyone, always on time.
    seed
        The run's seed (participation draws derive from it and the round).
    """

    def __init__(
        self, names: Sequence[str], participation: Participation | None = None, seed: int = 0
    ) -> None:
        self._names = tuple(names)
        self._ids = {name: i for i, name in enumerate(self._names)}
        self.participation = participation or Participation()
        self.seed = int(seed)
        self.traffic = Traffic()
        self._round = 0
        self._plan: RoundPlan | None = None
        self._pending: list[tuple[int, Message, int]] = []
        self._late: list[LateReply] = []
        self.lost_answers = 0
        #: Answers received in rounds (on time or to be delivered late), over the run.
        self.answers = 0
        #: Secure sums within rounds that were released, and that were withheld (fewer
        #: than ``min_clients`` left: :func:`fedstruct.fl.summation.send_and_sum`).
        self.sums_released = 0
        self.sums_withheld = 0
        #: How summable replies are summed (:func:`fedstruct.fl.summation.send_and_sum`):
        #: ``None`` in the clear, a :class:`~fedstruct.fl.secagg.SecAggConfig` securely;
        #: set by the run (:func:`~fedstruct.fl.backend.run_on_backend`).
        self.secure_aggregation: SecAggConfig | None = None

    # ------------------------------------------------------------------ rounds
    @property
    def round(self) -> int:
        """The current round (0 before the first)."""
        return self._round

    def begin_round(self, rnd: int) -> None:
        """Start round ``rnd``: draw participation, release late answers due now."""
        self._round = int(rnd)
        connected = [self._names[i] for i in self._connected()]
        self._plan = self.participation.plan(connected, self._round, self.seed)
        due, keep = [], []
        for node, msg, sent in self._pending:
            (due if self._names[node] in self._plan.reports else keep).append((node, msg, sent))
        self._pending = keep
        self._late = []
        for node, msg, sent in due:
            self.traffic.add(self._round, self._names[node], "up", msg.nbytes())
            self._late.append(LateReply(node, msg, sent, self._round - sent))

    def _current_plan(self) -> RoundPlan:
        if self._plan is None:
            raise ProtocolError("no round has begun; call grid.begin_round(r) first")
        return self._plan

    # ------------------------------------------------------------------ nodes
    @property
    def n_nodes(self) -> int:
        """Number of clients in the federation (connected or not)."""
        return len(self._names)

    def node_name(self, node: int) -> str:
        """The client name of node ``node``."""
        return self._names[node]

    def node_ids(self) -> list[int]:
        """Nodes asked this round: available (joined, not left, connected) and sampled."""
        return sorted(self._ids[n] for n in self._current_plan().sampled)

    def available_ids(self) -> list[int]:
        """All nodes available this round, sampled or not (e.g. for evaluation)."""
        return sorted(self._ids[n] for n in self._current_plan().available)

    # --------------------------------------------------------------- exchange
    def send_and_receive(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        """Send one message per node; return the answers that arrive this round.

        The round is written into each message's ``config["round"]``. Nodes that
        drop out, miss the deadline or do not report this round give no answer here;
        the answers of late reporters come later through :meth:`late_replies`.

        Raises
        ------
        ProtocolError
            If a node id is not available this round.
        """
        plan = self._current_plan()
        available = set(plan.available)
        stamped: dict[int, Message] = {}
        for node, msg in sorted(messages.items()):
            if not 0 <= node < len(self._names) or self._names[node] not in available:
                raise ProtocolError(
                    f"node {node} is not available in round {self._round}; "
                    "send only to grid.node_ids() or grid.available_ids()"
                )
            stamped[node] = Message(
                msg.kind, msg.arrays, {**msg.config, "round": self._round}, msg.metrics
            )
            self.traffic.add(self._round, self._names[node], "down", stamped[node].nbytes())
        answering = {n: m for n, m in stamped.items() if plan.answers(self._names[n])}
        replies = self._exchange(answering)
        self.lost_answers += len(stamped) - len(replies)
        self.answers += len(replies)
        on_time: dict[int, Message] = {}
        for node, reply in sorted(replies.items()):
            if self._names[node] in plan.reports:
                self.traffic.add(self._round, self._names[node], "up", reply.nbytes())
                on_time[node] = reply
            else:
                self._pending.append((node, reply, self._round))
        return on_time

    def late_replies(self) -> list[LateReply]:
        """Answers from earlier rounds delivered at the start of this round."""
        return list(self._late)

    def connected_ids(self) -> list[int]:
        """The nodes reachable now, whatever the participation model draws."""
        return self._connected()

    def exchange_outside_rounds(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        """Send one message per node outside the participation model; return the
        answers of the nodes that are there (none reports late).

        For exchanges the participation model does not simulate: a deployment's
        schema handshake before round 1, or every site scoring the final model on
        the rows it kept out. The current round is stamped and the bytes counted.
        """
        stamped = {
            node: Message(msg.kind, msg.arrays, {**msg.config, "round": self._round}, msg.metrics)
            for node, msg in sorted(messages.items())
        }
        for node, msg in stamped.items():
            self.traffic.add(self._round, self._names[node], "down", msg.nbytes())
        replies = self._exchange(stamped)
        for node, reply in sorted(replies.items()):
            self.traffic.add(self._round, self._names[node], "up", reply.nbytes())
        return replies

    @abstractmethod
    def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        """Deliver the messages; return the answers of the nodes that answered."""

    def _connected(self) -> list[int]:
        """Node ids currently reachable (all of them for in-process grids)."""
        return list(range(len(self._names)))

    # ------------------------------------------------------------ checkpoints
    def get_state(self) -> dict[str, Any]:
        """What a checkpoint must hold to continue this grid identically."""
        return {
            "round": self._round,
            "traffic": dict(self.traffic.records),
            "pending": list(self._pending),
            "lost_answers": self.lost_answers,
            "answers": self.answers,
            "sums_released": self.sums_released,
            "sums_withheld": self.sums_withheld,
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`get_state` (the next :meth:`begin_round` redraws participation)."""
        self._round = int(state["round"])
        self.traffic = Traffic(dict(state["traffic"]))
        self._pending = list(state["pending"])
        self.lost_answers = int(state["lost_answers"])
        self.answers = int(state.get("answers", 0))
        self.sums_released = int(state.get("sums_released", 0))
        self.sums_withheld = int(state.get("sums_withheld", 0))


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads (no-op if torch is not loaded).

    In-process clients train one after the other on small models, where one thread
    is as fast as two on an idle machine and many times faster on a busy one (the
    thread pool spin-waits: 0.15 ms vs 7-21 ms per step measured on 2 cores).
    """
    torch = sys.modules.get("torch")
    if n is None or torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LocalGrid(Grid):
    """In-process grid: clients are objects in this process; deterministic.

    Parameters
    ----------
    clients
        The federation's clients; node ``i`` is ``clients[i]``.
    participation
        Who takes part in each round.
    seed
        The run's seed.
    client_threads
        Torch threads while a client computes (``None``: leave torch's setting).
    """

    def __init__(
        self,
        clients: Sequence[Client],
        participation: Participation | None = None,
        seed: int = 0,
        client_threads: int | None = 1,
    ) -> None:
        names = [c.name for c in clients]
        if len(set(names)) != len(names):
            raise ProtocolError(f"client names must be unique, got {names}")
        super().__init__(names, participation, seed)
        self.clients = list(clients)
        self.client_threads = client_threads

    def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        with torch_threads(self.client_threads):
            return {node: self.clients[node].handle(msg) for node, msg in sorted(messages.items())}

    def get_state(self) -> dict[str, Any]:
        """Grid state plus every client's local state."""
        return {**super().get_state(), "clients": [c.get_state() for c in self.clients]}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore grid and client state."""
        super().set_state(state)
        for client, client_state in zip(self.clients, state["clients"], strict=True):
            client.set_state(client_state)
