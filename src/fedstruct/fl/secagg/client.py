"""The client side of secure aggregation: any :class:`~fedstruct.fl.Client` answers
the protocol's kinds (:mod:`fedstruct.fl.secagg.protocol`) with this module.

A client holds one :class:`Session` at a time: its private keys, its self-mask seed,
its neighbours' public keys and the encrypted shares it holds for them. They live
only in memory for the length of one protocol session (a deployed node keeps them
in its SuperNode's in-memory context between the session's messages), never in a
checkpoint (:meth:`Client.get_state` does not return them) nor in a log, and are
dropped after the last stage.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError
from fedstruct.fl.message import Message
from fedstruct.fl.secagg import crypto
from fedstruct.fl.secagg import protocol as p
from fedstruct.fl.secagg.quantize import quantise, weighted_entries

__all__ = ["Session", "answer"]

#: ``run(inner) -> audited plain reply``: the client's own handler of a summable
#: kind (:meth:`Client.answer_summable`).
InnerHandler = Callable[[Message], Message]


@dataclass
class Session:
    """One protocol session's transient secrets at a client (module docstring)."""

    session: bytes
    node: int
    share_secret: bytes
    mask_secret: bytes
    neighbours: tuple[int, ...] = ()
    share_keys: tuple[bytes, ...] = ()
    mask_keys: tuple[bytes, ...] = ()
    seed: bytes = b""
    held: dict[int, bytes] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        """The session as config values (a deployed node's in-memory context)."""
        return {
            "session": self.session,
            "node": self.node,
            "share_secret": self.share_secret,
            "mask_secret": self.mask_secret,
            "neighbours": list(self.neighbours),
            "share_keys": list(self.share_keys),
            "mask_keys": list(self.mask_keys),
            "seed": self.seed,
            "held_from": list(self.held),
            "held": list(self.held.values()),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Session:
        """Inverse of :meth:`to_record`."""
        return cls(
            bytes(record["session"]),
            int(record["node"]),
            bytes(record["share_secret"]),
            bytes(record["mask_secret"]),
            tuple(int(v) for v in record["neighbours"]),
            tuple(bytes(k) for k in record["share_keys"]),
            tuple(bytes(k) for k in record["mask_keys"]),
            bytes(record["seed"]),
            dict(
                zip((int(v) for v in record["held_from"]), map(bytes, record["held"]), strict=True)
            ),
        )

    def peer_key(self, peer: int, keys: tuple[bytes, ...]) -> bytes:
        """A neighbour's public key from ``keys`` (share or mask keys).

        Raises
        ------
        ProtocolError
            If ``peer`` is not a neighbour.
        """
        if peer not in self.neighbours:
            raise ProtocolError(
                f"secure aggregation: node {peer} is not a neighbour of node {self.node} in "
                "this session"
            )
        return keys[self.neighbours.index(peer)]


def answer(
    message: Message, session: Session | None, inner: InnerHandler, name: str
) -> tuple[Message, Session | None]:
    """Answer a protocol message; return the reply and the session to keep (``None``
    once the session is over).

    Raises
    ------
    ProtocolError
        For an unknown stage, a message of another session, or fields that do not
        fit the protocol.
    """
    sid = bytes(message.config.get(p.SESSION, b""))
    if message.kind == p.KEYS:
        return _keys(message, sid)
    if session is None or session.session != sid:
        raise ProtocolError(
            f"secure aggregation: client {name!r} got {message.kind!r} of a session it did "
            "not start (its keys are gone: the node restarted, or the stages came out of order)"
        )
    if message.kind == p.SHARE:
        return _share(message, session), session
    if message.kind == p.MASK:
        return _mask(message, session, inner, name), session
    if message.kind == p.UNMASK:
        return _unmask(message, session), None
    raise ProtocolError(
        f"unknown secure-aggregation stage {message.kind!r}; expected {p.KEYS}, {p.SHARE}, "
        f"{p.MASK} or {p.UNMASK}"
    )


def _keys(message: Message, sid: bytes) -> tuple[Message, Session]:
    share_private, share_public = crypto.key_pair()
    mask_private, mask_public = crypto.key_pair()
    session = Session(
        sid,
        int(message.config[p.NODE]),
        crypto.private_bytes(share_private),
        crypto.private_bytes(mask_private),
    )
    reply = Message(p.KEYS, config={p.SHARE_KEYS: share_public, p.MASK_KEYS: mask_public})
    return reply, session


def _share(message: Message, session: Session) -> Message:
    """Stage 2: the encrypted shares of the self-mask seed and the mask key."""
    cfg = message.config
    neighbours = tuple(int(v) for v in cfg[p.NEIGHBOURS])
    share_keys = tuple(bytes(k) for k in cfg[p.SHARE_KEYS])
    mask_keys = tuple(bytes(k) for k in cfg[p.MASK_KEYS])
    threshold = int(cfg[p.THRESHOLD])
    if not (len(neighbours) == len(share_keys) == len(mask_keys)) or session.node in neighbours:
        raise ProtocolError("secure aggregation: the neighbours' keys do not match their list")
    if not 1 <= threshold <= len(neighbours):
        raise ProtocolError(
            f"secure aggregation: threshold {threshold} for {len(neighbours)} neighbours"
        )
    session.neighbours, session.share_keys, session.mask_keys = neighbours, share_keys, mask_keys
    seed = session.seed = os.urandom(crypto.SECRET_BYTES)
    m = len(neighbours)
    key = session.mask_secret
    parts = [crypto.split_secret(s, threshold, m) for s in (seed, key[:16], key[16:])]
    share_private = crypto.private_key(session.share_secret)
    sealed = []
    for i, v in enumerate(neighbours):
        plain = struct.pack(">II", session.node, v) + b"".join(part[i] for part in parts)
        k = crypto.shared_key(share_private, share_keys[i], p.SHARE_PURPOSE, session.session)
        sealed.append(crypto.encrypt_share(k, plain, session.session, session.node, v))
    return Message(p.SHARE, config={p.RECEIVERS: list(neighbours), p.SHARES: sealed})


def _mask(message: Message, session: Session, inner: InnerHandler, name: str) -> Message:
    """Stage 3: keep the shares addressed here; answer the inner request, masked."""
    cfg = message.config
    senders = [int(v) for v in cfg[p.SENDERS]]
    shares = [bytes(s) for s in cfg[p.SHARES]]
    if len(senders) != len(shares) or not set(senders) <= set(session.neighbours):
        raise ProtocolError("secure aggregation: shares from nodes that are not neighbours")
    if not session.seed:
        raise ProtocolError("secure aggregation: a masked answer asked for before the shares")
    seed, session.seed = session.seed, b""  # not needed once the answer is masked
    session.held = dict(zip(senders, shares, strict=True))
    request = Message(
        str(cfg[p.INNER_KIND]),
        p.inner_fields(dict(message.arrays), strip=True),
        {**p.inner_fields(dict(cfg), strip=True), "round": cfg.get("round", 0)},
        p.inner_fields(dict(message.metrics), strip=True),
    )
    reply = inner(request)
    arrays, metrics = weighted_entries(reply, str(cfg.get(p.WEIGHT, "")) or None)
    vector, layout = quantise(arrays, metrics, int(cfg[p.BITS]), int(cfg[p.CLIENTS]), repr(name))
    masked = vector + crypto.mask_stream(
        crypto.derive_key(seed, p.SELF_PURPOSE, session.session), vector.size
    )
    mask_private = crypto.private_key(session.mask_secret)
    for v in senders:
        key = crypto.shared_key(
            mask_private, session.peer_key(v, session.mask_keys), p.PAIR_PURPOSE, session.session
        )
        masked = pairwise(masked, crypto.mask_stream(key, vector.size), session.node, v)
    return Message(p.MASK, arrays={p.MASKED: masked}, config={p.LAYOUT: layout.to_bytes()})


def pairwise(
    vector: NDArray[np.uint64], stream: NDArray[np.uint64], node: int, peer: int
) -> NDArray[np.uint64]:
    """``vector`` with the pairwise mask of ``node`` and ``peer`` applied: added by the
    lower node id, subtracted by the higher, so the two cancel in the sum (modulo
    ``2**64``, numpy's wrapping ``uint64`` arithmetic)."""
    return vector + stream if node < peer else vector - stream


def _unmask(message: Message, session: Session) -> Message:
    """Stage 4: the shares the server needs, one per neighbour, never both kinds."""
    survivors = [int(v) for v in message.config[p.SURVIVORS]]
    dropped = [int(v) for v in message.config[p.DROPPED]]
    if set(survivors) & set(dropped) or not set(survivors) | set(dropped) <= set(session.held):
        raise ProtocolError(
            "secure aggregation: the server asked for both shares of one node, or for "
            "shares this client does not hold; refused"
        )
    share_private = crypto.private_key(session.share_secret)
    plain = {}
    for v in survivors + dropped:
        k = crypto.shared_key(
            share_private, session.peer_key(v, session.share_keys), p.SHARE_PURPOSE, session.session
        )
        text = crypto.decrypt_share(k, session.held[v], session.session, v, session.node)
        if struct.unpack(">II", text[:8]) != (v, session.node):
            raise ProtocolError(f"secure aggregation: a share from node {v} names other nodes")
        plain[v] = text
    return Message(
        p.UNMASK,
        config={
            p.SEED_FROM: survivors,
            p.SEED_SHARES: [plain[v][p.SEED_SHARE] for v in survivors],
            p.KEY_FROM: dropped,
            p.KEY_SHARES: [plain[v][p.KEY_SHARE] for v in dropped],
        },
    )
