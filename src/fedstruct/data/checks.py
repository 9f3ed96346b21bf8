"""Validation of the numeric arguments of the data generators and splitters: one
message format for every generator (what, the bad value, what to give instead); and
of the files a user hands over (:func:`require_regular_file`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from fedstruct.errors import ConfigError, DataError, FedstructError

__all__ = ["fraction", "integer_at_least", "require_regular_file"]


def require_regular_file(path: str | Path, what: str = "file") -> None:
    """Refuse a path that exists but is not a regular file (after symbolic links).

    A named pipe (FIFO), a device or a socket given as a site's table, a manifest or
    an image would make the reader wait for ever (a FIFO blocks until something
    writes to it) or read without end (``/dev/zero``). Call this before opening.
    A missing path or a folder is left to the caller's own message.

    Parameters
    ----------
    path
        The path given.
    what
        What it names, for the message (``"file"``, ``"manifest"``, ...).

    Raises
    ------
    DataError
        Naming the path and what it is instead.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = (
        "a named pipe (FIFO)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
    )
    raise DataError(
        f"{what} {path} is {kind}, not a regular file; fedstruct reads only files saved "
        "on disk: save the contents to a file and give its path"
    )


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
