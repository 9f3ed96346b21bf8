"""mypy on a ratchet: a file's count of mypy errors may only fall.

Usage, from the repository's root::

    python tools/mypy_ratchet.py                  # run mypy (pyproject's [tool.mypy]), compare
    python tools/mypy_ratchet.py --write          # record today's counts in the baseline
    python tools/mypy_ratchet.py --output FILE    # compare mypy's saved output instead

The baseline (:data:`BASELINE`) holds one ``count path`` line per file with errors.
Exits 1, naming the files and printing their errors, when a file has more errors than
the baseline records (a file it does not name has 0); exits 0 otherwise, and when
counts fell says how to lower the baseline (this script never writes it unless told:
CI must not change the tree). Counted per file, so that fixing one file does not pay
for breaking another.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from import_graph import shown

__all__ = ["BASELINE", "Verdict", "compare", "count", "main", "read_baseline", "write_baseline"]

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
_ERROR = re.compile(r"^(?P<path>[^:\s][^:]*):\d+(?::\d+)?: error: ")
#: The last line of every mypy run that checked the files (with or without errors).
_SUMMARY = re.compile(r"^(Success: no issues found|Found \d+ errors? in \d+ files?)", re.M)
_HEADER = (
    "# mypy errors per file; tools/mypy_ratchet.py fails when a count rises.\n"
    "# Lower it after a fix: python tools/mypy_ratchet.py --write (mypy as pinned in\n"
    "# pyproject's dev extras, in the environment make installs).\n"
)


def count(output: str) -> Counter[str]:
    """Errors per file in mypy's text output (notes and the summary are not errors)."""
    return Counter(match["path"] for line in output.splitlines() if (match := _ERROR.match(line)))


def read_baseline(path: Path) -> Counter[str]:
    """The counts a baseline file records (``count path`` lines; ``#`` starts a comment)."""
    counts: Counter[str] = Counter()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        value, _, name = line.partition(" ")
        if not value.isdigit() or not name.strip():
            raise ValueError(f"{path}:{number}: expected 'count path', got {raw!r}")
        counts[name.strip()] = int(value)
    return counts


def write_baseline(path: Path, counts: Counter[str]) -> None:
    """Record ``counts`` (files with errors only, sorted by path)."""
    lines = [f"{counts[name]} {name}\n" for name in sorted(counts) if counts[name] > 0]
    total = f"# {sum(counts.values())} errors in {len(lines)} files\n"
    path.write_text(_HEADER + total + "".join(lines), encoding="utf-8")


@dataclass(frozen=True)
class Verdict:
    """How today's counts compare with the baseline's.

    Attributes
    ----------
    rose
        Each file with more errors than recorded: (path, recorded, now).
    fell
        Each file with fewer errors than recorded: (path, recorded, now).
    """

    rose: list[tuple[str, int, int]]
    fell: list[tuple[str, int, int]]


def compare(now: Counter[str], baseline: Counter[str]) -> Verdict:
    """Which files rose above and which fell below ``baseline``."""
    rose, fell = [], []
    for name in sorted(set(now) | set(baseline)):
        before, after = baseline[name], now[name]
        if after > before:
            rose.append((name, before, after))
        elif after < before:
            fell.append((name, before, after))
    return Verdict(rose, fell)


def run_mypy() -> str:
    """mypy's text output on the files pyproject's ``[tool.mypy]`` names."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-color-output"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    # 1 means errors found, but also "No module named mypy": without mypy's summary line
    # nothing was checked, and a count of 0 would pass the gate
    if done.returncode not in (0, 1) or not _SUMMARY.search(done.stdout):
        raise RuntimeError(f"mypy failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def main(argv: list[str]) -> int:
    """Compare (or with ``--write``, record) mypy's counts per file; see the module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the counts as the baseline")
    parser.add_argument("--output", type=Path, help="mypy's saved text output, instead of mypy")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="the baseline file")
    args = parser.parse_args(argv)
    baseline = shown(args.baseline)
    try:
        output = args.output.read_text(encoding="utf-8") if args.output else run_mypy()
    except RuntimeError as failed:
        print(f"mypy: {failed}")
        return 1
    now = count(output)
    if args.write:
        write_baseline(args.baseline, now)
        print(f"mypy: recorded {sum(now.values())} errors in {len(now)} files in {baseline}")
        return 0
    recorded = read_baseline(args.baseline)
    verdict = compare(now, recorded)
    if verdict.rose:
        for name, before, after in verdict.rose:
            print(f"{name}: {after} mypy errors, the baseline allows {before}")
            for line in output.splitlines():
                if line.startswith(f"{name}:"):
                    print(f"  {line}")
        print(
            f"mypy: {len(verdict.rose)} file(s) have more errors than {baseline} "
            "records; fix the new errors (a count may only fall)"
        )
        if verdict.fell and sum(now.values()) <= sum(recorded.values()):
            print(
                "  If these errors moved with code from the files that fell (a module moved "
                "or split), record the new counts: python tools/mypy_ratchet.py --write"
            )
        return 1
    if verdict.fell:
        fell = ", ".join(f"{name} {before} -> {after}" for name, before, after in verdict.fell)
        print(f"mypy: fewer errors than the baseline ({fell}).")
        print(f"  Lower it: python tools/mypy_ratchet.py --write, and commit {baseline}")
    print(f"mypy: {sum(now.values())} errors in {len(now)} files, none above the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
