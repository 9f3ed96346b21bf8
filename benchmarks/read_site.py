"""Speed and memory of reading a user's own site files (``fedstruct.data.sites``).

Usage: ``python benchmarks/read_site.py [--rows N] [--columns C] [--repeats R] [--sites S]
[--readers] [--against SRC]``

1. Speed: one CSV of ``N`` rows x ``C`` columns (3/5 continuous, 1/5 integer codes
   0..4, 1/5 text levels), written to a temporary folder. ``read_site`` (read +
   validate + encode + ``ClientData``) against pandas' own ``read_csv`` of the same
   file, alternating, median of ``R`` runs each (goal: ratio <= 1.5); with the
   median CPU time (user + system, all threads) of each path, their ratio, and the
   load average before and after, since both paths use every core and the machine
   may be shared.
   A breakdown of one run by step follows.
2. Memory: each path in a fresh child process; the peak resident set (``VmHWM`` of
   ``/proc/self/status``, which starts afresh at ``exec``; ``ru_maxrss`` does not: it
   keeps the parent's peak) minus the child's resident set after imports, against the
   loaded frame's size (``DataFrame.memory_usage(deep=True)``) (goal: read_site <= 2x).
3. A manifest of ``S`` small sites (200 rows x 8 columns each) read by
   ``read_federation`` (goal: under 5 s).
4. With ``--readers``: the maintained CSV readers fedstruct could read with, each
   alone in a fresh child process, ``R`` times in turn (median wall, CPU and peak
   resident set above the baseline, against the loaded frame): pandas' C engine as
   is and with the text columns (found in a 1,000-row head) read as ``category``,
   pandas' pyarrow engine, ``pyarrow.csv`` (+ ``to_pandas``) and polars (+
   ``to_pandas``; skipped unless installed). Only pandas' C engine types a file as
   ``pandas.read_csv`` does (``tests/data/test_sites.py::test_reading_equals_pandas``).
5. With ``--against SRC`` (another checkout's ``src/``, e.g. before a change):
   ``pandas.read_csv``, ``read_site`` from ``SRC`` and ``read_site`` from this checkout,
   each in a fresh child process, in turn, ``R`` rounds (median wall and CPU), so that
   both versions are timed under the same load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from fedstruct.data.client import ClientData
from fedstruct.data.sites import (
    encode_site,
    infer_kinds,
    merge_schemas,
    read_federation,
    read_site,
    read_table,
    site_schema,
)

CHILD = """
import json, sys
import pandas as pd
from fedstruct.data.sites import read_site
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) * 1024
base = status("VmRSS")
if sys.argv[1] == "pandas":
    frame = pd.read_csv(sys.argv[2])
    size = int(frame.memory_usage(deep=True).sum())
else:
    read_site(sys.argv[2])
    size = 0
print(json.dumps({"base": base, "peak": status("VmHWM"), "frame": size}))
"""


READER = """
import json, resource, sys, time
import pandas as pd
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) * 1024
which, path = sys.argv[1], sys.argv[2]
if which.startswith("pyarrow"):
    import pyarrow.csv
elif which.startswith("polars"):
    import polars as pl
base = status("VmRSS")
before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
if which == "pandas C":
    frame = pd.read_csv(path)
elif which == "pandas C, text as category":
    head = pd.read_csv(path, nrows=1000)
    text = [c for c in head.columns if head[c].dtype.kind not in "biufcmM"]
    frame = pd.read_csv(path, dtype=dict.fromkeys(text, "category"))
elif which == "pandas pyarrow engine":
    frame = pd.read_csv(path, engine="pyarrow")
elif which == "pyarrow.csv":
    table = pyarrow.csv.read_csv(path)
    frame = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
elif which == "polars":
    table = pl.read_csv(path)
    frame = table.to_pandas()
    del table
wall = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"wall": wall, "cpu": cpu, "peak": status("VmHWM") - base}))
"""
AGAINST = """
import json, resource, sys, time
import pandas as pd
from fedstruct.data.sites import read_site
which, path = sys.argv[1], sys.argv[2]
pd.read_csv(path, nrows=10)
before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
if which == "pandas.read_csv":
    pd.read_csv(path)
else:
    read_site(path)
