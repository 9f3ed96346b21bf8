"""A summable reply as one vector of fixed-point integers modulo ``2**64``, and back.

A reply's arrays and metrics (each multiplied by the reply's weight metric, when its
handler declares one) are flattened in a fixed order, the :class:`Layout`, scaled by
``2**s`` and rounded to the nearest integer: ``q = round(x * 2**s)``, held as
``uint64`` (two's complement), so that adding vectors with numpy's wrapping
``uint64`` arithmetic adds the values modulo ``2**64``. The sum ``Q`` of ``N``
vectors, read back as a signed integer, is ``round``-ed values' sum exactly as long
as ``|sum| < 2**63`` (the range), and ``Q / 2**s`` differs from the floats' sum by
at most ``N * 2**-(s+1)`` per element (each rounding is off by at most half a unit of
``2**-s``; float64's own rounding of ``x * 2**s`` adds ``|x| * 2**-53``). Integer and
boolean entries (integer metrics too, weighted by an integer weight) are scaled in
int64 arithmetic and sum exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError, SecureAggregationError
from fedstruct.fl.message import Message, from_json_bytes, json_bytes

__all__ = ["Layout", "dequantise", "quantise", "weighted_entries"]


@dataclass(frozen=True)
class Layout:
    """Where each array and metric of a summable reply sits in its vector.

    ``entries``: ``(name, "array" | "metric", shape, integer)`` in vector order; an
    integer entry (int or bool dtype, or an int metric, unweighted) sums exactly.
    """

    entries: tuple[tuple[str, str, tuple[int, ...], bool], ...]

    @property
    def size(self) -> int:
        """Length of the vector."""
        return sum(math.prod(shape) for _, _, shape, _ in self.entries)

    def to_bytes(self) -> bytes:
        """The layout as JSON bytes (it travels with the masked vector)."""
        return json_bytes(
            [[n, where, list(shape), integer] for n, where, shape, integer in self.entries]
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Layout:
        """Inverse of :meth:`to_bytes`.

        Raises
        ------
        ProtocolError
            If the bytes are not a layout.
        """
        try:
            entries = tuple(
                (str(n), str(w), tuple(int(d) for d in shape), bool(i))
                for n, w, shape, i in from_json_bytes(data)
            )
        except (ValueError, TypeError) as exc:
            raise ProtocolError(
                f"secure aggregation: a reply's layout is malformed ({exc})"
            ) from None
        return cls(entries)


def weighted_entries(
    reply: Message, weight: str | None
) -> tuple[dict[str, NDArray[Any]], dict[str, float | int]]:
    """The reply's arrays and metrics as they are summed: multiplied by the metric
    ``weight`` (float64) when it is given, the weight itself as it is.

    Raises
    ------
    ProtocolError
        If the reply lacks its declared weight metric.
    """
    if weight is None:
        return dict(reply.arrays), dict(reply.metrics)
    if weight not in reply.metrics:
        raise ProtocolError(
            f"a summable reply {reply.kind!r} lacks its weight metric {weight!r}; its handler "
            "declares that its values are summed weighted by it"
        )
    w = reply.metrics[weight]
    arrays = {k: float(w) * np.asarray(a, dtype=np.float64) for k, a in reply.arrays.items()}
    metrics = {k: (v if k == weight else w * v) for k, v in reply.metrics.items()}
    return arrays, metrics


def quantise(
    arrays: Mapping[str, NDArray[Any]],
    metrics: Mapping[str, float | int],
    bits: int,
    clients: int,
    where: str,
) -> tuple[NDArray[np.uint64], Layout]:
    """The fixed-point vector of ``arrays`` and ``metrics`` (module docstring).

    Raises
    ------
    SecureAggregationError
        If a value is not finite, or beyond ``2**63 / clients`` once scaled (the
        sum of ``clients`` such values could wrap around); ``where`` names the client.
    """
    entries: list[tuple[str, str, tuple[int, ...], bool]] = []
    values: list[NDArray[Any]] = []
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        entries.append((name, "array", a.shape, a.dtype.kind in "biu"))
        values.append(a.ravel())
    for name in sorted(metrics):
        value = metrics[name]
        entries.append((name, "metric", (), isinstance(value, int)))
        values.append(np.array([value]))
    limit = 2.0**63 / max(clients, 1)  # the scaled value's bound: no sum can wrap
    parts = []
    for (name, _, _, integer), v in zip(entries, values, strict=True):
        if integer:  # exact: v * 2**bits in int64
            big = np.abs(v.astype(np.float64)) >= limit / 2.0**bits
            scaled = v.astype(np.int64) << bits if not big.any() else None
        else:
            scaled = np.rint(v.astype(np.float64) * 2.0**bits)
            big = ~np.isfinite(scaled) | (np.abs(scaled) >= limit)
            scaled = scaled.astype(np.int64) if not big.any() else None
        if scaled is None and not np.isfinite(v.astype(np.float64)).all():
            raise SecureAggregationError(
                f"secure aggregation at {where}: {name!r} holds "
                f"{v[~np.isfinite(v.astype(np.float64))][0]}, not a number a sum can carry "
                "(the client's computation diverged: e.g. a learning rate too large)"
            )
        if scaled is None:
            raise SecureAggregationError(
                f"secure aggregation at {where}: {name!r} holds {v[big][0]:.6g}, beyond the "
                f"fixed-point range ±{limit / 2.0**bits:.3g} for {clients} clients with "
                f"{bits} fractional bits; lower fractional_bits (SecAggConfig)"
            )
        parts.append(scaled)
    vector = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return vector.view(np.uint64), Layout(tuple(entries))


def dequantise(
    total: NDArray[np.uint64], layout: Layout, bits: int
) -> tuple[dict[str, NDArray[Any]], dict[str, float | int]]:
    """The sums of the arrays and metrics from the summed vector ``total``: float64
    (integer entries: int64 arrays, int metrics, exact).

    Raises
    ------
    ProtocolError
        If ``total``'s length does not match the layout.
    """
    if total.shape != (layout.size,):
        raise ProtocolError(
            f"secure aggregation: a masked vector has {total.size} entries, "
            f"its layout {layout.size}"
        )
    signed = total.view(np.int64)
    arrays: dict[str, NDArray[Any]] = {}
    metrics: dict[str, float | int] = {}
    start = 0
    for name, where, shape, integer in layout.entries:
        size = math.prod(shape)
        chunk = signed[start : start + size]
        start += size
        value = (chunk >> bits) if integer else chunk.astype(np.float64) / 2.0**bits
        if where == "array":
            arrays[name] = value.reshape(shape)
        else:
            metrics[name] = int(value[0]) if integer else float(value[0])
    return arrays, metrics
