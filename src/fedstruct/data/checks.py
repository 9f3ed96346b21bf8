"""Validation of the numeric arguments of the data generators and splitters: one
message format for every generator (what, the bad value, what to give instead)."""

from __future__ import annotations

import numpy as np

from fedstruct.errors import ConfigError, FedstructError

__all__ = ["fraction", "integer_at_least"]


def integer_at_least(value: object, what: str, minimum: int = 1, hint: str = "") -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) of at least ``minimum``.

    Raises
    ------
    ConfigError
        Otherwise, naming ``what`` (and adding ``hint``, if any).
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{what} is {value!r}; give an integer >= {minimum}{hint}")
    return int(value)


def fraction(
    value: object,
    what: str,
    *,
    open_interval: bool = False,
    error: type[FedstructError] = ConfigError,
) -> float:
    """``value`` as a ``float`` if it is a number (not a bool) in ``[0, 1]``, or in
    ``(0, 1)`` with ``open_interval``.

    Raises
    ------
    FedstructError
        ``error`` (default :class:`ConfigError`) otherwise, naming ``what``.
    """
    number = isinstance(value, int | float | np.integer | np.floating)
    if number and not isinstance(value, bool):
        share = float(value)
        if (0.0 < share < 1.0) if open_interval else (0.0 <= share <= 1.0):
            return share
    interval = "strictly between 0 and 1" if open_interval else "in [0, 1]"
    raise error(f"{what} is {value!r}; give a number {interval}")
