"""Probe of Flower's ClientApp processes, for ``benchmarks/backends.py --probe-clientapps``.

Python imports this module at start-up when its folder is on ``PYTHONPATH``. It does
nothing unless ``FEDSTRUCT_CLIENTAPP_PROBE`` names a folder and this process is a
``flwr-clientapp`` (the process a SuperNode's SuperExec starts for every message).
Such a process is started again, same PID, under ``python -X importtime`` with its
standard error in ``PROBE/PID.imports``; when it exits it writes ``PROBE/PID.json``:
its start (from ``/proc``, 10 ms resolution) and end, as Unix times, and the CPU
seconds it used (user + system). A probed round is
slower than a plain one (one more interpreter start, the import log): time rounds
without the probe.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time

PROBE_ENV = "FEDSTRUCT_CLIENTAPP_PROBE"


def _process_start() -> float:
    """This process's start as a Unix time (``/proc/self/stat``, field 22)."""
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def _record(folder: str, started: float) -> None:
    times = os.times()
    record = {"pid": os.getpid(), "start": started, "end": time.time(), "cpu": times[0] + times[1]}
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as out:
        json.dump(record, out)


def _probe(folder: str) -> None:
    if "importtime" not in sys._xoptions:
        log = os.open(os.path.join(folder, f"{os.getpid()}.imports"),
                      os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # fmt: skip
        os.dup2(log, 2)
        os.execv(sys.executable, [sys.executable, "-X", "importtime", *sys.orig_argv[1:]])
    atexit.register(_record, folder, _process_start())


if os.environ.get(PROBE_ENV) and sys.argv and sys.argv[0].endswith("flwr-clientapp"):
    _probe(os.environ[PROBE_ENV])
