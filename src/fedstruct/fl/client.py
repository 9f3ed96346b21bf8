"""The client side of a federation: answers messages by their kind, audits every reply.

A method's client subclasses :class:`Client` and marks its handlers::

    class FedAvgClient(Client):
        @handles("fedavg.fit", max_entries=lambda client, msg: client.n_params + 8)
        def fit(self, msg: Message) -> Message:
            ...

Every handler declares the largest reply its protocol allows (``max_entries``) and,
if it sends graphs, which arrays are endpoint-mark matrices. :meth:`Client.handle`
runs the handler and passes the reply through the privacy audit before it leaves
the client, on every backend.

A handler whose reply the server needs only as a sum (every array and metric, possibly
weighted by one of its metrics) declares ``summable=True``: the server may then ask for
it through secure aggregation (:func:`fedstruct.fl.summation.send_and_sum`), whose
messages (kinds ``"secagg.*"``) every client answers here, running the handler on the
inner request, auditing its plain reply, and sending it only quantised and masked. A
client built with ``require_secure_aggregation = True`` refuses to answer a summable
kind in the clear.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.errors import PrivacyViolationError, ProtocolError
from fedstruct.fl.message import Message
from fedstruct.fl.secagg.protocol import PREFIX as SECAGG_PREFIX
from fedstruct.privacy.audit import PayloadLimit, RowIndex, audit_reply

if TYPE_CHECKING:
    from fedstruct.fl.secagg.client import Session

__all__ = ["Client", "handles", "holdout_split"]

C = TypeVar("C", bound="Client")
Bound = int | Callable[[Any, Message], int]


@dataclass(frozen=True)
class _HandlerSpec:
    kind: str
    method: Callable[[Any, Message], Message]
    max_entries: Bound
    graph_arrays: frozenset[str]
    summable: bool = False
    statistic_arrays: frozenset[str] = frozenset()


def handles(
    kind: str,
    *,
    max_entries: Bound,
    graph_arrays: Collection[str] = (),
    summable: bool = False,
    statistic_arrays: Collection[str] = (),
) -> Callable[[Callable[[C, Message], Message]], Callable[[C, Message], Message]]:
    """Mark a :class:`Client` method as the handler of messages of ``kind``.

    Parameters
    ----------
    kind
        The message kind, ``"<method>.<step>"``.
    max_entries
        The protocol's bound on the reply's :meth:`Message.n_entries`: an int, or a
        function ``(client, message) -> int``.
    graph_arrays
        Names of reply arrays that are endpoint-mark matrices.
    summable
        Whether the server needs every array and metric of the reply only as a sum
        over clients (weighted, possibly, by one of its metrics): such a reply may
        go through secure aggregation (module docstring).
    statistic_arrays
        Names of reply arrays of sufficient statistics, each entry a sum over many of
        the client's rows (contingency counts, moments): the audit refuses them only
        when they copy its rows in bulk (:func:`~fedstruct.privacy.audit.audit_reply`),
        since a count table's sparse cells look like records by chance.
    """

    def mark(fn: Callable[[C, Message], Message]) -> Callable[[C, Message], Message]:
        fn._fedstruct_handler = (  # type: ignore[attr-defined]
            kind,
            max_entries,
            frozenset(graph_arrays),
            summable,
            frozenset(statistic_arrays),
        )
        return fn

    return mark


class Client:
    """A federation member holding its data and local state.

    Parameters
    ----------
    data
        The client's data; it never leaves the client.
    seed
        The run's seed; the client's random draws derive from it, the round and its
        name (see :meth:`rng`), so any backend and a resumed run draw the same numbers.
    """

    _handlers: ClassVar[dict[str, _HandlerSpec]] = {}
    #: Refuse to answer a summable kind except through secure aggregation (a node
    #: that requires it: ``fedstruct flower supernode --require-secure-aggregation``).
    require_secure_aggregation: bool = False
    #: The secure-aggregation session in progress: transient secrets, never in
    #: :meth:`get_state` (so never in a checkpoint).
    _secagg: Session | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers = dict(cls._handlers)
        for attr in vars(cls).values():
            spec = getattr(attr, "_fedstruct_handler", None)
            if spec is not None:
                kind, bound, graphs, summable, statistics = spec
                handlers[kind] = _HandlerSpec(kind, attr, bound, graphs, summable, statistics)
        cls._handlers = handlers

    def __init__(self, data: ClientData, *, seed: int = 0) -> None:
        self.data = data
        self.seed = int(seed)
        self._row_index: RowIndex | None = None

    @property
    def name(self) -> str:
        """The client's name."""
        return self.data.name

    @classmethod
    def kinds(cls) -> tuple[str, ...]:
        """The message kinds this client answers."""
        return tuple(sorted(cls._handlers))

    @classmethod
    def summable(cls, kind: str) -> bool:
        """Whether this client's handler of ``kind`` declares its reply summable."""
        spec = cls._handlers.get(kind)
        return spec is not None and spec.summable

    @classmethod
    def graph_arrays(cls, kind: str) -> frozenset[str]:
        """The reply arrays of ``kind`` that are endpoint-mark matrices (none for a
        kind this client does not answer)."""
        spec = cls._handlers.get(kind)
        return spec.graph_arrays if spec is not None else frozenset()

    def handle(self, message: Message) -> Message:
        """Answer ``message`` with the handler of its kind, audited.

        Raises
        ------
        ProtocolError
            If no handler answers this kind or the handler returns no ``Message``.
        PrivacyViolationError
            If the reply carries rows of the client's data or exceeds its bound, or
            the client requires secure aggregation and ``message`` asks for a
            summable reply in the clear.
        """
        if message.kind.startswith(SECAGG_PREFIX):
            from fedstruct.fl.secagg import client as secagg_client  # the cryptography, when used

            reply, self._secagg = secagg_client.answer(
                message, self._secagg, self.answer_summable, self.name
            )
            return reply
        if self.require_secure_aggregation and self.summable(message.kind):
            raise PrivacyViolationError(
                f"client {self.name!r} requires secure aggregation and refuses to answer "
                f"{message.kind!r} in the clear; run with --secure-aggregation"
            )
        return self._answer(message)

    def answer_summable(self, message: Message) -> Message:
        """The audited plain reply to a summable request (inside secure aggregation).

        Raises
        ------
        ProtocolError
            If the kind's handler does not declare ``summable=True``.
        """
        if not self.summable(message.kind):
            raise ProtocolError(
                f"client {self.name!r} cannot sum {message.kind!r} securely: its handler does "
                "not declare summable=True (the server needs its replies one by one)"
            )
        return self._answer(message)

    def _answer(self, message: Message) -> Message:
        """Run the handler of ``message``'s kind and audit its reply."""
        spec = self._handlers.get(message.kind)
        if spec is None:
            raise ProtocolError(
                f"client {self.name!r} ({type(self).__name__}) has no handler for "
                f"{message.kind!r}; it answers {list(self.kinds())}"
            )
        reply = spec.method(self, message)
        if not isinstance(reply, Message):
            raise ProtocolError(
                f"handler {message.kind!r} of client {self.name!r} returned "
                f"{type(reply).__name__}, not a Message"
            )
        bound = spec.max_entries
        limit = PayloadLimit(
            max_entries=bound(self, message) if callable(bound) else int(bound),
            graph_arrays=spec.graph_arrays,
            statistic_arrays=spec.statistic_arrays,
        )
        audit_reply(reply, self.row_index, limit, self.name)
        return reply

    @property
    def row_index(self) -> RowIndex:
        """Hashes of the client's rows for the audit (built on first use)."""
        if self._row_index is None:
            self._row_index = RowIndex(self.data.rows)
        return self._row_index

    def rng(self, message: Message, stream: int = 0) -> np.random.Generator:
        """A generator determined by the seed, the message's round, the client and ``stream``.

        The server puts the round in ``message.config["round"]``.
        """
        rnd = int(message.config.get("round", 0))
        tag = zlib.crc32(self.name.encode())
        return np.random.default_rng([self.seed, rnd, tag, int(stream)])

    def get_state(self) -> dict[str, Any]:
        """Local state that must survive between rounds (saved in checkpoints).

        Stateless clients keep the default (empty) state.
        """
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`get_state` returned."""
        if state:
            raise ProtocolError(
                f"client {self.name!r} ({type(self).__name__}) keeps no state but was given "
                f"{sorted(state)}; implement set_state for stateful clients"
            )


def holdout_split(
    n_rows: int, fraction: float, seed: int, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """A client's rows split into kept (training) and held-out (validation) positions.

    ``round(fraction * n_rows)`` rows are held out, drawn with the run's ``seed`` and
    the client's ``name`` (the same split on every backend and after a resume); none
    when that is 0 or would leave no training row. Both index arrays are sorted.
    """
    order = np.random.default_rng([int(seed), zlib.crc32(name.encode()), 1]).permutation(n_rows)
    n_val = round(fraction * n_rows)
    n_val = n_val if 0 < n_val < n_rows else 0
    return np.sort(order[n_val:]), np.sort(order[:n_val])
