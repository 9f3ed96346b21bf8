"""Federated discovery at scale: FedCDnv and fedfci on pigs and on many sites of alarm.

Usage: ``python benchmarks/federated_scale.py [--cases pigs-10 alarm-50 alarm-100 ...]
[--methods fedcdnv fedfci] [--backend local|flower-sim] [--limit 3600] [--reference]
[--out DIR]``

Each run is ``fedstruct run METHOD --network NET --clients K --quiet`` in a child process
(its settings' defaults otherwise: FedCDnv's variable subsets with 15 % latent variables
and 100-2,000 rows a site, fedfci's 200-500 rows a site with every variable), measured
from outside: wall seconds, CPU seconds and the peak resident memory of the process and
every process it started (``resource.RUSAGE_CHILDREN``), the run's checkpoint size, and
from its metrics.json the edge F1, tests, rounds or exchanges. A run past ``--limit``
seconds is stopped and reported so. The runs' one-process search on the pooled rows
(their ``reference`` setting: a benchmark's comparison, not the federated method) is
off unless ``--reference`` is given. Results: ``DIR/federated.json`` and a table printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

FEDSTRUCT = [sys.executable, "-m", "fedstruct.cli"]


def run(
    method: str,
    network: str,
    clients: int,
    backend: str,
    out: Path,
    limit: float,
    reference: bool = False,
) -> dict:
    """One run in a child process, measured from outside (``os.wait4``: the child's own
    CPU and peak memory, with those of the processes it waited for). ``reference``:
    also the run's one-process search on the pooled rows (the ``reference`` setting),
    whose time and memory are then counted with the method's."""
    args = [*FEDSTRUCT, "run", method, "--network", network, "--clients", str(clients),
            "--backend", backend, "--quiet", "--out", str(out), "--overwrite",
            "--set", f"reference={str(reference).lower()}"]  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"{out.name}.stderr"
    start = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > limit:
                proc.kill()
                os.wait4(proc.pid, 0)
                return {"finished": False, "wall": limit}
            time.sleep(0.5)
    code = os.waitstatus_to_exitcode(status)
    record = {
        "finished": code == 0,
        "returncode": code,
        "wall": time.perf_counter() - start,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "stderr": log.read_text().strip().splitlines()[-1:] if code else [],
    }
    checkpoint = out / "checkpoint.safetensors"
    record["checkpoint_mb"] = checkpoint.stat().st_size / 2**20 if checkpoint.exists() else 0.0
    metrics = out / "metrics.json"
    if metrics.exists():
        m = json.loads(metrics.read_text())
        wanted = ("f1_edge", "f1_arrowhead", "tests", "exchanges")
        record.update({k: m[k] for k in wanted if k in m})
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["pigs-10", "alarm-50", "alarm-100"])
    parser.add_argument("--methods", nargs="+", default=["fedcdnv", "fedfci"])
    parser.add_argument("--backend", default="local")
    parser.add_argument("--limit", type=float, default=3600.0)
    parser.add_argument("--reference", action="store_true", help="also the pooled search")
    parser.add_argument("--out", type=Path, default=Path("federated-scale"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "federated.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for case in args.cases:
        network, clients = case.rsplit("-", 1)
        for method in args.methods:
            key = f"{method} {case} {args.backend}"
            if key in results:
                continue
            out = args.out / key.replace(" ", "-")
            results[key] = run(
                method, network, int(clients), args.backend, out, args.limit, args.reference
            )
            store.write_text(json.dumps(results, indent=1))
            print(key, json.dumps(results[key]), flush=True)
    columns = "run | finished | wall s | CPU s | peak MB | checkpoint MB | F1-edge | tests"
    print(f"| {columns} | exchanges |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, r in results.items():
        print(f"| {key} | {r['finished']} | {r['wall']:.0f} | {r.get('cpu', float('nan')):.0f} | "
              f"{r.get('peak_mb', float('nan')):.0f} | {r.get('checkpoint_mb', 0):.1f} | "
              f"{r.get('f1_edge', float('nan')):.3f} | {r.get('tests', float('nan')):.0f} | "
              f"{r.get('exchanges', float('nan')):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
