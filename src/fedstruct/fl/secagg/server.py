"""The server side of secure aggregation: one protocol session over any grid.

:func:`secure_sum` runs the four stages of :mod:`fedstruct.fl.secagg.protocol`
through an ``exchange`` function (the grid's ``send_and_receive`` within a round, or
``exchange_outside_rounds``), so the same code runs on every backend. The server
relays public keys and encrypted shares, sums the masked vectors modulo ``2**64``,
and removes the masks that do not cancel: every survivor's self mask (its seed
rebuilt from ``t`` of its neighbours' shares) and the pairwise masks that survivors
agreed with clients that dropped out after sending their shares (the dropout's mask
key rebuilt from ``t`` shares). It never holds a client's value in the clear: only
masked vectors and, per client, the shares of one of its two secrets.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fedstruct.errors import ProtocolError, SecureAggregationError
from fedstruct.fl.message import Message
from fedstruct.fl.secagg import crypto
from fedstruct.fl.secagg import protocol as p
from fedstruct.fl.secagg.client import pairwise
from fedstruct.fl.secagg.config import SecAggConfig, neighbour_graph
from fedstruct.fl.secagg.quantize import Layout, dequantise
from fedstruct.fl.secagg.result import SumResult

__all__ = ["Exchange", "secure_sum"]

#: ``exchange({node: message}) -> {node: reply}`` of the nodes that answered.
Exchange = Callable[[Mapping[int, Message]], dict[int, Message]]


def secure_sum(
    exchange: Exchange,
    messages: Mapping[int, Message],
    config: SecAggConfig,
    *,
    weight: str | None = None,
    where: str = "",
) -> SumResult:
    """Sum the replies to ``messages`` (one inner request per node) securely.

    Parameters
    ----------
    exchange
        How messages reach the nodes (the module docstring).
    messages
        The inner request per node (a kind its handler declares summable).
    config
        Quantisation, graph degree, threshold and minimum number of clients.
    weight
        A metric of the replies by which every other value is multiplied before the
        sum (e.g. ``"n"``: FedAvg's sample counts); ``None``: plain sums.
    where
        What is summed, for messages (e.g. ``"round 3"``).

    Raises
    ------
    SecureAggregationError
        If, after clients dropped out, some client's masks can no longer be removed
        (fewer than ``t`` of its neighbours answered the last stage); the run can
        resume from its last checkpoint.
    """
    session = os.urandom(16)
    base = {p.SESSION: session}
    keys = exchange({v: Message(p.KEYS, config={**base, p.NODE: v}) for v in sorted(messages)})
    alive = sorted(keys)
    if len(alive) < config.min_clients:
        return SumResult(withheld=len(alive))
    k, t = config.degree(len(alive)), config.reconstruction_threshold(len(alive))
    graph = neighbour_graph(alive, k, np.random.default_rng(int.from_bytes(session, "big")))
    share_keys = {v: bytes(keys[v].config[p.SHARE_KEYS]) for v in alive}
    mask_keys = {v: bytes(keys[v].config[p.MASK_KEYS]) for v in alive}
    shared = exchange(
        {
            v: Message(
                p.SHARE,
                config={
                    **base,
                    p.NODE: v,
                    p.NEIGHBOURS: list(graph[v]),
                    p.SHARE_KEYS: [share_keys[u] for u in graph[v]],
                    p.MASK_KEYS: [mask_keys[u] for u in graph[v]],
                    p.THRESHOLD: t,
                },
            )
            for v in alive
        }
    )
    senders = sorted(shared)
    if len(senders) < config.min_clients:
        return SumResult(withheld=len(senders))
    inbox = _route(shared, graph)
    masked = exchange(
        {
            u: _mask_request(base, u, inbox[u], messages[u], config, weight, len(senders))
            for u in senders
        }
    )
    survivors = sorted(masked)
    if len(survivors) < config.min_clients:
        return SumResult(withheld=len(survivors))
    dropped = sorted(set(senders) - set(survivors))
    layout = _common_layout(masked, where)
    unmask = exchange(
        {
            u: Message(
                p.UNMASK,
                config={
                    **base,
                    p.NODE: u,
                    p.SURVIVORS: [v for v in graph[u] if v in masked],
                    p.DROPPED: [v for v in graph[u] if v in dropped],
                },
            )
            for u in survivors
        }
    )
    total = np.zeros(layout.size, dtype=np.uint64)
    for u in survivors:
        vector = np.asarray(masked[u].arrays.get(p.MASKED))
        if vector.dtype != np.uint64 or vector.shape != (layout.size,):
            raise ProtocolError(
                f"secure aggregation: node {u}'s masked answer is not {layout.size} uint64 words"
            )
        total += vector
    seeds = _rebuild(unmask, graph, survivors, p.SEED_FROM, p.SEED_SHARES, t, where)
    for u in survivors:
        key = crypto.derive_key(seeds[u], p.SELF_PURPOSE, session)
        total -= crypto.mask_stream(key, layout.size)
    secrets = _rebuild(unmask, graph, dropped, p.KEY_FROM, p.KEY_SHARES, t, where)
    for v in dropped:
        private = crypto.private_key(secrets[v])
        for u in graph[v]:
            if u in masked:
                key = crypto.shared_key(private, mask_keys[u], p.PAIR_PURPOSE, session)
                stream = crypto.mask_stream(key, layout.size)
                # u applied pairwise(·, u, v); remove it by applying v's side
                total = pairwise(total, stream, v, u)
    arrays, metrics = dequantise(total, layout, config.fractional_bits)
    return SumResult(arrays, metrics, tuple(survivors), tuple(dropped))


def _route(
    shared: Mapping[int, Message], graph: Mapping[int, Sequence[int]]
) -> dict[int, list[tuple[int, bytes]]]:
    """Each stage-2 sender's encrypted shares, by receiver (stage-2 senders only).

    Raises
    ------
    ProtocolError
        If a client addressed shares to nodes that are not its neighbours.
    """
    inbox: dict[int, list[tuple[int, bytes]]] = {u: [] for u in shared}
    for v, reply in sorted(shared.items()):
        receivers = [int(u) for u in reply.config[p.RECEIVERS]]
        if receivers != list(graph[v]):
            raise ProtocolError(f"secure aggregation: node {v} sent shares to non-neighbours")
        for u, sealed in zip(receivers, reply.config[p.SHARES], strict=True):
            if u in inbox:
                inbox[u].append((v, bytes(sealed)))
    return inbox


def _mask_request(
    base: dict[str, Any],
    node: int,
    inbox: list[tuple[int, bytes]],
    inner: Message,
    config: SecAggConfig,
    weight: str | None,
    clients: int,
) -> Message:
    """Stage 3's message to ``node``: its shares and the inner request inside."""
    return Message(
        p.MASK,
        arrays=p.inner_fields(dict(inner.arrays), strip=False),
        config={
            **base,
            **p.inner_fields(dict(inner.config), strip=False),
            p.NODE: node,
            p.INNER_KIND: inner.kind,
            p.SENDERS: [v for v, _ in inbox],
            p.SHARES: [s for _, s in inbox],
            p.BITS: config.fractional_bits,
            p.CLIENTS: clients,
            p.WEIGHT: weight or "",
        },
        metrics=p.inner_fields(dict(inner.metrics), strip=False),
    )


def _common_layout(masked: Mapping[int, Message], where: str) -> Layout:
    """The layout every masked answer shares.

    Raises
    ------
    ProtocolError
        If two answers are laid out differently (different arrays or shapes).
    """
    layouts = {bytes(m.config[p.LAYOUT]) for m in masked.values()}
    if len(layouts) != 1:
        raise ProtocolError(
            f"secure aggregation{where and ' of ' + where}: the clients' answers have different "
            "arrays or shapes, so they cannot be summed"
        )
    return Layout.from_bytes(layouts.pop())


def _rebuild(
    unmask: Mapping[int, Message],
    graph: Mapping[int, Sequence[int]],
    owners: Sequence[int],
    from_key: str,
    shares_key: str,
    threshold: int,
    where: str,
) -> dict[int, bytes]:
    """Each owner's secret from its neighbours' shares (the seed of a survivor, the
    mask key of a dropout; 32-byte keys come as two 16-byte halves).

    Raises
    ------
    SecureAggregationError
        If fewer than ``threshold`` of an owner's neighbours sent its share.
    """
    shares: dict[int, list[tuple[int, bytes]]] = {v: [] for v in owners}
    for u, reply in sorted(unmask.items()):
        for v, share in zip(reply.config[from_key], reply.config[shares_key], strict=True):
            if int(v) in shares and u in graph[int(v)]:
                shares[int(v)].append((graph[int(v)].index(u), bytes(share)))
    secrets = {}
    for v in owners:
        got = shares[v]
        if len(got) < threshold:
            raise SecureAggregationError(
                f"secure aggregation{where and ' of ' + where} failed: only {len(got)} of node "
                f"{v}'s {len(graph[v])} neighbours answered its last stage and {threshold} are "
                "needed to remove its masks (more clients dropped out than the threshold "
                "allows); resume the run from its checkpoint (--resume), or raise neighbours "
                "or lower threshold (SecAggConfig)"
            )
        chosen = got[:threshold]
        halves = [[(i, s[j : j + 16]) for i, s in chosen] for j in range(0, len(got[0][1]), 16)]
        secrets[v] = b"".join(crypto.combine_secret(h) for h in halves)
    return secrets
