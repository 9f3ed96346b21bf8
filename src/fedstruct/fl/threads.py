"""How many CPU threads torch may use: a fixed default, overridable, never more than
the cores this process may run on.

Torch's intra-op thread pool spin-waits between small operations. On a machine that
other jobs share, a thread that is descheduled stalls every other thread of the pool:
FED-CD's ENCO took 62 s alone with two threads on 2 cores and 83 minutes when two
other jobs shared the cores (docs/benchmarks.md, "Torch threads on a busy machine").
The default is therefore the cores this process may use (``os.sched_getaffinity``:
a job scheduler's or ``taskset``'s limit, not the machine's size), capped at
:data:`DEFAULT_CAP` — the small networks fedstruct trains gain nothing from more —
and 1 inside a worker process of a recipe that runs several at a time. The default
does not depend on the machine's load, so a run and its resumption use the same
threads (torch's sums round by the thread split). ``FEDSTRUCT_THREADS=N`` sets it.
"""

from __future__ import annotations

import os

from fedstruct.errors import ConfigError

__all__ = ["DEFAULT_CAP", "THREADS_ENV", "default_threads", "usable_cores"]

#: The environment variable that sets torch's threads (a positive whole number).
THREADS_ENV = "FEDSTRUCT_THREADS"
#: The most threads fedstruct gives torch by default.
DEFAULT_CAP = 1


def usable_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``, else
    ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Torch's threads for fedstruct's work: ``FEDSTRUCT_THREADS`` if set, else
    :data:`DEFAULT_CAP`; never more than :func:`usable_cores`.

    Raises
    ------
    ConfigError
        If ``FEDSTRUCT_THREADS`` is not a positive whole number.
    """
    given = os.environ.get(THREADS_ENV, "").strip()
    if not given:
        return min(DEFAULT_CAP, usable_cores())
    try:
        threads = int(given)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigError(
            f"{THREADS_ENV}={given!r}: give a positive whole number of torch threads "
            f"(this process may use {usable_cores()} cores), or unset it"
        )
    return min(threads, usable_cores())