wall = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"wall": wall, "cpu": cpu}))
"""
#: The readers compared by ``--readers``, and the module each needs.
READERS = {
    "pandas C": "pandas",
    "pandas C, text as category": "pandas",
    "pandas pyarrow engine": "pyarrow",
    "pyarrow.csv": "pyarrow",
    "polars": "polars",
}


def write_table(path: Path, rows: int, columns: int, seed: int = 0) -> None:
    """A CSV mixing continuous, integer-coded and text columns."""
    rng = np.random.default_rng(seed)
    levels = np.array(["low", "mid", "high", "none"])
    data = {}
    for j in range(columns):
        if j % 5 < 3:
            data[f"x{j}"] = rng.normal(size=rows).round(4)
        elif j % 5 == 3:
            data[f"c{j}"] = rng.integers(0, 5, size=rows)
        else:
            data[f"t{j}"] = levels[rng.integers(0, 4, size=rows)]
    pd.DataFrame(data).to_csv(path, index=False)


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU (user + system, every thread) seconds of one call."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def speed(path: Path, repeats: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of pandas.read_csv and of read_site, alternating."""
    runs: dict[str, list[tuple[float, float]]] = {"pandas.read_csv": [], "read_site": []}
    for _ in range(repeats):
        runs["pandas.read_csv"].append(timed(lambda: pd.read_csv(path)))
        runs["read_site"].append(timed(lambda: read_site(path)))
    return {
        name: (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
        for name, times in runs.items()
    }


def breakdown(path: Path) -> dict[str, float]:
    """Seconds of each step of read_site, through the public functions (one run)."""
    steps = {}
    start = time.perf_counter()
    frame = read_table(path)
    steps["read_table"] = time.perf_counter() - start
    start = time.perf_counter()
    schema = merge_schemas([site_schema("s", frame, infer_kinds(frame))])
    steps["kinds + schema"] = time.perf_counter() - start
    start = time.perf_counter()
    client = encode_site("s", frame, schema).client
    steps["encode + ClientData"] = time.perf_counter() - start
    start = time.perf_counter()
    ClientData("again", client.rows)
    steps["of which ClientData's checks"] = time.perf_counter() - start
    return steps


def memory(path: Path, which: str) -> dict[str, int]:
    """Baseline and peak RSS of a child process reading ``path`` one way."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, which, str(path)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def readers(path: Path, repeats: int, frame: int) -> None:
    """Print each installed reader's median wall, CPU and peak memory (fresh processes)."""
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(repeats):
        for name, module in READERS.items():
            if importlib.util.find_spec(module) is None:
                continue
            out = subprocess.run(
                [sys.executable, "-c", READER, name, str(path)],
                check=True,
                capture_output=True,
                text=True,
            )
            runs.setdefault(name, []).append(json.loads(out.stdout))
    for name, found in runs.items():
        wall, cpu, peak = (statistics.median(r[k] for r in found) for k in ("wall", "cpu", "peak"))
        print(
            f"  {name}: {wall:.2f} s (CPU {cpu:.2f} s), "
            f"peak {peak / 1e6:.0f} MB = {peak / frame:.2f} x frame"
        )
    for name, module in READERS.items():
        if name not in runs:
            print(f"  {name}: skipped ({module} is not installed)")


def against(path: Path, repeats: int, other: Path) -> None:
    """Print pandas' and both versions' median wall and CPU (fresh processes, in turn)."""
    here = Path(__file__).resolve().parents[1] / "src"
    paths = {"pandas.read_csv": here, f"read_site ({other})": other, "read_site (here)": here}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, src in paths.items():
            which = name.split(" ")[0]
            out = subprocess.run(
                [sys.executable, "-c", AGAINST, which, str(path)],
                env={**os.environ, "PYTHONPATH": str(src)},
                check=True,
                capture_output=True,
                text=True,
            )
            runs[name].append(json.loads(out.stdout))
    base = {k: statistics.median(r[k] for r in runs["pandas.read_csv"]) for k in ("wall", "cpu")}
    for name, found in runs.items():
        wall, cpu = (statistics.median(r[k] for r in found) for k in ("wall", "cpu"))
        print(
            f"  {name}: {wall:.2f} s (CPU {cpu:.2f} s), "
            f"ratio {wall / base['wall']:.2f}, CPU ratio {cpu / base['cpu']:.2f}"
        )


def manifest(folder: Path, sites: int) -> Path:
    """A manifest of ``sites`` small CSV files."""
    rng = np.random.default_rng(1)
    entries = []
    for k in range(sites):
        frame = pd.DataFrame(
            {
                **{f"x{j}": rng.normal(size=200).round(3) for j in range(5)},
                "c": rng.integers(0, 3, size=200),
                "t": np.array(["a", "b"])[rng.integers(0, 2, size=200)],
                "y": rng.integers(0, 2, size=200),
            }
        )
        frame.to_csv(folder / f"site{k}.csv", index=False)
        entries.append({"path": f"site{k}.csv"})
    path = folder / "sites.yaml"
    path.write_text(yaml.safe_dump({"sites": entries, "supervised": ["y"]}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sites", type=int, default=100)
    parser.add_argument(
        "--readers", action="store_true", help="also compare the maintained CSV readers"
    )
    parser.add_argument(
        "--against", type=Path, help="also time read_site from this src/ folder, in turn"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "site.csv"
        write_table(path, args.rows, args.columns)
        print(
            f"file: {args.rows:,} rows x {args.columns} columns, {path.stat().st_size / 1e6:.0f} MB"
        )
        print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        times = speed(path, args.repeats)
        for name, (wall, cpu) in times.items():
            print(f"{name}: {wall:.2f} s (CPU {cpu:.2f} s)")
        ratio = times["read_site"][0] / times["pandas.read_csv"][0]
        cpu_ratio = times["read_site"][1] / times["pandas.read_csv"][1]
        print(f"ratio {ratio:.2f} (goal <= 1.5), CPU ratio {cpu_ratio:.2f}")
        print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        for step, seconds in breakdown(path).items():
            print(f"  {step}: {seconds:.2f} s")
        ref, ours = memory(path, "pandas"), memory(path, "site")
        frame = ref["frame"]
        for name, m in (("pandas.read_csv", ref), ("read_site", ours)):
            extra = m["peak"] - m["base"]
            times = extra / frame
            print(f"{name}: peak RSS above baseline {extra / 1e6:.0f} MB = {times:.2f} x frame")
        print(f"loaded frame (memory_usage deep=True): {frame / 1e6:.0f} MB")
        if args.readers:
            print(f"maintained readers alone (median of {args.repeats}, fresh processes):")
            readers(path, args.repeats, frame)
        if args.against:
            print(f"against {args.against} (median of {args.repeats}, fresh processes in turn):")
            print("  load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
            against(path, args.repeats, args.against.resolve())
            print("  load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        sites = folder / "many"
        sites.mkdir()
        source = manifest(sites, args.sites)
        start = time.perf_counter()
        federation = read_federation(source)
        took = time.perf_counter() - start
        print(f"manifest of {len(federation.clients)} sites: {took:.2f} s (goal < 5 s)")


if __name__ == "__main__":
    main()
