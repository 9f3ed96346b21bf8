"""A Flower ``ClientApp`` that hosts our :class:`~fedstruct.fl.Client`.

Flower may run each message in a fresh process, so the app rebuilds the node's
client on every message (the factory may cache it per process), restores
the client's local state from the node's ``Context.state``, answers, and saves the
state back. With :meth:`Client.get_state` / :meth:`Client.set_state` implemented
faithfully, this behaves exactly like a client object that lives for the whole run.

A secure-aggregation session (:mod:`fedstruct.fl.secagg`) spans four messages: its
transient secrets are kept between them in the node's in-memory context under a
record of their own (never in the client's state, which checkpoints may hold), and
removed when the session ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from flwr.app import ConfigRecord, Context
from flwr.app import Message as FlowerMessage
from flwr.clientapp import ClientApp

from fedstruct.errors import ConfigError, FedstructError
from fedstruct.fl import checkpoint
from fedstruct.fl.client import Client
from fedstruct.fl.flower.grid import HELLO
from fedstruct.fl.flower.records import error_records, from_records, to_records
from fedstruct.fl.grid import torch_threads
from fedstruct.fl.message import Message

__all__ = [
    "REQUIRE_SECURE_AGGREGATION",
    "ClientFactory",
    "Handler",
    "Identify",
    "make_client_app",
    "partition_of",
    "requires_secure_aggregation",
]

#: ``factory(context) -> Client``: the client this node hosts; raises a FedstructError
#: for a bad node config.
ClientFactory = Callable[[Context], Client]
#: ``identify(context) -> config``: the node's answer to the grid's HELLO
#: (``{"partition": k}`` or ``{"site": name}``).
Identify = Callable[[Context], dict[str, int | str]]
#: ``handler(message, context) -> reply`` for a message outside the method's protocol.
Handler = Callable[[Message, Context], Message]

_STATE_RECORD = "fedstruct.state"
#: The secure-aggregation session in progress (SuperNode memory only).
_SECAGG_RECORD = "fedstruct.secagg"
#: The node-config key of a SuperNode that answers summable requests only through
#: secure aggregation (``fedstruct flower supernode --require-secure-aggregation``).
REQUIRE_SECURE_AGGREGATION = "require-secure-aggregation"


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
    """
    app = ClientApp()
    extra = dict(handlers or {})

    @app.query("fedstruct")
    def handle(message: FlowerMessage, context: Context) -> FlowerMessage:
        try:
            msg = from_records(message.content)
            if msg.kind == HELLO:
                reply = Message(HELLO, config=identify(context))
            elif msg.kind in extra:
                reply = extra[msg.kind](msg, context)
            else:
                client = factory(context)
                client.require_secure_aggregation = requires_secure_aggregation(context)
                _restore(client, context)
                _restore_session(client, context)
                with torch_threads(threads):
                    reply = client.handle(msg)
                _save(client, context)
                _save_session(client, context)
            return FlowerMessage(to_records(reply), reply_to=message)
        except FedstructError as exc:
            return FlowerMessage(error_records(exc), reply_to=message)

    return app


def _restore(client: Client, context: Context) -> None:
    """The client's state from the node's context (the checkpoint format: no pickle)."""
    record = context.state.config_records.get(_STATE_RECORD)
    if record is None:
        client.set_state({})
        return
    _, state = checkpoint.loads(record["state"], f"client {client.name!r}'s saved state")
    client.set_state(state)


def _save(client: Client, context: Context) -> None:
    state = client.get_state()
    if state:
        context.state[_STATE_RECORD] = ConfigRecord({"state": checkpoint.dumps(state)})


def _restore_session(client: Client, context: Context) -> None:
    """The client's secure-aggregation session from the node's memory, if one is open."""
    record = context.state.config_records.get(_SECAGG_RECORD)
    client._secagg = None
    if record is not None:
        from fedstruct.fl.secagg.client import Session

        client._secagg = Session.from_record(dict(record))


def _save_session(client: Client, context: Context) -> None:
    """Keep the open session in the node's memory; forget it once it is over."""
    if client._secagg is not None:
        context.state[_SECAGG_RECORD] = ConfigRecord(client._secagg.to_record())
    elif _SECAGG_RECORD in context.state.config_records:
        del context.state[_SECAGG_RECORD]
