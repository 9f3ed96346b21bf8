"""Per-round overhead of the Flower backends relative to the in-process one (fedavg).

Each backend runs the same fedavg configuration (asia, 3 clients, 3,000 rows) for
R1 and R2 rounds; the per-round time is ``(T(R2) - T(R1)) / (R2 - R1)`` and the
fixed cost (start-up, node discovery, the final federated evaluation, writing
results) is ``T(R1) - R1 * per_round``. Medians over repeats. The ``flower`` backend
runs on a loopback cluster (a SuperLink and 3 SuperNodes as separate processes)
started once; its start-up time is reported separately.

Run: ``.venv/bin/python benchmarks/backends.py [--repeats 3] [--r1 2] [--r2 6]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fedstruct.experiments import execute
from fedstruct.experiments.flower.launcher import FlowerLauncher
from fedstruct.experiments.launch import Launcher
from fedstruct.fl.flower.cluster import DeploymentOptions
from fedstruct.fl.flower.loopback import LoopbackCluster

SETTINGS = {"network": "asia", "clients": 3, "samples": 3000, "test_samples": 1000}


def timed_run(rounds: int, out: Path, launcher: str | Launcher) -> float:
    start = time.perf_counter()
    execute("fedavg", [{**SETTINGS, "rounds": rounds}], out, backend=launcher)
    return time.perf_counter() - start


def measure(
    launcher: str | Launcher, r1: int, r2: int, repeats: int, root: Path
) -> tuple[float, float]:
    name = launcher if isinstance(launcher, str) else launcher.name
    per_round, fixed = [], []
    for rep in range(repeats):
        t1 = timed_run(r1, root / f"{name}-{rep}-a", launcher)
        t2 = timed_run(r2, root / f"{name}-{rep}-b", launcher)
        per = (t2 - t1) / (r2 - r1)
        per_round.append(per)
        fixed.append(t1 - r1 * per)
        print(f"  {name:<10} repeat {rep}: T({r1})={t1:6.2f} s  T({r2})={t2:6.2f} s", flush=True)
    return statistics.median(per_round), statistics.median(fixed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--r1", type=int, default=2)
    parser.add_argument("--r2", type=int, default=6)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fedstruct-backends-"))
    results = {}
    for backend in ("local", "flower-sim"):
        results[backend] = measure(backend, args.r1, args.r2, args.repeats, root)
    with LoopbackCluster(root / "cluster") as cluster:
        started = time.perf_counter()
        cluster.superlink("--insecure")
        for k in range(SETTINGS["clients"]):
            cluster.supernode(k, "--insecure")
        cluster_start = time.perf_counter() - started
        flower = FlowerLauncher(
            DeploymentOptions(superlink=cluster.address, home=str(cluster.home))
        )
        results["flower"] = measure(flower, args.r1, args.r2, args.repeats, root)
    local = results["local"][0]
    print(f"\nfedavg, {SETTINGS}, rounds {args.r1} and {args.r2}, median of {args.repeats}")
    print(f"{'backend':<11}{'per round':>12}{'x local':>10}{'fixed cost':>13}")
    for backend, (per, fixed) in results.items():
        print(f"{backend:<11}{per:>10.3f} s{per / local:>10.1f}{fixed:>11.2f} s")
    print(f"loopback cluster start (SuperLink + 3 SuperNodes processes): {cluster_start:.1f} s")


if __name__ == "__main__":
    main()
