"""Cost at a deployed node of one secure-aggregation message that needs no client.

Flower 1.41 starts a fresh ``flwr-clientapp`` process for every message a SuperNode
receives. A secure sum sends each node four (keys, shares, masked answer, unmask);
three of them need only the session's secrets. This script times, in fresh
processes, what such a process runs for the first of them: Flower's ClientApp
runtime, fedstruct's app, and the app's answer to one ``secagg.keys`` message of a
fedavg run (the settings of the deployed test), for each ``--source`` (a fedstruct
``src`` folder), alternating: the process's wall and CPU time (user + system, less
sensitive to other work on the machine), the answer's own wall time, and whether
the process imported torch. Medians over ``--repeats``.

Usage:
``python benchmarks/secagg_node_stage.py [--repeats R] --source SRC [--source SRC ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from clientapp_start import children_cpu

#: One ClientApp process answering one ``secagg.keys`` message of partition 0; prints
#: the answer's seconds and whether torch was imported.
KEYS_MESSAGE = """
import json, sys, time
import flwr.supernode.cli  # what the flwr-clientapp script imports
from flwr.app import Context, RecordDict
from flwr.app import Message as FlowerMessage
from flwr.supercore.task_identity import TaskIdentity
from fedstruct.deployment.app import client_app
from fedstruct.fl.flower.grid import MESSAGE_TYPE
from fedstruct.fl.flower.records import raise_if_error, to_records
from fedstruct.fl.message import Message
from fedstruct.fl.secagg import protocol as p

TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1
settings = {"clients": 4, "rounds": 1, "samples": 400, "test_samples": 100,
            "secure_aggregation": True}
run_config = {"method": "fedavg", "settings": json.dumps(settings)}
context = Context(1, 1, {"partition-id": 0}, RecordDict(), run_config)
keys = Message(p.KEYS, config={p.SESSION: bytes(16), p.NODE: 0, "round": 1})
message = FlowerMessage(to_records(keys), dst_node_id=1, message_type=MESSAGE_TYPE)
start = time.perf_counter()
reply = client_app(message, context)
seconds = time.perf_counter() - start
raise_if_error(reply.content)
print(json.dumps([seconds, "torch" in sys.modules]))
"""


def one_message(source: Path) -> tuple[float, float, float, bool]:
    """Wall and CPU seconds of one fresh process with ``source``, the answer's seconds,
    and whether it imported torch."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", KEYS_MESSAGE], env=env, check=True,
                          capture_output=True, text=True)  # fmt: skip
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    answer, torch = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu, float(answer), bool(torch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--source", type=Path, action="append", required=True)
    args = parser.parse_args()
    sources = [s.resolve() for s in args.source]
    runs: dict[Path, list[tuple[float, float, float, bool]]] = {s: [] for s in sources}
    load_before = os.getloadavg()[0]
    for source in sources:  # warm the file cache once
        one_message(source)
    for _ in range(args.repeats):
        for source in sources:
            runs[source].append(one_message(source))
    print(f"{args.repeats} fresh processes per source, alternating; {os.cpu_count()} CPUs, "
          f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n")  # fmt: skip
    print("| fedstruct source | process wall (s) | process CPU (s) | answer (s) | torch |")
    print("|---|---:|---:|---:|---|")
    for source, values in runs.items():
        wall, cpu, answer, torch = zip(*values, strict=True)
        medians = [statistics.median(v) for v in (wall, cpu, answer)]
        print(f"| `{source}` | " + " | ".join(f"{m:.2f}" for m in medians)
              + f" | {'imported' if any(torch) else 'not imported'} |")  # fmt: skip


if __name__ == "__main__":
    main()
