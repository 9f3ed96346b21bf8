"""What the privacy audit costs: its share of every method's quick run, and per MiB.

1. Each method's quick run (the settings of its backend-equivalence test,
   ``Runnable.quick``) with ``audit_reply`` and the clients' ``RowIndex`` timed: the
   seconds the audit adds to the run, and the run's total.
2. One reply of 1 MiB whose rows have the client's width (the audit's worst layout:
   every row is looked up), against a client of 5,000 rows x 64 columns of codes, and
   against one of measurements (whose rows the near-copy check also indexes, on the
   first reply: ``first``), with rows of the client's width and of one column less.

Run: ``.venv/bin/python benchmarks/audit.py [--methods fedavg fedcdnv ...] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import fedstruct.fl.client as client_module
from fedstruct.fl import Message
from fedstruct.privacy import PayloadLimit, RowIndex, audit_reply
from fedstruct.runs.contract import execute, runnable, runnable_names


class Timed:
    """Wraps a callable and adds up the seconds spent in it."""

    def __init__(self, fn):
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def audit_share(method: str) -> tuple[float, float, int]:
    """(audit seconds, run seconds, replies audited) of ``method``'s quick run."""
    audit, index = Timed(client_module.audit_reply), Timed(client_module.RowIndex)
    client_module.audit_reply, client_module.RowIndex = audit, index
    try:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            execute(method, [dict(runnable(method).quick)], Path(out))
            total = time.perf_counter() - start
    finally:
        client_module.audit_reply, client_module.RowIndex = audit.fn, index.fn
    return audit.seconds + index.seconds, total, audit.calls


def per_mib(
    repeats: int, measurements: bool = False, width: int = 64
) -> tuple[float, float, float]:
    """(index build ms, first audit ms, audit ms) for a 1 MiB reply of rows of
    ``width`` against a client of 5,000 x 64 codes (or measurements)."""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(5000, 64)) if measurements else rng.integers(0, 3, (5000, 64))
    rows = pd.DataFrame(table)
    reply = Message("bench.fit", arrays={"w": rng.normal(size=(2048, width))})
    limit = PayloadLimit(reply.n_entries())
    builds, firsts, audits = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        index = RowIndex(rows)
        builds.append(time.perf_counter() - start)
        for times in (firsts, audits):
            start = time.perf_counter()
            audit_reply(reply, index, limit, "bench")
            times.append(time.perf_counter() - start)
    return tuple(1e3 * statistics.median(t) for t in (builds, firsts, audits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for measurements, width in ((False, 64), (True, 64), (True, 63)):
        build, first, audit = per_mib(args.repeats, measurements, width)
        client = "measurements" if measurements else "codes"
        print(f"1 MiB reply of width {width}, client 5000 x 64 {client}: index {build:.1f} ms, "
              f"audit {first:.2f} ms first, {audit:.2f} ms after")  # fmt: skip
    for method in args.methods or runnable_names():
        seconds, total, calls = audit_share(method)
        print(f"{method:10s} audit {seconds:7.3f} s of {total:7.2f} s ({calls} replies)")


if __name__ == "__main__":
    main()
