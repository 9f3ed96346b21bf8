"""Wall time of one deployed secure FedAvg run on loopback, per fedstruct source.

For each ``--source`` (a fedstruct ``src`` folder; alternating over ``--repeats``) this
starts a loopback cluster (a SuperLink and 4 SuperNodes started with
``--require-secure-aggregation``, polling every 0.25 s, as the deployed tests do)
whose every process, ClientApps included, imports that source, and times one
``fedstruct run fedavg --secure-aggregation`` on it (the deployed test's settings: 4
clients, 400 training and 100 test rows, 1 round), submission to results.

Usage:
``python benchmarks/secagg_deployed_run.py [--repeats R] --source SRC [--source SRC ...]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: Starts the cluster and times the run; prints the seconds (run with PYTHONPATH=SRC).
PROGRAM = """
import sys, time
from pathlib import Path
from fedstruct.fl.flower.loopback import LoopbackCluster
root = Path(sys.argv[1])
with LoopbackCluster(root / "cluster", poll_interval=0.25) as c:
    c.superlink("--insecure")
    for k in range(4):
        c.supernode(k, "--insecure", "--require-secure-aggregation")
    start = time.perf_counter()
    done = c.fedstruct("run", "fedavg", "--clients", "4", "--rounds", "1", "--set",
                       "samples=400", "--set", "test_samples=100", "--quiet",
                       "--secure-aggregation", "--backend", "flower", "--superlink",
                       c.address, "--out", str(root / "run"), timeout=900)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
print(seconds)
"""


def one_run(source: Path) -> float:
    """Seconds of one deployed secure run with every process on ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    with tempfile.TemporaryDirectory(prefix="fedstruct-secagg-deployed-") as root:
        done = subprocess.run([sys.executable, "-c", PROGRAM, root], env=env, check=True,
                              capture_output=True, text=True)  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--source", type=Path, action="append", required=True)
    args = parser.parse_args()
    sources = [s.resolve() for s in args.source]
    runs: dict[Path, list[float]] = {s: [] for s in sources}
    for _ in range(args.repeats):
        for source in sources:
            load = os.getloadavg()[0]
            runs[source].append(one_run(source))
            print(f"{source}: {runs[source][-1]:.1f} s (load average {load:.2f} at start)",
                  flush=True)  # fmt: skip
    print("\n| fedstruct source | deployed secure run (s), median |")
    print("|---|---:|")
    for source, values in runs.items():
        print(f"| `{source}` | {statistics.median(values):.1f} |")


if __name__ == "__main__":
    main()
