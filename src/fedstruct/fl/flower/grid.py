"""Our :class:`~fedstruct.fl.Grid` over a Flower grid (simulation or deployment).

Node ids stay the clients' positions ``0..K-1``: each Flower node is asked once
which partition it hosts (a ``fedstruct.hello`` message answered from its
``node_config["partition-id"]``, or with the name of the site whose file it holds),
and messages are routed through that map. The
participation model, round stamping and byte accounting are the base class's, so a
server algorithm sees exactly what it sees on the in-process grid.

A node that disappears (its SuperNode stopped, its process crashed, its message
lost) gives no answer: a dropout, never a crash. A client that rejects a message
with a fedstruct error (a bad partition, a privacy violation) stops the run with that
error, and the last checkpoint stays intact.

A grid given ``max_in_flight`` keeps at most that many messages of an exchange at the
SuperLink at once, pushing the next as answers arrive. The simulation needs it: Flower's
simulation runtime looks for each node's next message by scanning every stored message,
for every node, ten times a second (``vce_api.add_messages_to_queue`` and
``InMemoryLinkState.get_message_ins``), so with all ``K`` messages of an exchange stored
each sweep costs ``K^2`` checks under the state's lock, and a run's time grew much faster
than its clients (docs/benchmarks.md, "many clients on flower-sim"). A window of a few
messages per worker keeps the workers fed and a sweep linear in ``K``; the answers, and
so the results, are the same.

A grid given a ``stop`` event (set when the run is interrupted, e.g. by Ctrl-C on
``flower-sim``) raises ``KeyboardInterrupt`` at its next poll, and never returns the
answers of an exchange cut short: a round the interrupt cut short raises before the
federation saves it, so the checkpoint keeps the last complete round.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from flwr.app import Message as FlowerMessage
from flwr.serverapp import Grid as FlowerGridAPI

from fedstruct.errors import ConfigError, ProtocolError
from fedstruct.fl.flower.adapter import LOST_REPLY_CODES
from fedstruct.fl.flower.records import HELLO, from_records, raise_if_error, to_records
from fedstruct.fl.grid import Grid
from fedstruct.fl.message import Message
from fedstruct.fl.participation import Participation

__all__ = ["HELLO", "MESSAGE_TYPE", "FlowerGrid", "ask_every_node"]

#: The Flower message type of every fedstruct message (our kind travels in the config).
MESSAGE_TYPE = "query.fedstruct"
#: Seconds before the first look for an exchange's answers; each later wait is
#: :data:`_BACKOFF` times the one before, up to the grid's ``poll_interval``: a quick
#: answer is read at once, a slow one costs a few polls.
_FIRST_WAIT = 0.01
_BACKOFF = 1.5


class FlowerGrid(Grid):
    """A fedstruct grid whose nodes are Flower SuperNodes.

    Parameters
    ----------
    grid
        The Flower grid given to a ``ServerApp``'s main.
    names
        Client names by partition id (node ``k`` hosts partition ``k``).
    participation, seed
        As for every grid.
    min_nodes
        Wait for this many nodes before the first round (default: all).
    join_timeout
        Seconds to wait for them.
    reply_timeout
        Seconds to wait for the answers of one exchange; later answers are lost.
    poll_interval
        The longest wait between polls for answers (the first comes sooner).
    max_in_flight
        At most this many messages of an exchange at the SuperLink at once (module
        docstring); ``None``: all at once (a deployment, whose nodes compute in parallel).
    stop
        Set when the run is interrupted: the grid then raises ``KeyboardInterrupt``
        instead of waiting on (module docstring).
    """

    def __init__(
        self,
        grid: FlowerGridAPI,
        names: Sequence[str],
        participation: Participation | None = None,
        seed: int = 0,
        *,
        min_nodes: int | None = None,
        join_timeout: float = 120.0,
        reply_timeout: float = 600.0,
        poll_interval: float = 0.05,
        max_in_flight: int | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        super().__init__(names, participation, seed)
        if max_in_flight is not None and max_in_flight < 1:
            raise ConfigError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.max_in_flight = max_in_flight
        self._flower = grid
        self._stop = stop
        self._flower_id: dict[int, int] = {}  # partition -> Flower node id
        self.reply_timeout = reply_timeout
        self.poll_interval = poll_interval
        self._wait_for_nodes(len(names) if min_nodes is None else min_nodes, join_timeout)

    # ------------------------------------------------------------- discovery
    def _wait_for_nodes(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self._raise_if_stopped()
            self._discover()
            if len(self._flower_id) >= count:
                return
            if time.monotonic() > deadline:
                missing = [k for k in range(self.n_nodes) if k not in self._flower_id]
                raise ProtocolError(
                    f"only {len(self._flower_id)} of {count} nodes connected within "
                    f"{timeout:.0f} s; start the SuperNodes of partitions {missing} "
                    f"(sites {[self.node_name(k) for k in missing]})"
                )
            time.sleep(self.poll_interval)

    def _discover(self) -> None:
        """Forget nodes that left; ask new nodes which partition they host."""
        live = set(self._flower.get_node_ids())
        self._flower_id = {k: f for k, f in self._flower_id.items() if f in live}
        new = sorted(live - set(self._flower_id.values()))
        if not new:
            return
        hellos = {f: Message(HELLO) for f in new}
        for fid, reply in self._roundtrip(hellos, self.reply_timeout).items():
            part = self._partition(reply.config)
            if part in self._flower_id:
                raise ConfigError(
                    f"two SuperNodes host partition {part} ({self.node_name(part)!r}); "
                    "give every SuperNode its own partition (or site name)"
                )
            self._flower_id[part] = fid

    def _partition(self, hello: Mapping[str, object]) -> int:
        """The node id of a node's HELLO answer: its partition, or its site's position."""
        if "site" in hello:
            site = str(hello["site"])
            if site not in self._ids:
                raise ConfigError(
                    f"a SuperNode holds site {site!r}, which this run does not name; the "
                    f"run's sites are {list(self._names)}: fix the node's --name or the "
                    "run's --node-site"
                )
            return self._ids[site]
        part = int(hello["partition"])  # type: ignore[call-overload]
        if not 0 <= part < self.n_nodes:
            raise ConfigError(
                f"a SuperNode hosts partition {part}, but the federation has "
                f"{self.n_nodes} clients (partitions 0..{self.n_nodes - 1}); "
                "fix its --partition / node-config partition-id"
            )
        return part

    def _connected(self) -> list[int]:
        self._discover()
        return sorted(self._flower_id)

    def _raise_if_stopped(self) -> None:
        """Raise ``KeyboardInterrupt`` once the run was interrupted."""
        if self._stop is not None and self._stop.is_set():
            raise KeyboardInterrupt("the run was interrupted; the round in progress is dropped")

    # -------------------------------------------------------------- exchange
    def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        by_flower = {self._flower_id[n]: m for n, m in messages.items() if n in self._flower_id}
        replies = self._roundtrip(by_flower, self.reply_timeout)
        partition = {f: k for k, f in self._flower_id.items()}
        return {partition[f]: r for f, r in replies.items() if f in partition}

    def _roundtrip(self, messages: Mapping[int, Message], timeout: float) -> dict[int, Message]:
        """Push one message per Flower node id (at most ``max_in_flight`` waiting at a
        time); collect answers until all came, the timeout passed, or the nodes still
        owing one have left."""
        self._raise_if_stopped()
        unsent = list(messages.items())
        owner: dict[str, int] = {}  # Flower message id -> Flower node id
        pending: set[str] = set()
        answers: dict[int, Message] = {}
        deadline = time.monotonic() + timeout
        last_check = time.monotonic()
        wait = min(self.poll_interval, _FIRST_WAIT)
        while (pending or unsent) and time.monotonic() < deadline:
            self._raise_if_stopped()
            room = len(unsent) if self.max_in_flight is None else self.max_in_flight - len(pending)
            if room > 0 and unsent:
                batch, unsent = unsent[:room], unsent[room:]
                pushed = self._push(batch)
                owner.update(pushed)
                pending.update(pushed)
            for reply in self._flower.pull_messages(list(pending)):
                msg_id = reply.metadata.reply_to_message_id
                pending.discard(msg_id)
                answer = self._read_reply(reply, owner[msg_id])
                if answer is not None:
                    answers[owner[msg_id]] = answer
            if (pending or unsent) and time.monotonic() - last_check > 1.0:
                live = set(self._flower.get_node_ids())
                pending = {m for m in pending if owner[m] in live}
                unsent = [(fid, msg) for fid, msg in unsent if fid in live]
                last_check = time.monotonic()
            if pending:
                time.sleep(wait)
                wait = min(self.poll_interval, wait * _BACKOFF)
        self._raise_if_stopped()  # answers missing because of the interrupt are not dropouts
        return answers

    def _push(self, batch: Sequence[tuple[int, Message]]) -> dict[str, int]:
        """Push ``(Flower node id, message)`` pairs; their Flower message ids -> node ids."""
        outgoing = [
            FlowerMessage(
                to_records(msg),
                dst_node_id=fid,
                message_type=MESSAGE_TYPE,
                group_id=str(self.round),
            )
            for fid, msg in batch
        ]
        ids = list(self._flower.push_messages(outgoing))
        if len(ids) != len(outgoing):
            raise ProtocolError(f"Flower accepted {len(ids)} of {len(outgoing)} messages")
        return dict(zip(ids, (fid for fid, _ in batch), strict=True))

    def _read_reply(self, reply: FlowerMessage, fid: int) -> Message | None:
        if reply.has_error():
            if reply.error.code in LOST_REPLY_CODES:  # the node's answer is lost: a dropout
                return None
            reason = str(reply.error.reason).splitlines()[0]
            raise ProtocolError(f"Flower node {fid} failed on a fedstruct message: {reason}")
        raise_if_error(reply.content)
        return from_records(reply.content)


class _EveryNode(FlowerGrid):
    """A grid over whichever SuperNodes are connected, asked by their Flower ids: it
    names no client, so it asks no node which it hosts."""

    def __init__(
        self,
        grid: FlowerGridAPI,
        *,
        reply_timeout: float,
        poll_interval: float,
        stop: threading.Event | None,
    ) -> None:
        super().__init__(
            grid, (), min_nodes=0, reply_timeout=reply_timeout, poll_interval=poll_interval,
            stop=stop,
        )  # fmt: skip

    def _discover(self) -> None:
        """Nothing to learn: nodes are asked by their Flower ids."""


def ask_every_node(
    grid: FlowerGridAPI,
    message: Message,
    *,
    min_nodes: int = 0,
    join_timeout: float = 120.0,
    reply_timeout: float = 600.0,
    poll_interval: float = 0.05,
    stop: threading.Event | None = None,
) -> dict[int, Message]:
    """``message`` to every SuperNode connected to the SuperLink, outside any federation
    (no HELLO, no client: e.g. a catalogue of what each node offers), once at least
    ``min_nodes`` are connected; Flower node id -> its answer (a node that leaves
    meanwhile gives none).

    Raises
    ------
    ProtocolError
        If fewer than ``min_nodes`` nodes connect within ``join_timeout`` seconds.
    FedstructError
        A node's own error (same class, same message).
    """
    asker = _EveryNode(grid, reply_timeout=reply_timeout, poll_interval=poll_interval, stop=stop)
    deadline = time.monotonic() + join_timeout
    while len(nodes := sorted(grid.get_node_ids())) < min_nodes:
        asker._raise_if_stopped()
        if time.monotonic() > deadline:
            raise ProtocolError(
                f"only {len(nodes)} of {min_nodes} SuperNodes connected within "
                f"{join_timeout:.0f} s; start them, or ask fewer (--min-nodes)"
            )
        time.sleep(poll_interval)
    return asker._roundtrip({fid: message for fid in nodes}, reply_timeout)
