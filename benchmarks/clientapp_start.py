"""Start of the ClientApp process that every message of a deployed fedavg run starts.

Flower 1.41's SuperNode starts a fresh ``flwr-clientapp`` process for every message
it receives (its SuperExec launches one per task). Before that process trains, it
imports Flower's ClientApp runtime and fedstruct's app, then builds the node's client:
the method, and partition 0 of the federation the run's settings describe. This
script times that program alone, in fresh processes under ``python -X importtime``,
for each ``--source`` (a fedstruct ``src`` folder), alternating between them: the
process's wall and CPU time (user + system; less sensitive to other work on the
machine) and the seconds its imports took (the sum of the import log's top-level
entries), medians over ``--repeats``. The import log slows imports a little;
compare sources with each other, not with a plain start.

With ``--train`` each process also answers one training message (local SGD on the
partition, as every round's training message does; ``torch._dynamo`` in the import
log shows whether an optimizer imported it). With ``--stage`` each process is instead
the ClientApp of a message answered without the method's client (HELLO, or secure
aggregation's keys, shares and unmask stages): Flower's runtime, fedstruct's app and
the secure-aggregation client's module, no method and no data.

Usage:
``python benchmarks/clientapp_start.py [--repeats R] [--train | --stage]``
``--source SRC [--source SRC ...]``
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: What a fedavg message's ClientApp process runs before training (the settings of
#: ``benchmarks/backends.py``).
CLIENT_MESSAGE = """
import json
import flwr.supernode.cli  # what the flwr-clientapp script imports
from fedstruct.deployment.app import _partition
settings = {"network": "asia", "clients": 3, "samples": 3000, "test_samples": 1000, "rounds": 3}
model, own = _partition("fedavg", json.dumps(settings), 0)
client = model.make_client(own)
"""
#: ``--train``: the process then answers one training message, as a round's does.
TRAIN_MESSAGE = """
from fedstruct.fl import Message
from fedstruct.fl.params import get_params
from fedstruct.methods.fedavg.client import FIT
client.fit(Message(FIT, arrays=get_params(client.model), config={"round": 1}))
"""
#: ``--stage``: a message answered without the client (a secure-aggregation stage).
STAGE_MESSAGE = """
import flwr.supernode.cli  # what the flwr-clientapp script imports
import fedstruct.deployment.app
from fedstruct.fl.secagg import client
"""
#: ``import time: SELF | CUMULATIVE | NAME`` (microseconds; NAME indented by depth)
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def import_seconds(log: str) -> tuple[float, float]:
    """Seconds of all imports (the top-level entries) and of ``torch``, from the text
    of one ``-X importtime`` log."""
    total = torch = 0.0
    for line in log.splitlines():
        match = IMPORT_LINE.match(line)
        if match is None:
            continue
        cumulative, depth, name = int(match[2]) / 1e6, len(match[3]), match[4]
        total += cumulative if depth == 0 else 0.0
        torch += cumulative if name == "torch" else 0.0
    return total, torch


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_start(source: Path, scratch: Path, program: str) -> tuple[float, float, float, float]:
    """Wall, CPU, import and torch-import seconds of one ClientApp ``program`` with ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    log = scratch / "imports.log"
    cpu = children_cpu()
    started = time.perf_counter()
    with log.open("w") as err:
        subprocess.run([sys.executable, "-X", "importtime", "-c", program], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    return (wall, cpu, *import_seconds(log.read_text(errors="replace")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--source", type=Path, action="append", required=True)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--train", action="store_true", help="also answer a training message")
    kind.add_argument("--stage", action="store_true", help="a stage answered without a client")
    args = parser.parse_args()
    program = CLIENT_MESSAGE + (TRAIN_MESSAGE if args.train else "")
    program = STAGE_MESSAGE if args.stage else program
    sources = [s.resolve() for s in args.source]
    runs: dict[Path, list[tuple[float, float, float, float]]] = {s: [] for s in sources}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="fedstruct-clientapp-") as scratch:
        for source in sources:  # warm the file cache once
            one_start(source, Path(scratch), program)
        for _ in range(args.repeats):
            for source in sources:
                runs[source].append(one_start(source, Path(scratch), program))
    print(f"{args.repeats} fresh processes per source, alternating; {os.cpu_count()} CPUs, "
          f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n")  # fmt: skip
    print("| fedstruct source | wall (s) | CPU (s) | imports (s) | of which torch (s) |")
    print("|---|---:|---:|---:|---:|")
    for source, values in runs.items():
        medians = [statistics.median(column) for column in zip(*values, strict=True)]
        print(f"| `{source}` | " + " | ".join(f"{m:.2f}" for m in medians) + " |")


if __name__ == "__main__":
    main()
