"""Summing the replies of summable requests, securely when the run says so.

A handler whose reply the server needs only as a sum declares it
(``@handles(kind, max_entries=..., summable=True)``), and the server asks for the sum
with one call::

    total = send_and_sum(grid, {n: Message(FIT, arrays=weights) for n in asked}, weight="n")
    average = {k: v / total.metrics["n"] for k, v in total.arrays.items()}

With the run's secure aggregation off (``grid.secure_aggregation is None``) this sends
the requests and sums the replies in node order (the same floats as summing them by
hand); with a :class:`~fedstruct.fl.secagg.SecAggConfig` it runs SecAgg+
(:mod:`fedstruct.fl.secagg`), and the server only ever holds masked vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fedstruct.errors import ProtocolError
from fedstruct.fl.grid import Grid
from fedstruct.fl.message import Message
from fedstruct.fl.secagg.quantize import weighted_entries
from fedstruct.fl.secagg.result import SumResult

__all__ = ["plain_sum", "send_and_sum"]


def send_and_sum(
    grid: Grid,
    messages: Mapping[int, Message],
    *,
    weight: str | None = None,
    outside_rounds: bool = False,
) -> SumResult:
    """Send one summable request per node; return the sum of the replies and who is in it.

    Parameters
    ----------
    grid
        The run's grid; its ``secure_aggregation`` (a :class:`SecAggConfig` or
        ``None``) chooses secure or plain summation.
    messages
        The request per node; its kind's handler must declare ``summable=True``.
    weight
        A metric of every reply by which its other values are multiplied before the
        sum (e.g. ``"n"``); that metric is summed as it is.
    outside_rounds
        Send through :meth:`Grid.exchange_outside_rounds` (e.g. the feature
        statistics step) instead of :meth:`Grid.send_and_receive`.

    Raises
    ------
    SecureAggregationError
        If a secure round cannot remove the masks of clients that dropped out (see
        :func:`~fedstruct.fl.secagg.server.secure_sum`).
    ProtocolError
        If a reply lacks the weight metric, or the replies' arrays disagree in shape.
    """
    exchange = grid.exchange_outside_rounds if outside_rounds else grid.send_and_receive
    config = grid.secure_aggregation
    if config is None:
        return plain_sum(exchange(messages), weight)
    from fedstruct.fl.secagg.server import secure_sum  # the cryptography, when used

    total = secure_sum(exchange, messages, config, weight=weight, where=f"round {grid.round}")
    if not outside_rounds:  # a run none of whose rounds released a sum learned nothing
        if total.nodes:
            grid.sums_released += 1
        else:
            grid.sums_withheld += 1
    return total


def plain_sum(replies: Mapping[int, Message], weight: str | None = None) -> SumResult:
    """The replies summed in node order: each array as float64 (int64 for integer
    arrays without a weight) starting from the first node's, each metric from 0, as a
    loop ``total += value`` would."""
    arrays: dict[str, Any] = {}
    metrics: dict[str, float | int] = {}
    for _, reply in sorted(replies.items()):
        values, numbers = weighted_entries(reply, weight)
        for name, a in values.items():
            a = np.asarray(a)
            a = a.astype(np.int64 if a.dtype.kind in "biu" else np.float64)
            if name in arrays:
                if arrays[name].shape != a.shape:
                    raise ProtocolError(
                        f"reply {name!r} has shape {a.shape}, others {arrays[name].shape}"
                    )
                arrays[name] += a
            else:
                arrays[name] = a.copy()
        for name, value in numbers.items():
            metrics[name] = metrics.get(name, 0) + value
    return SumResult(arrays, metrics, tuple(sorted(replies)))
