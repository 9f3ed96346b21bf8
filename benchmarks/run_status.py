"""CPU cost of one status poll of a deployed run: a ``flwr ls`` process against
:func:`fedstruct.fl.flower.control.run_status` (the same question, in this process).

Usage: ``python benchmarks/run_status.py [--repeats R]``

Starts a loopback SuperLink (no nodes), then asks it ``R`` times for run 1 both ways,
alternating (the run does not exist: both get Flower's "Run ID not found", after the
same work a real poll does). CPU time (user + system) is measured with
``getrusage``: of the waited-for child for the process, of this process for the
in-process call; unlike wall time it hardly moves with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fedstruct.errors import DeploymentError
from fedstruct.fl.flower.cluster import CONNECTION, Link, flwr_json, write_connection
from fedstruct.fl.flower.control import run_status
from fedstruct.fl.flower.loopback import LoopbackCluster


def cpu(who: int) -> float:
    """User + system CPU seconds of ``who`` (``RUSAGE_SELF`` or ``RUSAGE_CHILDREN``)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def timed(ask: Callable[[], object], who: int) -> tuple[float, float]:
    """CPU and wall seconds of one ``ask()`` (a ``DeploymentError`` is its answer)."""
    before, started = cpu(who), time.perf_counter()
    try:
        ask()
    except DeploymentError:
        pass
    return cpu(who) - before, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args()
    with LoopbackCluster(Path(tempfile.mkdtemp(prefix="fedstruct-status-"))) as cluster:
        cluster.superlink("--insecure")
        write_connection(cluster.home, Link(cluster.address))
        ways = {
            "flwr ls process": (
                lambda: flwr_json(["ls", CONNECTION, "--run-id", "1"], cluster.home),
                resource.RUSAGE_CHILDREN,
            ),
            "run_status (in-process)": (
                lambda: run_status(Link(cluster.address), None, 1),
                resource.RUSAGE_SELF,
            ),
        }
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(args.repeats):
            for name, (ask, who) in ways.items():
                figures[name].append(timed(ask, who))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"{'way':<25}{'CPU s (median)':>16}{'CPU s (first)':>15}{'wall s (median)':>17}")
    for name, rows in figures.items():
        cpus, walls = [c for c, _ in rows], [w for _, w in rows]
        print(
            f"{name:<25}{statistics.median(cpus):>16.3f}{cpus[0]:>15.3f}"
            f"{statistics.median(walls):>17.2f}"
        )


if __name__ == "__main__":
    main()
