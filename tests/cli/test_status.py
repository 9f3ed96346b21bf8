"""issue 53, item 6: ``fedstruct status DIR [--watch]`` and its one-line refusals."""

from __future__ import annotations

import threading

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.cli import status as status_command
from fedstruct.runs import contract, execute
from fedstruct.runs.progress import ProgressFile

runner = CliRunner()
SETTINGS = {"network": "asia", "clients": 3, "rounds": 3, "samples": 600, "test_samples": 200}
#: Seconds to wait for the other thread's next step: far above what it needs; a test
#: that reaches it has hung, and fails instead of waiting for ever.
PATIENCE = 300.0


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_status_of_a_finished_run(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [SETTINGS], out)
    result = invoke("status", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{out}: a fedavg run, finished"
    assert "  round      3 of 3" in lines
    assert "  sites      3 asked, 3 answered" in lines
    assert any(line.startswith("  bytes      ") and " down, " in line for line in lines)
    assert any(line.startswith("  metrics    test_accuracy ") for line in lines)
    assert not any("remaining" in line for line in lines)


def test_status_of_a_run_stopped_after_round_one_of_three(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [SETTINGS], out, stop_after=1)
    result = invoke("status", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{out}: a fedavg run, stopped"
    assert "  round      1 of 3" in lines
    last = next(line for line in lines if line.startswith("  last round "))
    assert "test_accuracy" in last and "round 1" not in last


def test_watch_follows_a_run_round_by_round_until_it_finishes(tmp_path, monkeypatch):
    """A real run in another thread, in lockstep with the watch: the run waits before its
    first round and after writing each round's progress until the watch has looked
    again (its sleep replaced: no test waits out an interval). The watch shows round 0
    with the remaining time unknown, then each round with an estimate, and ends by
    itself once the run has finished."""
    out = tmp_path / "run"
    looked, written = threading.Semaphore(0), threading.Semaphore(0)
    started = threading.Event()

    class InLockstep(ProgressFile):
        def __post_init__(self) -> None:
            super().__post_init__()
            started.set()
            assert looked.acquire(timeout=PATIENCE)

        def __call__(self, report) -> None:
            super().__call__(report)
            written.release()
            if not report.done:
                assert looked.acquire(timeout=PATIENCE)

    monkeypatch.setattr(contract, "ProgressFile", InLockstep)
    run = threading.Thread(target=execute, args=("fedavg", [SETTINGS], out))
    run.start()
    intervals = []

    def next_look(seconds: float) -> None:
        intervals.append(seconds)
        looked.release()
        while not written.acquire(timeout=0.05):
            if not run.is_alive():
                return

    monkeypatch.setattr(status_command, "_sleep", next_look)
    try:
        assert started.wait(PATIENCE)
        result = invoke("status", str(out), "--watch", "--interval", "2")
    finally:
        for _ in range(4):  # never leave the run waiting
            looked.release()
        run.join(PATIENCE)
    assert result.exit_code == 0, result.output
    assert set(intervals) == {2.0}
    blocks = [block for block in result.output.split(f"{out}: ") if block]
    assert blocks[0].startswith("a fedavg run, running")
    assert "round      0 of 3" in blocks[0]
    assert "remaining  unknown (no round has finished yet)" in blocks[0]
    for rnd in (1, 2):
        block = next(b for b in blocks if f"round      {rnd} of 3" in b)
        assert "running" in block and "remaining  about " in block
    assert blocks[-1].startswith("a fedavg run, finished") and "round      3 of 3" in blocks[-1]
    assert "remaining" not in blocks[-1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing-folder"], "missing-folder is not a folder"),
        (["."], "holds no run.json, so it is not the folder of a fedstruct run"),
        (["abc", "--superlink", "127.0.0.1:1"], "abc is not a run id"),
        (["7", "--control-key", "x"], "are for a deployed run: add --superlink"),
        (["7", "--superlink", "127.0.0.1:1"], "run 7: cannot tell a run's status: the Super"),
        (["7", "--superlink", "no-port"], "no-port"),
        (["x", "--interval", "0"], "--interval 0: give the seconds between refreshes"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke("status", *args)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert message in result.output
