"""issue 53, item 6: a run rewrites progress.json after every round, and
:func:`~fedstruct.runs.progress.run_progress` says where a run folder's run stands."""

from __future__ import annotations

import json
import time

import pytest

from fedstruct.errors import ConfigError
from fedstruct.fl.rounds import RoundReport
from fedstruct.runs import execute
from fedstruct.runs.folder import PROGRESS_FILE, folder_lock, read_record, write_record
from fedstruct.runs.progress import ProgressFile, progress_of, read_progress, run_progress

SETTINGS = {"network": "asia", "clients": 3, "rounds": 3, "samples": 600, "test_samples": 200}
NAMES = ("client-1", "client-2", "client-3")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    execute("fedavg", [SETTINGS], out)
    return out


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    out = tmp_path_factory.mktemp("stopped") / "run"
    execute("fedavg", [SETTINGS], out, stop_after=1)
    return out


def test_a_run_leaves_its_last_round_in_progress_json(finished):
    """The last round, the sites asked and answered, the bytes (metrics.json's) and the
    round's record (history.json's numbers); listed as the run's file, so --overwrite
    deletes it."""
    progress = read_progress(finished)
    history = json.loads((finished / "history.json").read_text())
    metrics = json.loads((finished / "metrics.json").read_text())
    assert (progress["round"], progress["rounds"], progress["done"]) == (3, 3, True)
    assert tuple(progress["asked"]) == NAMES and tuple(progress["answered"]) == NAMES
    assert progress["bytes_down"] == metrics["bytes_down"]
    assert progress["bytes_up"] == metrics["bytes_up"]
    assert progress["metrics"] == history[-1]
    assert progress["timed_rounds"] == 3 and progress["seconds_in_rounds"] > 0
    assert PROGRESS_FILE in read_record(finished)["files"]
    assert not [p for p in finished.iterdir() if p.name.startswith(f".{PROGRESS_FILE}")]


def test_a_finished_run_stands_at_its_last_round_with_its_metrics(finished):
    p = run_progress(finished)
    assert (p.method, p.state, p.round, p.rounds, p.remaining) == ("fedavg", "finished", 3, 3, 0)
    assert p.elapsed == read_record(finished)["seconds"]
    assert p.metrics == json.loads((finished / "metrics.json").read_text())
    assert p.ended


def test_a_stopped_run_stands_at_the_round_it_stopped_after(stopped):
    p = run_progress(stopped)
    assert (p.state, p.round, p.rounds, p.remaining) == ("stopped", 1, 3, None)
    history = json.loads((stopped / "history.json").read_text())
    assert p.metrics == history[0]
    assert p.ended


def _report(rnd: int, seconds: float) -> RoundReport:
    return RoundReport(rnd, 10, False, NAMES, NAMES[:2], 100 * rnd, 50 * rnd, seconds, {})


def test_the_remaining_time_is_the_mean_round_time_times_the_rounds_left(stopped, tmp_path):
    """While the run runs (its folder's lock held by a live process): unknown before a
    round has finished, then the mean of the finished rounds' times times the rounds
    left; the elapsed time counts from when the process took the folder's lock."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(stopped, out)
    (out / PROGRESS_FILE).unlink()
    (out / "checkpoint.safetensors").unlink()
    locked = time.time()
    with folder_lock(out):
        write_record(out, "running")
        before = run_progress(out)
        assert (before.state, before.round, before.remaining) == ("running", 0, None)
        clock = iter([1000.0, 1004.0, 1010.0])
        progress = ProgressFile(out, clock=lambda: next(clock))
        progress(_report(1, 4.0))
        progress(_report(2, 6.0))
        now = time.time() + 100
        p = run_progress(out, now=now)
    assert (p.state, p.round, p.rounds) == ("running", 2, 10)
    assert p.remaining == pytest.approx(5.0 * 8)
    assert 100 <= p.elapsed <= now - locked + 1  # the lock records whole seconds
    assert p.asked == NAMES and p.answered == NAMES[:2]
    assert (p.bytes_down, p.bytes_up) == (200, 100)


def test_a_folder_that_holds_no_run_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="is not a folder"):
        run_progress(tmp_path / "missing")
    with pytest.raises(ConfigError, match=r"holds no run\.json"):
        run_progress(tmp_path)


def test_a_progress_file_that_is_not_fedstruct_s_is_refused(finished, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(finished, out)
    (out / PROGRESS_FILE).write_text('{"round": "three"}\n')
    with pytest.raises(ConfigError, match="is not a progress file of this fedstruct"):
        run_progress(out)


def test_a_deployed_runs_progress_alone_says_where_it_stands(tmp_path):
    """``progress_of``: what ``fedstruct status ID --superlink`` shows from the progress
    the SuperLink gives (no folder on this machine): the same round, sites, bytes and
    remaining time as the folder's, the elapsed time from the progress's own clock."""
    clock = iter([1000.0, 1004.0, 1010.0])
    write = ProgressFile(tmp_path, clock=lambda: next(clock))
    write(_report(1, 4.0))
    write(_report(2, 6.0))
    progress = read_progress(tmp_path)
    running = progress_of(tmp_path, "fedavg", "running", progress, now=1100.0)
    assert (running.method, running.state, running.round, running.rounds) == (
        "fedavg", "running", 2, 10
    )  # fmt: skip
    assert running.remaining == pytest.approx(5.0 * 8) and running.elapsed == 100.0
    assert running.asked == NAMES and running.answered == NAMES[:2]
    assert (running.bytes_down, running.bytes_up) == (200, 100)
    stopped = progress_of(tmp_path, "fedavg", "stopped", progress, now=1100.0)
    assert (stopped.elapsed, stopped.remaining, stopped.ended) == (10.0, None, True)
