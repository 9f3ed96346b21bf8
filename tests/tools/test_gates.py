"""CI's scripts propagate a failing gate: ``.ci/check`` runs every gate and exits 1
naming each that failed; ``.ci/run`` runs ``make check`` before ``make test`` and stops
when it fails. The gates' own tools are stand-ins here (each records its arguments and
fails when told to); the tools themselves are tested beside this file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: A stand-in for ruff, python or make: records its call (name and arguments) as one
#: line of $CALLS, and fails when the call contains $FAIL_ON.
STAND_IN = """#!/usr/bin/env bash
call="$(basename "$0") $*"
echo "$call" >> "$CALLS"
if [ -n "${FAIL_ON:-}" ] && [[ "$call" == *"$FAIL_ON"* ]]; then echo "stand-in failing"; exit 1; fi
"""


@pytest.fixture
def stand_ins(tmp_path: Path) -> Path:
    """A folder of stand-ins named ruff, python, make and chromium."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("ruff", "python", "make", "chromium"):
        (folder / name).write_text(STAND_IN)
        (folder / name).chmod(0o755)
    return folder


def run(repo: Path, script: str, stand_ins: Path, fail_on: str = "") -> tuple[int, str, list[str]]:
    """``repo/.ci/script`` with the stand-ins; its exit code, output and their calls."""
    calls = stand_ins.parent / "calls.txt"
    env = {
        **os.environ,
        "PATH": f"{stand_ins}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": str(stand_ins / "python"),
        "RUFF": str(stand_ins / "ruff"),
        "CALLS": str(calls),
        "FAIL_ON": fail_on,
    }
    done = subprocess.run(
        [str(repo / ".ci" / script)], env=env, capture_output=True, text=True, timeout=60
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    return done.returncode, done.stdout + done.stderr, lines


GATES = [
    "ruff check src tests benchmarks tools",
    "ruff format --check src tests benchmarks tools",
    "python tools/check_layers.py",
    "python tools/check_cycles.py",
    "python tools/mypy_ratchet.py",
]


def test_check_runs_every_gate_and_passes_when_all_pass(repo, stand_ins):
    code, output, calls = run(repo, "check", stand_ins)
    assert (code, calls) == (0, GATES)
    assert "gate failed" not in output


@pytest.mark.parametrize(
    ("fail_on", "gate"),
    [
        ("ruff check", "ruff check"),
        ("format --check", "ruff format"),
        ("check_layers", "import layers"),
        ("check_cycles", "import cycles"),
        ("mypy_ratchet", "mypy ratchet"),
    ],
)
def test_check_fails_naming_the_gate_and_still_runs_the_others(repo, stand_ins, fail_on, gate):
    code, output, calls = run(repo, "check", stand_ins, fail_on=fail_on)
    assert (code, calls) == (1, GATES)
    assert [line for line in output.splitlines() if line.startswith("gate failed")] == [
        f'gate failed: {gate} (docs/architecture.md, "Gates")'
    ]


def test_ci_runs_the_gates_before_the_tests(repo, stand_ins):
    code, _, calls = run(repo, "run", stand_ins)
    assert (code, calls) == (0, ["make check", "make test"])


def test_ci_fails_on_a_failing_gate_without_running_the_tests(repo, stand_ins):
    code, _, calls = run(repo, "run", stand_ins, fail_on="check")
    assert (code, calls) == (1, ["make check"])


def test_ruff_s_gate_fails_on_a_lint_error(repo, tmp_path):
    """The real ruff, as pinned, on a file with an unused import (what the stand-ins
    above assume of it)."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    ruff = Path(sys.executable).with_name("ruff")  # installed with the dev extras
    assert ruff.is_file(), f"no ruff beside {sys.executable}"
    done = subprocess.run(
        [str(ruff), "check", "--config", str(repo / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "F401" in done.stdout
