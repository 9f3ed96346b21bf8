"""Many clients on flower-sim: a run's time against the number of clients, with and
without the grid's window of messages at the simulated SuperLink.

Usage: ``python benchmarks/flower_sim_clients.py [--clients 50 100 200 400]
[--windows 4 0] [--rounds 2] [--out FILE]``

FedAvg's own federation (``fedstruct run fedavg``'s source: alarm rows split
horizontally, ``min_per_client=5``), ``--rounds`` rounds with every client asked, on
:class:`~fedstruct.fl.flower.FlowerSimBackend` with ``messages_per_worker`` = each
``--windows`` value (0: every message of an exchange at once, fedstruct before the
window). Each run in a child process (a fresh Ray); wall seconds of the fit, and the
model's weights compared between the windows (they must be equal). Flower's simulation
runtime scans every stored message for every node ten times a second, so without the
window each sweep costs clients^2 (src/fedstruct/fl/flower/grid.py). Results: a JSON
list in ``--out`` and a table printed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np


def _fit(clients: int, window: int, rounds: int, queue: mp.Queue) -> None:
    from fedstruct.fl.flower.simulation import FlowerSimBackend
    from fedstruct.runs.contract import runnable
    from fedstruct.runs.settings import apply_settings
    from fedstruct.runs.source import checked_clients

    entry = runnable("fedavg")
    given = {"clients": clients, "min_per_client": 5, "rounds": rounds}
    settings = apply_settings(entry.settings(), given, method="fedavg")
    source = entry.resolve(settings)
    model = entry.method(settings, source)
    data = list(checked_clients(source))
    backend = FlowerSimBackend(messages_per_worker=window or 10**9)
    start = time.perf_counter()
    model.fit(data, backend=backend)
    wall = time.perf_counter() - start
    arrays, _ = model.learned_state()
    digest = float(sum(np.abs(a).sum() for a in arrays.values() if a.dtype.kind == "f"))
    queue.put({"clients": clients, "window": window, "wall": wall, "weights": digest})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", nargs="+", type=int, default=[50, 100, 200, 400])
    parser.add_argument("--windows", nargs="+", type=int, default=[4, 0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("flower-sim-clients.json"))
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {(r["clients"], r["window"]) for r in results}
    context = mp.get_context("spawn")
    for clients in args.clients:
        for window in args.windows:
            if (clients, window) in done:
                continue
            queue = context.Queue()
            child = context.Process(target=_fit, args=(clients, window, args.rounds, queue))
            child.start()
            record = queue.get()
            child.join()
            results.append(record)
            args.out.write_text(json.dumps(results, indent=1))
            print(json.dumps(record), flush=True)
    print("| clients | window (messages per worker) | wall s | weights' sum of |w| |")
    print("|---|---|---|---|")
    for r in sorted(results, key=lambda r: (r["clients"], -r["window"])):
        window = r["window"] or "none (all at once)"
        print(f"| {r['clients']} | {window} | {r['wall']:.1f} | {r['weights']:.6f} |")


if __name__ == "__main__":
    main()
