"""Lossless conversion between our :class:`~fedstruct.fl.Message` and Flower records.

A message becomes one ``RecordDict`` of as few Flower objects as it can be, since a
deployment sends every object of a message in a request of its own, at every hop
(docs/benchmarks.md, "Deployed rounds with warm workers"):

- ``"config"``: a ``ConfigRecord`` of the config, the message kind under
  :data:`KIND_KEY` and each metric under :data:`METRIC_PREFIX` + its name (scalars,
  str, bytes and lists of one type are Flower's own config values; ragged data
  already travel as JSON bytes);
- the message's arrays packed together (:func:`pack`: a JSON header of names, dtypes
  and shapes, then their bytes; no pickle): up to :data:`INLINE_BYTES`, as one bytes
  value of the config record under :data:`ARRAYS_KEY` (a message is then three Flower
  objects: itself, its ``RecordDict`` and that record); larger, as the one ``uint8``
  array of an ``ArrayRecord`` ``"arrays"``, which Flower cuts into chunks.

A client-side :class:`~fedstruct.errors.FedstructError` travels back in-band as an
error reply (:func:`error_records`) so the server can raise the same exception with
the client's one-line message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict

from fedstruct import errors
from fedstruct.errors import FedstructError, ProtocolError
from fedstruct.fl.message import Message

__all__ = [
    "ARRAYS_KEY",
    "ERROR_KEY",
    "HELLO",
    "INLINE_BYTES",
    "KIND_KEY",
    "METRIC_PREFIX",
    "REASON_KEY",
    "error_records",
    "from_records",
    "pack",
    "raise_if_error",
    "to_records",
    "unpack",
]

KIND_KEY = "fedstruct.kind"
#: What starts the config key of each metric.
METRIC_PREFIX = "fedstruct.metric."
#: The config key of a message's packed arrays, when they are at most INLINE_BYTES.
ARRAYS_KEY = "fedstruct.arrays"
#: The most bytes of packed arrays that travel in the config record.
INLINE_BYTES = 1024 * 1024
#: The name of the one packed array of the ``"arrays"`` record.
_PACKED = "fedstruct.packed"
ERROR_KEY = "fedstruct.error"
REASON_KEY = "fedstruct.reason"
#: Kind of the message that asks a node which partition (or site) it hosts: the grid
#: (:mod:`~fedstruct.fl.flower.grid`) sends it, the ClientApp answers it; here, where
#: both read it, so that a ClientApp process imports neither grid.
HELLO = "fedstruct.hello"


def to_records(message: Message) -> RecordDict:
    """Our message as a Flower ``RecordDict`` (module docstring).

    Raises
    ------
    ProtocolError
        If a config key starts with :data:`METRIC_PREFIX` or an array holds Python
        objects.
    """
    reserved = (KIND_KEY, ARRAYS_KEY)
    taken = [k for k in message.config if k.startswith(METRIC_PREFIX) or k in reserved]
    if taken:
        raise ProtocolError(f"message {message.kind!r}: config key {taken[0]!r} is reserved")
    config = {**message.config, **{METRIC_PREFIX + k: v for k, v in message.metrics.items()}}
    config[KIND_KEY] = message.kind
    records: dict[str, ArrayRecord | MetricRecord | ConfigRecord] = {}
    if message.arrays:
        packed = pack(message.arrays)
        if packed.size <= INLINE_BYTES:
            config[ARRAYS_KEY] = packed.tobytes()
        else:
            records["arrays"] = ArrayRecord({_PACKED: Array(packed)})
    records["config"] = ConfigRecord(config)
    return RecordDict(records)


def from_records(content: RecordDict) -> Message:
    """Inverse of :func:`to_records`.

    Raises
    ------
    ProtocolError
        If the records were not made by :func:`to_records`.
    """
    try:
        config = dict(content.config_records["config"])
        kind = config.pop(KIND_KEY)
        record = content.array_records.get("arrays")
        inline = config.pop(ARRAYS_KEY, None)
        if record is not None:
            arrays = unpack(record[_PACKED].numpy())
        elif isinstance(inline, bytes):
            arrays = unpack(np.frombuffer(inline, dtype=np.uint8))
        else:
            arrays = {}
    except KeyError as exc:
        raise ProtocolError(
            f"a Flower message without fedstruct records ({exc}); both sides must run fedstruct"
        ) from None
    metrics = {
        k[len(METRIC_PREFIX) :]: config.pop(k) for k in list(config) if k.startswith(METRIC_PREFIX)
    }
    return Message(str(kind), arrays, config, metrics)


def pack(arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Every array in one ``uint8`` array: the length of a JSON header (8 bytes,
    little-endian), the header (each array's name, dtype and shape), their bytes.

    Raises
    ------
    ProtocolError
        If an array holds Python objects (they would need pickle).
    """
    header, parts = [], []
    for name, value in arrays.items():
        array = np.ascontiguousarray(value)
        if array.dtype.hasobject:
            raise ProtocolError(f"array {name!r} holds Python objects; send numbers or JSON")
        header.append([name, array.dtype.str, list(array.shape)])
        parts.append(array.tobytes())
    head = json.dumps(header).encode()
    blob = len(head).to_bytes(8, "little") + head + b"".join(parts)
    return np.frombuffer(blob, dtype=np.uint8)


def unpack(packed: np.ndarray) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack` (each array its own copy).

    Raises
    ------
    ProtocolError
        If ``packed`` is not what :func:`pack` makes.
    """
    blob = np.ascontiguousarray(packed, dtype=np.uint8).tobytes()
    try:
        size = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8 : 8 + size])
        at, arrays = 8 + size, {}
        for name, dtype, shape in header:
            kind = np.dtype(dtype)
            if kind.hasobject:
                raise ValueError("an array of Python objects")
            end = at + kind.itemsize * math.prod(shape)
            if end > len(blob):
                raise ValueError("fewer bytes than its header says")
            arrays[str(name)] = np.frombuffer(blob[at:end], dtype=kind).reshape(shape).copy()
            at = end
        if at != len(blob):
            raise ValueError("more bytes than its header says")
    except (ValueError, TypeError, RecursionError) as exc:
        raise ProtocolError(f"a message's arrays are not fedstruct's packing ({exc})") from None
    return arrays


def error_records(exc: FedstructError) -> RecordDict:
    """An in-band error reply carrying the exception's class and one-line message."""
    return RecordDict(
        {"config": ConfigRecord({ERROR_KEY: type(exc).__name__, REASON_KEY: str(exc)})}
    )


def raise_if_error(content: RecordDict) -> None:
    """Re-raise a client's in-band error on the server (same class, same message).

    Raises
    ------
    FedstructError
        The client's exception class (``ProtocolError`` if the name is unknown).
    """
    config = content.config_records.get("config")
    if config is None or ERROR_KEY not in config:
        return
    cls = getattr(errors, str(config[ERROR_KEY]), None)
    if not (isinstance(cls, type) and issubclass(cls, FedstructError)):
        cls = ProtocolError
    raise cls(str(config[REASON_KEY]))
