"""Start-up time of the commands that should load only what they use (issue 30, item 4).

Usage: ``python benchmarks/cli_start.py [--repeats R] [--source SRC]``

Each command runs ``R`` times in a fresh Python process (``python -m fedstruct.cli
...``, as the ``fedstruct`` script does), alternating between commands; the table gives
the median and the fastest wall time of each:

- ``fedstruct --help``;
- ``fedstruct run fedavg --help`` (goal: <= 0.8 s on an idle 2-core machine);
- ``fedstruct export DIR --format dot`` on the folder of a FedCDnv run made first (its
  ``quick`` settings; goal: <= 0.8 s);
- importing the Flower ClientApp's module (``fedstruct.deployment.app``),
  which every message of a deployed run starts;
- ``python -c pass``: the interpreter's own start, for scale.

``--source`` is the ``src`` folder of the fedstruct to time (default: this checkout's),
so one script times two versions on the same machine. The load average before and
after is printed beside the figures: other work on the machine slows every start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAKE_RUN = """
import sys
from pathlib import Path
from fedstruct.runs.contract import execute, runnable
execute("fedcdnv", [dict(runnable("fedcdnv").quick)], Path(sys.argv[1]))
"""

CLIENT_APP = "import fedstruct.deployment.app"


def timed(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of ``command`` (its output discarded)."""
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--source", type=Path, default=Path(__file__).parents[1] / "src")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.source.resolve())}
    python = [sys.executable]
    cli = [*python, "-m", "fedstruct.cli"]
    with tempfile.TemporaryDirectory(prefix="fedstruct-cli-start-") as scratch:
        run = Path(scratch) / "fedcdnv"
        subprocess.run([*python, "-c", MAKE_RUN, str(run)], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        commands = {
            "python -c pass": [*python, "-c", "pass"],
            "fedstruct --help": [*cli, "--help"],
            "fedstruct run fedavg --help": [*cli, "run", "fedavg", "--help"],
            "fedstruct export DIR --format dot (FedCDnv)": [*cli, "export", str(run), "--format",
                                                            "dot"],
            "import fedstruct.deployment.app": [*python, "-c", CLIENT_APP],
        }  # fmt: skip
        load_before = os.getloadavg()
        times: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # warm the file cache once
            timed(command, env)
        for _ in range(args.repeats):
            for name, command in commands.items():
                times[name].append(timed(command, env))
        load_after = os.getloadavg()
    print(f"fedstruct from {args.source.resolve()}, {args.repeats} fresh processes each, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"load average before: {load_before[0]:.2f}, after: {load_after[0]:.2f}\n")
    print("| command | median (s) | fastest (s) |\n|---|---:|---:|")
    for name, values in times.items():
        print(f"| `{name}` | {statistics.median(values):.2f} | {min(values):.2f} |")


if __name__ == "__main__":
    main()
