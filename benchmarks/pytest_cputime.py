"""A pytest plugin: each test's CPU time (user + system of the test process and of
every process it started, live or ended) and wall time, one JSON line per test.

CPU time hardly moves with the load from other work on the machine, unlike wall
time. Counted: this process, its waited-for children (``RUSAGE_CHILDREN``), and every
live descendant's own and waited-for children's time from ``/proc/<pid>/stat``. Not
counted: a descendant that ended without being waited for by a live descendant or
by this process (orphans); ``CPUTIME_SUBREAPER=1`` makes this process their
subreaper, so they stay visible as zombies (needed for Ray's workers). A
module-scoped fixture's processes count in the tests that run while they live; when
they end unwaited the last test's figure drops (it can come out negative).

Usage (Linux): ``PYTHONPATH=src:benchmarks CPUTIME_OUT=cpu.jsonl python -m pytest
-p pytest_cputime tests/...``
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import time
from collections.abc import Iterator

import pytest

TICKS = os.sysconf("SC_CLK_TCK")
#: prctl option that makes orphaned descendants this process's children.
PR_SET_CHILD_SUBREAPER = 36


def descendants_cpu() -> float:
    """CPU seconds of the live descendants, each with its waited-for children."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = sum(int(f) for f in fields[11:15]) / TICKS  # utime..cstime
    total, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


def cpu_seconds() -> float:
    """This process's CPU seconds, its ended children's and its live descendants'."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime + descendants_cpu()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CPUTIME_SUBREAPER") == "1":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall, load = cpu_seconds(), time.monotonic(), os.getloadavg()[0]
    yield
    record = {
        "test": item.nodeid,
        "cpu": round(cpu_seconds() - cpu, 2),
        "wall": round(time.monotonic() - wall, 2),
        "load": round((load + os.getloadavg()[0]) / 2, 1),
    }
    with open(os.environ.get("CPUTIME_OUT", "cputime.jsonl"), "a") as out:
        out.write(json.dumps(record) + "\n")
