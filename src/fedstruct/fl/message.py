"""The one thing that crosses the wire between server and clients.

A :class:`Message` mirrors Flower's ``Message`` content (an ``ArrayRecord``, a
``ConfigRecord`` and a ``MetricRecord``) so that it converts to Flower records one to
one:

- ``arrays``: name -> numeric numpy array (no object arrays);
- ``config``: name -> ``int``, ``float``, ``bool``, ``str``, ``bytes`` or a list of one
  of these types (ragged data, such as separating sets, travels as JSON bytes);
- ``metrics``: name -> ``int`` or ``float``.

Nothing else crosses. ``kind`` names the handler (e.g. ``"fedavg.fit"``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedstruct.errors import ProtocolError

__all__ = ["ConfigValue", "Message", "config_entries", "from_json_bytes", "json_bytes"]

Scalar = int | float | bool | str | bytes
ConfigValue = Scalar | list[int] | list[float] | list[bool] | list[str] | list[bytes]
_SCALARS = (bool, int, float, str, bytes)


def _check_config_value(kind: str, key: str, value: Any) -> ConfigValue:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        items = [v.item() if isinstance(v, np.generic) else v for v in value]
        types = {type(v) for v in items}
        if len(types) <= 1 and all(isinstance(v, _SCALARS) for v in items):
            return items
        raise ProtocolError(
            f"message {kind!r}: config {key!r} mixes types {sorted(t.__name__ for t in types)}; "
            "a config list holds one scalar type (send ragged data as json_bytes)"
        )
    raise ProtocolError(
        f"message {kind!r}: config {key!r} has type {type(value).__name__}; use int, float, "
        "bool, str, bytes or a list of one of these (ragged data as json_bytes)"
    )


@dataclass(frozen=True)
class Message:
    """A message between server and client.

    Parameters
    ----------
    kind
        The handler it is for, ``"<method>.<step>"`` (e.g. ``"fedavg.fit"``).
    arrays
        Named numeric numpy arrays (copied on construction only if not arrays).
    config
        Named scalars, strings, bytes or lists of one scalar type.
    metrics
        Named numbers.

    Raises
    ------
    ProtocolError
        If a value has a type that cannot cross the wire.
    """

    kind: str
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    config: Mapping[str, ConfigValue] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise ProtocolError(f"message kind must be a non-empty string, got {self.kind!r}")
        arrays: dict[str, np.ndarray] = {}
        for key, arr in self.arrays.items():
            a = np.asarray(arr)
            if a.dtype.kind not in "biuf":
                raise ProtocolError(
                    f"message {self.kind!r}: array {key!r} has dtype {a.dtype}; only bool, "
                    "integer and float arrays cross the wire"
                )
            arrays[str(key)] = a
        config = {str(k): _check_config_value(self.kind, k, v) for k, v in self.config.items()}
        metrics: dict[str, float] = {}
        for key, val in self.metrics.items():
            if isinstance(val, np.generic):
                val = val.item()
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                raise ProtocolError(
                    f"message {self.kind!r}: metric {key!r} must be a number, got {val!r}"
                )
            metrics[str(key)] = val
        object.__setattr__(self, "arrays", arrays)
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "metrics", metrics)

    def nbytes(self) -> int:
        """Payload size in bytes: array buffers, config values and metrics.

        Scalars count 8 bytes, strings their UTF-8 length; keys and framing are not
        counted (they are constant per protocol).
        """
        total = sum(int(a.nbytes) for a in self.arrays.values())
        for value in self.config.values():
            for v in value if isinstance(value, list) else [value]:
                total += _scalar_nbytes(v)
        return total + 8 * len(self.metrics)

    def n_entries(self) -> int:
        """Number of values carried: array elements, config list items and scalars, metrics.

        Strings and bytes count one entry per 8 bytes (rounded up), so a payload
        cannot hide rows in a long string. This is what privacy bounds limit.
        """
        total = sum(int(a.size) for a in self.arrays.values())
        return total + sum(config_entries(v) for v in self.config.values()) + len(self.metrics)


def config_entries(value: ConfigValue) -> int:
    """Entries a config value counts for in :meth:`Message.n_entries`: one per scalar,
    one per 8 bytes (rounded up) of a string or bytes; a list counts its items."""
    total = 0
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, (str, bytes)):
            total += max(1, math.ceil(_scalar_nbytes(v) / 8))
        else:
            total += 1
    return total


def _scalar_nbytes(value: Scalar) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    return 8


def json_bytes(obj: Any) -> bytes:
    """Encode ragged data (nested lists, dicts of lists) as compact JSON bytes."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def from_json_bytes(data: bytes) -> Any:
    """Decode :func:`json_bytes`."""
    return json.loads(data.decode())
