"""Where a run's memory grows: run a ``fedstruct`` command in this process with a
thread that samples the resident memory every second and, at each gigabyte gained or
lost, prints the main thread's innermost fedstruct frames.

Usage: ``python benchmarks/memory_probe.py [--limit-gb 12] -- run fedfci --network pigs
--clients 10 --quiet --out DIR``

Stops the process (exit 3) once the resident memory passes ``--limit-gb``, printing the
stack there. Used for docs/benchmarks.md, "Federated discovery at scale".
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback


def _resident_gb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def _stack(thread_id: int, depth: int) -> str:
    frame = sys._current_frames()[thread_id]
    lines = [line for line in traceback.format_stack(frame) if "fedstruct" in line]
    return "".join(lines[-depth:])


def _watch(thread_id: int, limit: float) -> None:
    start, last = time.perf_counter(), _resident_gb()
    while True:
        time.sleep(1.0)
        now, at = _resident_gb(), time.perf_counter() - start
        if now > limit:
            print(f"{at:.0f} s: {now:.1f} GB, over {limit} GB: stopped\n{_stack(thread_id, 12)}")
            sys.stdout.flush()
            os._exit(3)
        if abs(now - last) > 1.0:
            print(f"--- {at:.0f} s: {last:.1f} -> {now:.1f} GB\n{_stack(thread_id, 4)}", flush=True)
            last = now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-gb", type=float, default=12.0)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="fedstruct's arguments")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    thread = threading.Thread(
        target=_watch, args=(threading.main_thread().ident, args.limit_gb), daemon=True
    )
    thread.start()
    from fedstruct.cli import main as fedstruct

    sys.argv = ["fedstruct", *command]
    fedstruct()


if __name__ == "__main__":
    main()
