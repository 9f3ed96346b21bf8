"""ENCO (FED-CD's local learner) with 1 and 2 torch threads, alone and beside busy
processes (issue 29 item 12; figures in docs/benchmarks.md).

Each measurement runs ENCO on a small ER-2 problem (d = 10, 2,000 observational rows
+ 50 per variable) in a fresh process, while ``--busy`` other Python processes spin
on the CPU; it prints the wall time and the CPU time ENCO used. The busy processes
are this script's own children, ended by their process ids afterwards.

Usage: ``python benchmarks/threads.py [--busy 0 2] [--threads 1 2] [--epochs 2]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

_ENCO = """
import json, resource, sys, time
from fedstruct.data.scm import CategoricalSCM
from fedstruct.methods.fedcd import horizontal_interventions
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.methods.fedcd import ENCO, Beliefs, InterventionalData
from fedstruct.methods.fedcd.enco.learner import ENCOConfig

threads, epochs = (None if sys.argv[1] == "default" else int(sys.argv[1])), int(sys.argv[2])
dag = erdos_renyi_dag(10, seed=0, edges_per_node=2.0, shuffle=True)
scm = CategoricalSCM(dag, seed=0)
[whole] = horizontal_interventions(scm, 1, n_observational=2000, n_per_intervention=50, seed=0)
data = InterventionalData.from_client(whole)
before = resource.getrusage(resource.RUSAGE_SELF)
start = time.perf_counter()
ENCO(ENCOConfig(threads=threads)).fit(data, Beliefs.uniform(10), epochs=epochs, seed=0)
wall = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"wall_s": wall, "cpu_s": cpu}))
"""

_SPIN = "while True: pass"


def measure(threads: str, epochs: int, busy: int) -> dict[str, float]:
    """One ENCO fit in a fresh process beside ``busy`` spinning processes."""
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(busy)]
    try:
        time.sleep(1.0 if busy else 0.0)
        done = subprocess.run(
            [sys.executable, "-c", _ENCO, threads, str(epochs)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--threads", nargs="+", default=["1", "2", "default"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    for busy in args.busy:
        for threads in args.threads:
            for _ in range(args.repeats):
                got = measure(threads, args.epochs, busy)
                print(f"busy={busy} threads={threads}: wall {got['wall_s']:.1f} s, "
                      f"cpu {got['cpu_s']:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
