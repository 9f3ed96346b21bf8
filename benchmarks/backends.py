"""Per-round overhead of the Flower backends relative to the in-process one (fedavg).

Each backend runs the same fedavg configuration (asia, 3 clients, 3,000 rows) for
R1 and R2 rounds; the per-round time is ``(T(R2) - T(R1)) / (R2 - R1)`` and the
fixed cost (start-up, node discovery, the final federated evaluation, writing
results) is ``T(R1) - R1 * per_round``. Medians over repeats. The ``flower`` backend
runs on a loopback cluster (a SuperLink and 3 SuperNodes as separate processes)
started once; its start-up time is reported separately.

``--backends`` picks the backends to time (e.g. ``--backends flower``: a deployed
round only). ``--probe-clientapps`` also records every ClientApp process the
SuperNodes start (one per message; ``benchmarks/clientapp_probe``): how long it
lived and how long its imports took (``python -X importtime``). The probe slows the
processes it records, so time rounds without it.

Run: ``.venv/bin/python benchmarks/backends.py [--repeats 3] [--r1 2] [--r2 6]
[--backends local,flower-sim,flower] [--probe-clientapps]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from clientapp_start import import_seconds

from fedstruct.deployment.launcher import FlowerLauncher
from fedstruct.fl.flower.cluster import DeploymentOptions
from fedstruct.fl.flower.loopback import LoopbackCluster
from fedstruct.runs import execute
from fedstruct.runs.launch import Launcher

SETTINGS = {"network": "asia", "clients": 3, "samples": 3000, "test_samples": 1000}
BACKENDS = ("local", "flower-sim", "flower")
PROBE = Path(__file__).parent / "clientapp_probe"
PROBE_ENV = "FEDSTRUCT_CLIENTAPP_PROBE"


@dataclass
class Timing:
    """Per-round time, fixed cost and the wall-clock window of every timed run."""

    per_round: float
    fixed: float
    windows: list[tuple[int, float, float]] = field(default_factory=list)


def flower_launcher(cluster: LoopbackCluster) -> str | Launcher:
    """The launcher that submits runs to ``cluster``'s SuperLink."""
    return FlowerLauncher(DeploymentOptions(superlink=cluster.address, home=str(cluster.home)))


def timed_run(rounds: int, out: Path, launcher: str | Launcher) -> float:
    start = time.perf_counter()
    execute("fedavg", [{**SETTINGS, "rounds": rounds}], out, backend=launcher)
    return time.perf_counter() - start


def measure(name: str, launcher: str | Launcher, r1: int, r2: int, repeats: int,
            root: Path) -> Timing:  # fmt: skip
    per_round, fixed, windows = [], [], []
    for rep in range(repeats):
        times = []
        for rounds, tag in ((r1, "a"), (r2, "b")):
            began = time.time()
            times.append(timed_run(rounds, root / f"{name}-{rep}-{tag}", launcher))
            windows.append((rounds, began, time.time()))
        per = (times[1] - times[0]) / (r2 - r1)
        per_round.append(per)
        fixed.append(times[0] - r1 * per)
        print(f"  {name:<10} repeat {rep}: T({r1})={times[0]:6.2f} s  T({r2})={times[1]:6.2f} s",
              flush=True)  # fmt: skip
    return Timing(statistics.median(per_round), statistics.median(fixed), windows)


def probed_processes(folder: Path) -> list[dict[str, float]]:
    """Every ClientApp process the probe recorded: start, end, CPU, imports, torch."""
    found = []
    for record in sorted(folder.glob("*.json")):
        process = json.loads(record.read_text())
        log = record.with_suffix(".imports").read_text(errors="replace")
        process["imports"], process["torch"] = import_seconds(log)
        found.append(process)
    return found


def report_probe(folder: Path, timing: Timing, r1: int, r2: int) -> None:
    """Print what the ClientApp processes cost, per message and per round."""
    processes = probed_processes(folder)
    counts = {r1: [], r2: []}
    for rounds, began, ended in timing.windows:
        counts[rounds].append(sum(began <= p["start"] <= ended for p in processes))
    per_round = (statistics.median(counts[r2]) - statistics.median(counts[r1])) / (r2 - r1)
    per_node = per_round / SETTINGS["clients"]
    life = statistics.median(p["end"] - p["start"] for p in processes)
    cpu = statistics.median(p["cpu"] for p in processes)
    imports = statistics.median(p["imports"] for p in processes)
    torch = statistics.median(p["torch"] for p in processes)
    print(f"\nClientApp processes (probed, {len(processes)} recorded): {per_round:.1f} per round "
          f"({per_node:.1f} per SuperNode)")  # fmt: skip
    print(f"  median life {life:.2f} s (CPU {cpu:.2f} s), of which imports {imports:.2f} s "
          f"(torch {torch:.2f} s)")  # fmt: skip
    print(f"  imports per SuperNode per round: {per_node * imports:.2f} s = "
          f"{per_node * imports / timing.per_round:.0%} of the probed round "
          f"({timing.per_round:.2f} s)")  # fmt: skip


def time_flower(args: argparse.Namespace, root: Path) -> tuple[Timing, float]:
    """Time the ``flower`` backend on a fresh loopback cluster; also its start-up."""
    with LoopbackCluster(root / "cluster", runs=root) as cluster:
        if args.probe_clientapps:
            folder = root / "clientapp-probe"
            folder.mkdir()
            path = [str(PROBE), *filter(None, [os.environ.get("PYTHONPATH")])]
            cluster.env.update({"PYTHONPATH": os.pathsep.join(path), PROBE_ENV: str(folder)})
        started = time.perf_counter()
        cluster.superlink("--insecure")
        for k in range(SETTINGS["clients"]):
            cluster.supernode(k, "--insecure")
        cluster_start = time.perf_counter() - started
        timing = measure("flower", flower_launcher(cluster), args.r1, args.r2, args.repeats, root)
    if args.probe_clientapps:
        report_probe(root / "clientapp-probe", timing, args.r1, args.r2)
    return timing, cluster_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--r1", type=int, default=2)
    parser.add_argument("--r2", type=int, default=6)
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated, from: " + ", ".join(BACKENDS))  # fmt: skip
    parser.add_argument("--probe-clientapps", action="store_true",
                        help="record the flower backend's ClientApp processes")  # fmt: skip
    args = parser.parse_args()
    chosen = args.backends.split(",")
    if unknown := sorted(set(chosen) - set(BACKENDS)):
        parser.error(f"--backends: unknown {', '.join(unknown)}; choose from {', '.join(BACKENDS)}")
    root = Path(tempfile.mkdtemp(prefix="fedstruct-backends-"))
    results: dict[str, Timing] = {}
    for backend in ("local", "flower-sim"):
        if backend in chosen:
            results[backend] = measure(backend, backend, args.r1, args.r2, args.repeats, root)
    cluster_start = None
    if "flower" in chosen:
        results["flower"], cluster_start = time_flower(args, root)
    local = results["local"].per_round if "local" in results else None
    print(f"\nfedavg, {SETTINGS}, rounds {args.r1} and {args.r2}, median of {args.repeats}")
    print(f"{'backend':<11}{'per round':>12}{'x local':>10}{'fixed cost':>13}")
    for backend, timing in results.items():
        ratio = f"{timing.per_round / local:>10.1f}" if local else f"{'-':>10}"
        print(f"{backend:<11}{timing.per_round:>10.3f} s{ratio}{timing.fixed:>11.2f} s")
    if cluster_start is not None:
        print(f"loopback cluster start (SuperLink + 3 SuperNodes processes): {cluster_start:.1f} s")


if __name__ == "__main__":
    main()
