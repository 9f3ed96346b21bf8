"""A Flower ``ClientApp`` that hosts our :class:`~fedstruct.fl.Client`.

Flower may run each message in a fresh process, so the app rebuilds the node's
client on every message (the factory may cache it per process), restores
the client's local state from the node's ``Context.state``, answers, and saves the
state back. With :meth:`Client.get_state` / :meth:`Client.set_state` implemented
faithfully, this behaves exactly like a client object that lives for the whole run.

A secure-aggregation session (:mod:`fedstruct.fl.secagg`) spans four messages: its
transient secrets are kept between them in the node's in-memory context under a
record of their own (never in the client's state, which checkpoints may hold), and
removed when the session ends. Three of its stages (keys, shares, unmask) need those
secrets only, so the app answers them without the factory (no method, no data, no
torch: a fraction of a second per message); only the masked answer builds the
client, whose own handler it runs.

Every fedstruct message a node answers leaves two lines in the node's log (Flower
hands a ClientApp's output to its SuperNode's), each with its UTC time: what it
received (kind, round; the request inside a masked-answer stage) and what it answered
(the reply's array names, dtypes and shapes, the names of its config and metrics
entries, its size, the seconds it took; never a value), or why it refused. A node
operator reads there what the node sends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from logging import INFO, WARNING
from typing import TYPE_CHECKING

from flwr.app import ConfigRecord, Context
from flwr.app import Message as FlowerMessage
from flwr.clientapp import ClientApp

from fedstruct.errors import ConfigError, FedstructError, ProtocolError
from fedstruct.fl.flower.records import HELLO, error_records, from_records, to_records
from fedstruct.fl.message import Message
from fedstruct.fl.secagg import protocol as secagg

if TYPE_CHECKING:  # imported where a client is built: a stage answered without one
    # (hello, keys, shares, unmask) imports no method, data or torch
    from fedstruct.fl.client import Client
    from fedstruct.fl.secagg.client import Session

__all__ = [
    "LOG_PREFIX",
    "REQUIRE_SECURE_AGGREGATION",
    "Admit",
    "ClientFactory",
    "Handler",
    "Identify",
    "answered_line",
    "make_client_app",
    "partition_of",
    "received_line",
    "requires_secure_aggregation",
]

#: ``factory(context) -> Client``: the client this node hosts; raises a FedstructError
#: for a bad node config.
ClientFactory = Callable[[Context], "Client"]
#: ``identify(context) -> config``: the node's answer to the grid's HELLO
#: (``{"partition": k}`` or ``{"site": name}``).
Identify = Callable[[Context], dict[str, int | str]]
#: ``handler(message, context) -> reply`` for a message outside the method's protocol.
Handler = Callable[[Message, Context], Message]
#: ``admit(message, context)``: raises a FedstructError for a message the node refuses
#: to answer at all (its own policy, e.g. the runs it approves).
Admit = Callable[[Message, Context], None]

_STATE_RECORD = "fedstruct.state"
#: The secure-aggregation session in progress (SuperNode memory only).
_SECAGG_RECORD = "fedstruct.secagg"
#: The node-config key of a SuperNode that answers summable requests only through
#: secure aggregation (``fedstruct flower supernode --require-secure-aggregation``).
REQUIRE_SECURE_AGGREGATION = "require-secure-aggregation"
#: What starts each of the node's log lines about a message (module docstring).
LOG_PREFIX = "fedstruct node:"
#: The secure-aggregation stages a node answers from the session's secrets alone.
_SESSION_STAGES = frozenset({secagg.KEYS, secagg.SHARE, secagg.UNMASK})


def requires_secure_aggregation(context: Context) -> bool:
    """Whether the node was started with ``--require-secure-aggregation``."""
    value = context.node_config.get(REQUIRE_SECURE_AGGREGATION, False)
    return value is True or str(value).lower() == "true"


def partition_of(context: Context) -> int:
    """The partition id in the node's config (``partition-id``).

    Raises
    ------
    ConfigError
        If the SuperNode was started without one.
    """
    value = context.node_config.get("partition-id")
    if value is None:
        raise ConfigError(
            "this SuperNode has no partition-id in its node config; start it with "
            "--node-config 'partition-id=K' (or 'fedstruct flower supernode --partition K')"
        )
    return int(value)


def _by_partition(context: Context) -> dict[str, int | str]:
    return {"partition": partition_of(context)}


def make_client_app(
    factory: ClientFactory,
    *,
    identify: Identify = _by_partition,
    handlers: Mapping[str, Handler] | None = None,
    threads: int | None = 1,
    admit: Admit | None = None,
) -> ClientApp:
    """A ``ClientApp`` answering every fedstruct message with the factory's client.

    Parameters
    ----------
    factory
        Builds the node's client.
    identify
        The node's answer to the grid's HELLO (default: its ``partition-id``).
    handlers
        Message kind -> handler, for kinds the node answers without the method's
        client (e.g. a deployment's schema handshake).
    threads
        Torch threads while the client computes (as ``LocalGrid``'s ``client_threads``,
        so results match the in-process grid).
    admit
        Called first for every message, HELLO included: its error refuses the message
        before anything else is done (no data read, no client built).
    """
    app = ClientApp()
    extra = dict(handlers or {})

    def answer(msg: Message, context: Context) -> Message:
        if admit is not None:
            admit(msg, context)
        if msg.kind == HELLO:
            return Message(HELLO, config=identify(context))
        if msg.kind in extra:
            return extra[msg.kind](msg, context)
        if msg.kind in _SESSION_STAGES:
            return _answer_session_stage(msg, context, _node_name(identify(context)))
        from fedstruct.fl.grid import torch_threads

        client = factory(context)
        client.require_secure_aggregation = requires_secure_aggregation(context)
        _restore(client, context)
        client._secagg = _open_session(context)
        with torch_threads(threads):
            reply = client.handle(msg)
        _save(client, context)
        _keep_session(context, client._secagg)
        return reply

    @app.query("fedstruct")
    def handle(message: FlowerMessage, context: Context) -> FlowerMessage:
        msg: Message | None = None
        try:
            msg = from_records(message.content)
            _log(INFO, received_line(msg))
            start = time.perf_counter()
            reply = answer(msg, context)
            _log(INFO, answered_line(msg, reply, time.perf_counter() - start))
            return FlowerMessage(to_records(reply), reply_to=message)
        except FedstructError as exc:
            kind = msg.kind if msg is not None else "a message"
            _log(WARNING, f"refused {kind}: {type(exc).__name__}: {exc}")
            return FlowerMessage(error_records(exc), reply_to=message)

    return app


def _restore(client: Client, context: Context) -> None:
    """The client's state from the node's context (the checkpoint format: no pickle)."""
    from fedstruct.fl import checkpoint

    record = context.state.config_records.get(_STATE_RECORD)
    if record is None:
        client.set_state({})
        return
    _, state = checkpoint.loads(record["state"], f"client {client.name!r}'s saved state")
    client.set_state(state)


def _save(client: Client, context: Context) -> None:
    from fedstruct.fl import checkpoint

    state = client.get_state()
    if state:
        context.state[_STATE_RECORD] = ConfigRecord({"state": checkpoint.dumps(state)})


def _open_session(context: Context) -> Session | None:
    """The secure-aggregation session open at this node, from its memory, if any."""
    record = context.state.config_records.get(_SECAGG_RECORD)
    if record is None:
        return None
    from fedstruct.fl.secagg.client import Session

    return Session.from_record(dict(record))


def _keep_session(context: Context, session: Session | None) -> None:
    """Keep the open session in the node's memory; forget it once it is over."""
    if session is not None:
        context.state[_SECAGG_RECORD] = ConfigRecord(session.to_record())
    elif _SECAGG_RECORD in context.state.config_records:
        del context.state[_SECAGG_RECORD]


def _answer_session_stage(message: Message, context: Context, name: str) -> Message:
    """A keys, shares or unmask stage, from the session's secrets only (no client)."""
    from fedstruct.fl.secagg import client as secagg_client  # the cryptography, when used

    reply, session = secagg_client.answer(message, _open_session(context), _no_inner, name)
    _keep_session(context, session)
    return reply


def _no_inner(request: Message) -> Message:
    """The inner handler of the stages answered without a client: they have none."""
    raise ProtocolError(
        f"secure aggregation: only the {secagg.MASK!r} stage answers an inner request, "
        f"not {request.kind!r}"
    )


def _node_name(identity: Mapping[str, int | str]) -> str:
    """How the node calls itself in its errors: its site, or its partition."""
    if "site" in identity:
        return str(identity["site"])
    return f"partition {identity.get('partition')}"


def received_line(message: Message) -> str:
    """What the node logs of a message it received: its kind and round (and, for a
    masked-answer stage, the kind of the request inside); no value."""
    inner = message.config.get(secagg.INNER_KIND) if message.kind == secagg.MASK else None
    where = f"round {message.config.get('round', 0)}"
    return f"received {message.kind} ({where}{f'; inner {inner}' if inner else ''})"


def answered_line(request: Message, reply: Message, seconds: float) -> str:
    """What the node logs of its reply to ``request``: its arrays' names, dtypes and
    shapes, its config and metrics names, its size in bytes; never a value."""
    arrays = ", ".join(
        f"{name} {array.dtype}[{'x'.join(map(str, array.shape))}]"
        for name, array in sorted(reply.arrays.items())
    )
    parts = [
        f"arrays {arrays or 'none'}",
        f"config {', '.join(sorted(reply.config)) or 'none'}",
        f"metrics {', '.join(sorted(reply.metrics)) or 'none'}",
        f"{reply.nbytes()} bytes",
    ]
    return f"answered {request.kind} with {reply.kind} in {seconds:.2f} s: " + "; ".join(parts)


def _log(level: int, text: str) -> None:
    """``text`` in the node's log after :data:`LOG_PREFIX` and the UTC time (Flower's
    own lines have none)."""
    from flwr.common import log

    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    log(level, "%s %s %s", LOG_PREFIX, now, text)
