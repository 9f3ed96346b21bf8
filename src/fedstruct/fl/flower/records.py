"""Lossless conversion between our :class:`~fedstruct.fl.Message` and Flower records.

A message becomes one ``RecordDict`` with three records:

- ``"arrays"``: an ``ArrayRecord`` of the arrays (dtype and shape kept);
- ``"config"``: a ``ConfigRecord`` of the config plus the message kind under
  :data:`KIND_KEY` (scalars, str, bytes and lists of one type are Flower's own
  config values; ragged data already travel as JSON bytes);
- ``"metrics"``: a ``MetricRecord`` of the metrics.

A client-side :class:`~fedstruct.errors.FedstructError` travels back in-band as an
error reply (:func:`error_records`) so the server can raise the same exception with
the client's one-line message.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict

from fedstruct import errors
from fedstruct.errors import FedstructError, ProtocolError
from fedstruct.fl.message import Message

__all__ = [
    "ERROR_KEY",
    "HELLO",
    "KIND_KEY",
    "REASON_KEY",
    "error_records",
    "from_records",
    "raise_if_error",
    "to_records",
]

KIND_KEY = "fedstruct.kind"
ERROR_KEY = "fedstruct.error"
REASON_KEY = "fedstruct.reason"
#: Kind of the message that asks a node which partition (or site) it hosts: the grid
#: (:mod:`~fedstruct.fl.flower.grid`) sends it, the ClientApp answers it; here, where
#: both read it, so that a ClientApp process imports neither grid.
HELLO = "fedstruct.hello"


def to_records(message: Message) -> RecordDict:
    """Our message as a Flower ``RecordDict``."""
    arrays = ArrayRecord({k: Array(np.ascontiguousarray(v)) for k, v in message.arrays.items()})
    config = ConfigRecord({**message.config, KIND_KEY: message.kind})
    metrics = MetricRecord(dict(message.metrics))
    return RecordDict({"arrays": arrays, "config": config, "metrics": metrics})


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
        arrays = {k: v.numpy() for k, v in content.array_records["arrays"].items()}
        metrics = dict(content.metric_records["metrics"])
    except KeyError as exc:
        raise ProtocolError(
            f"a Flower message without fedstruct records ({exc}); both sides must run fedstruct"
        ) from None
    return Message(str(kind), arrays, config, metrics)


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
