"""Resuming a run: every method's state survives the safe checkpoint format; crafted and
old checkpoints are refused without running anything; the folder's lock."""

from __future__ import annotations

import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import CheckpointError, ConfigError
from fedstruct.fl.checkpoint import read_tree
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.runs import runnable
from fedstruct.runs.contract import execute
from fedstruct.runs.folder import _process_start
from fedstruct.runs.settings import apply_settings

runner = CliRunner()

#: Per method: small settings and the round to stop after, chosen so that the
#: checkpoint holds the state types that method has (late answers as messages, client
#: states, NGMs, a FedCDnv client's CI cache).
RESUMES = {
    "fedavg": ({"rounds": 3, "dropout": 0.3, "report_rate": 0.5}, 1),
    "fcm": ({}, 1),
    "fedcd": ({"network": "er", "variables": 5, "samples": 200, "samples_per_intervention": 10,
               "model_steps": 10, "graph_steps": 2}, 1),
    "fedcdnv": ({}, 1),
    "cafe": ({"algorithm": "moon"}, 1),
}  # fmt: skip


def settings(method: str) -> dict:
    return {**runnable(method).quick, **RESUMES[method][0]}


def read(path: Path):
    return json.loads(path.read_text())


@pytest.mark.parametrize("method", sorted(RESUMES))
def test_an_interrupted_run_resumes_to_the_uninterrupted_result(method, tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    execute(method, [settings(method)], full)
    execute(method, [settings(method)], part, stop_after=RESUMES[method][1])
    assert read(part / "run.json")["status"] == "stopped"
    header, state = read_tree(part / CHECKPOINT_FILE)
    assert header["round"] == RESUMES[method][1] and not header["done"]
    assert type(state["server_state"]).__name__.lower().startswith(method[:4])
    execute(method, [], part, resume=True)
    assert read(part / "metrics.json") == read(full / "metrics.json")
    assert read(part / "history.json") == read(full / "history.json")
    assert read(part / "run.json")["status"] == "finished"


def test_fedngm_resumes_from_its_models(tmp_path):
    """Stopped after round 3 (train), the checkpoint holds the client NGMs and the
    global one; the resumed fit ends with the uninterrupted one's models. (Estimator
    level: the run's evaluation would cost a minute here.)"""
    entry = runnable("fedngm")
    q = {**entry.quick, "samples": 1200, "epochs": 1, "burn_in": 2}
    s = apply_settings(entry.settings(), q, method="fedngm")
    source = entry.resolve(s)
    clients = source.clients()
    full = entry.method(s, source).fit(clients)
    path = tmp_path / CHECKPOINT_FILE
    entry.method(s, source).fit(clients, checkpoint=path, stop_after=3)
    state = read_tree(path)[1]["server_state"]
    assert state.phase == "release" and state.global_model is not None and state.client_models
    resumed = entry.method(s, source).fit(clients, checkpoint=path, resume=True)
    assert resumed.history_ == full.history_
    assert resumed.model_.to_arrays().keys() == full.model_.to_arrays().keys()
    for key, array in full.model_.to_arrays().items():
        np.testing.assert_array_equal(resumed.model_.to_arrays()[key], array)


def test_a_fedcdnv_checkpoint_holds_no_rows_and_no_cache(tmp_path):
    """A client's CI test (which holds its rows) is rebuilt from its own data on
    resume; the checkpoint keeps the local result (graph, separating sets, p-values)
    and the search's row counts, not the test's cached p-values (issue 51: they made
    a checkpoint of pigs' 4 sites 1.3 GB; round 2 computes again what it needs)."""
    execute("fedcdnv", [settings("fedcdnv")], tmp_path / "run", stop_after=1)
    _, state = read_tree(tmp_path / "run" / CHECKPOINT_FILE)
    client = state["grid_state"]["clients"][0]
    assert sorted(client) == ["result", "searched"] and "ci_test" not in client["result"]
    assert client["searched"]["total"] > 0


class RunsCode:
    """A pickle that runs ``touch MARKER`` when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A FedAvg run stopped after round 1 (its checkpoint can be resumed)."""
    out = tmp_path_factory.mktemp("stopped") / "run"
    execute("fedavg", [runnable("fedavg").quick], out, stop_after=1)
    return out


def copy_run(folder: Path, to: Path) -> Path:
    to.mkdir()
    for path in folder.iterdir():
        (to / path.name).write_bytes(path.read_bytes())
    return to


def one_line_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_crafted_checkpoint_is_refused_and_never_run(stopped, tmp_path):
    """The issue's attack: a pickle with ``__reduce__ -> os.system`` as the checkpoint."""
    out = copy_run(stopped, tmp_path / "run")
    marker = tmp_path / "ran"
    (out / CHECKPOINT_FILE).write_bytes(pickle.dumps(RunsCode(marker)))
    one_line_exit_2(["run", "fedavg", "--resume", str(out)], "is not a fedstruct checkpoint")
    assert not marker.exists()


def test_an_old_pickle_checkpoint_is_refused_and_never_run(stopped, tmp_path):
    out = copy_run(stopped, tmp_path / "run")
    marker = tmp_path / "ran"
    (out / CHECKPOINT_FILE).unlink()
    (out / "checkpoint.pkl").write_bytes(pickle.dumps(RunsCode(marker)))
    one_line_exit_2(
        ["run", "fedavg", "--resume", str(out)], "is a pickle checkpoint of an older fedstruct"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{", "config.json is not valid JSON (Expecting property name"),
        ([], "holds a JSON list, not an object"),
        ({"method": "fedavg"}, "has no settings object"),
        ({"method": "fedavg", "settings": []}, "has no settings object"),
        ({"settings": {}}, "names no method"),
        ({"method": "fedavg", "settings": {}, "deployment": {"x": 1}}, "'deployment' is not"),
    ],
)
def test_a_config_json_of_the_wrong_shape_is_one_line(stopped, tmp_path, config, message):
    out = copy_run(stopped, tmp_path / "run")
    text = config if isinstance(config, str) else json.dumps(config)
    (out / "config.json").write_text(text)
    one_line_exit_2(["run", "fedavg", "--resume", str(out)], message)


def test_a_config_json_changed_since_the_run_began_is_refused(stopped, tmp_path):
    """The checkpoint belongs to the settings the run began with (``run.json`` keeps
    their digest): a different data size is refused, not resumed on other data."""
    out = copy_run(stopped, tmp_path / "run")
    config = read(out / "config.json")
    config["settings"]["samples"] += 100
    (out / "config.json").write_text(json.dumps(config))
    one_line_exit_2(["run", "fedavg", "--resume", str(out)], "holds other settings than the run")


@pytest.mark.parametrize(
    ("history", "message"),
    [("[{", "history.json is not valid JSON"), ('{"a": 1}', "is not a list of per-round")],
)
def test_a_malformed_history_json_is_one_line(tmp_path, history, message):
    out = tmp_path / "run"
    execute("fedavg", [{**runnable("fedavg").quick, "rounds": 1}], out)
    (out / "history.json").write_text(history)
    one_line_exit_2(["show", str(out)], message)


# ------------------------------------------------------------------- the inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_sites(to: Path) -> list[Path]:
    """The breast-cancer example's four hospital files, copied into ``to``."""
    to.mkdir(parents=True)
    for k in (1, 2, 3, 4):
        (to / f"hospital-{k}.csv").write_bytes(
            (EXAMPLES / "breast-cancer" / f"hospital-{k}.csv").read_bytes()
        )
    return [to / f"hospital-{k}.csv" for k in (1, 2, 3, 4)]


def test_resume_refuses_a_site_file_that_changed_since_the_run_began(tmp_path):
    """issue 49, item 3: a site file grown since the stop was trained on in silence."""
    sites = copy_sites(tmp_path / "data")
    out = tmp_path / "run"
    layer = {"sites": [str(p) for p in sites], "target": "diagnosis", "rounds": 2}
    execute("fedavg", [layer], out, stop_after=1)
    assert set(read(out / "run.json")["inputs"]) == {str(p) for p in sites}
    before = sites[1].read_bytes()
    rows = before.decode().splitlines(keepends=True)
    sites[1].write_text("".join([*rows, *rows[1:]]))  # twice the rows
    one_line_exit_2(
        ["run", "fedavg", "--resume", str(out)],
        f"the site file {sites[1]} changed since the run began",
    )
    sites[1].unlink()
    one_line_exit_2(["run", "fedavg", "--resume", str(out)], f"site file {sites[1]} does not exist")
    assert read(out / "run.json")["status"] == "stopped"  # nothing ran
    sites[1].write_bytes(before)  # restored: the run resumes
    execute("fedavg", [], out, resume=True)
    assert read(out / "run.json")["status"] == "finished"


def test_resume_refuses_a_knowledge_file_that_was_replaced(tmp_path):
    """issue 49, item 3: a knowledge file replaced after the stop changed the final graph."""
    knowledge = tmp_path / "k.json"
    knowledge.write_text(json.dumps({"required": [["X1", "X3"]]}))
    tiny = {"network": "chain", "variables": 4, "samples": 200, "samples_per_intervention": 20,
            "model_steps": 5, "graph_steps": 2, "graphs_per_step": 4, "alone": "none",
            "rounds": 2, "knowledge": str(knowledge)}  # fmt: skip
    out = tmp_path / "run"
    execute("fedcd", [tiny], out, stop_after=1)
    knowledge.write_text(json.dumps({"forbidden": [["X1", "X3"]]}))
    one_line_exit_2(
        ["run", "fedcd", "--resume", str(out)],
        f"the knowledge file {knowledge} changed since the run began",
    )


def test_relative_site_paths_resume_from_another_folder(tmp_path, monkeypatch):
    """issue 49, item 3: relative --site paths are made absolute when the run starts,
    so --resume from another folder reads the run's own files (not the ones of the
    same relative names there)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    copy_sites(project / "sites")
    other = copy_sites(elsewhere / "sites")
    other[0].write_text("".join(other[0].read_text().splitlines(keepends=True)[:40]))
    monkeypatch.chdir(project)
    given = ["sites/hospital-1.csv", "h2=sites/hospital-2.csv", "sites/hospital-3.csv",
             "sites/hospital-4.csv"]  # fmt: skip
    layer = {"sites": given, "target": "diagnosis", "rounds": 2}
    execute("fedavg", [layer], tmp_path / "full")
    execute("fedavg", [layer], tmp_path / "part", stop_after=1)
    assert read(tmp_path / "part" / "config.json")["settings"]["sites"] == [
        str(project / "sites" / "hospital-1.csv"),
        f"h2={project / 'sites' / 'hospital-2.csv'}",
        str(project / "sites" / "hospital-3.csv"),
        str(project / "sites" / "hospital-4.csv"),
    ]
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(app, ["run", "fedavg", "--resume", str(tmp_path / "part"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert read(tmp_path / "part" / "metrics.json") == read(tmp_path / "full" / "metrics.json")


# ------------------------------------------------------------------- the lock


def plant_lock(out: Path, pid: int, host: str | None = None, started: str | None = None) -> None:
    lock = {"pid": pid, "host": host or socket.gethostname(), "since": "2026-01-01T00:00:00"}
    if started is not None:
        lock["started"] = started
    (out / "run.lock").write_text(json.dumps(lock))


def ended_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_folder_another_live_process_writes_is_refused(stopped, tmp_path):
    out = copy_run(stopped, tmp_path / "run")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        plant_lock(out, sleeper.pid)
        message = f"is in use by fedstruct process {sleeper.pid} on {socket.gethostname()}"
        with pytest.raises(ConfigError, match=message):
            execute("fedavg", [], out, resume=True)
        with pytest.raises(ConfigError, match=message):
            execute("fedavg", [runnable("fedavg").quick], out, overwrite=True)
        plant_lock(out, sleeper.pid, host="elsewhere")
        with pytest.raises(ConfigError, match=r"locked by fedstruct process \d+ on elsewhere"):
            execute("fedavg", [], out, resume=True)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (out / CHECKPOINT_FILE).exists()  # nothing was touched


def test_a_stale_lock_is_named_and_taken_over(stopped, tmp_path, caplog):
    out = copy_run(stopped, tmp_path / "run")
    record = read(out / "run.json")
    (out / "run.json").write_text(json.dumps({**record, "status": "running"}))  # a SIGKILL
    pid = ended_pid()
    plant_lock(out, pid)
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and "interrupted after round 1" in shown.output
    assert f"'fedstruct run fedavg --resume {out}'" in shown.output.replace("\n", "")
    execute("fedavg", [], out, resume=True)
    assert f"taking over a stale lock: process {pid} on" in caplog.text
    assert read(out / "run.json")["status"] == "finished" and not (out / "run.lock").exists()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc")
def test_a_lock_whose_pid_now_belongs_to_another_process_is_stale(stopped, tmp_path, caplog):
    """issue 49, item 4: a stale lock naming a live pid (reused) was never stale; the
    lock records its process's start time, and a live process started at another
    time is not its owner."""
    out = copy_run(stopped, tmp_path / "run")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        plant_lock(out, sleeper.pid, started=_process_start(sleeper.pid))  # its own lock
        with pytest.raises(ConfigError, match=f"is in use by fedstruct process {sleeper.pid}"):
            execute("fedavg", [], out, resume=True)
        plant_lock(out, sleeper.pid, started="another-boot/12345")  # the pid was reused
        execute("fedavg", [], out, resume=True)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (
        f"taking over a stale lock: process {sleeper.pid} on {socket.gethostname()} has "
        f"ended (its pid {sleeper.pid} now belongs to another process)"
    ) in caplog.text
    assert read(out / "run.json")["status"] == "finished" and not (out / "run.lock").exists()


@pytest.mark.deploy
def test_a_run_lock_that_is_a_fifo_is_refused_at_once(stopped, tmp_path):
    """issue 49, item 4: a run.lock that is a FIFO blocked --resume for ever (in a
    process of its own, so that a hang fails the test instead of blocking it)."""
    out = copy_run(stopped, tmp_path / "run")
    os.mkfifo(out / "run.lock")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "fedstruct.cli", "run", "fedavg", "--resume", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("--resume waited on a run.lock that is a FIFO")
    assert result.returncode == 2, result.stderr
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert f"{out / 'run.lock'} is a named pipe (FIFO), not a lock fedstruct wrote" in message
    assert (out / "run.lock").is_fifo() and read(out / "run.json")["status"] == "stopped"


def test_a_run_lock_that_is_a_folder_is_one_line_and_left_alone(stopped, tmp_path):
    """issue 49, item 4: a run.lock that is a folder was a traceback."""
    out = copy_run(stopped, tmp_path / "run")
    (out / "run.lock").mkdir()
    (out / "run.lock" / "mine.txt").write_text("mine")
    message = f"{out / 'run.lock'} is a folder, not a lock fedstruct wrote"
    one_line_exit_2(["run", "fedavg", "--resume", str(out)], message)
    one_line_exit_2(["run", "fedavg", "--rounds", "1", "--out", str(out), "--overwrite"], message)
    assert (out / "run.lock" / "mine.txt").read_text() == "mine"


@pytest.mark.deploy
@pytest.mark.slow
def test_a_killed_run_is_shown_as_interrupted_and_resumes(tmp_path):
    """SIGKILL mid-run: run.json still says running, the lock names a dead process;
    ``show`` says interrupted, and ``--resume`` takes the lock over and reaches the
    uninterrupted run's metrics. Independent of the machine's speed (issue 49, item
    8): the run has a million rounds, so it is still running when it is killed after
    its second checkpoint, and both runs stop one round after the one it left."""
    args = ["--network", "asia", "--clients", "3", "--rounds", "1000000", "--seed", "1",
            "--set", "samples=1500", "--set", "test_samples=500", "--quiet"]  # fmt: skip
    cli = [sys.executable, "-m", "fedstruct.cli", "run", "fedavg"]
    out = tmp_path / "killed"
    proc = subprocess.Popen([*cli, *args, "--out", str(out)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # only catches a hang
    while True:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no second round saved in 600 s"
        try:
            if read_checkpoint_header(out / CHECKPOINT_FILE)["round"] >= 2:
                break
        except CheckpointError:
            pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert read(out / "run.json")["status"] == "running"
    assert read(out / "run.lock")["pid"] == proc.pid
    shown = runner.invoke(app, ["show", str(out)])
    assert "interrupted after round" in shown.output
    stop = str(read_checkpoint_header(out / CHECKPOINT_FILE)["round"] + 1)
    resumed = subprocess.run(
        [*cli, "--resume", str(out), "--stop-after", stop, "--quiet"],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"taking over a stale lock: process {proc.pid}" in resumed.stderr
    full = runner.invoke(
        app, ["run", "fedavg", *args, "--stop-after", stop, "--out", str(tmp_path / "full")]
    )
    assert full.exit_code == 0, full.output
    for name in ("metrics.json", "history.json"):
        assert read(out / name) == read(tmp_path / "full" / name)
    assert read(out / "run.json")["status"] == "stopped"


def test_fedavg_on_continuous_files_resumes_with_its_statistics(tmp_path):
    """Breast cancer at four hospitals (continuous, the statistics step in round 1):
    stopped after round 1, the checkpoint holds the federated statistics and the
    resumed run ends where the uninterrupted one does."""
    folder = Path(__file__).resolve().parents[2] / "examples" / "breast-cancer"
    sites = [str(folder / f"hospital-{k}.csv") for k in (1, 2, 3, 4)]
    layer = {"sites": sites, "target": "diagnosis", "rounds": 3, "test_fraction": 0.2}
    full, part = tmp_path / "full", tmp_path / "part"
    execute("fedavg", [layer], full)
    execute("fedavg", [layer], part, stop_after=1)
    state = read_tree(part / CHECKPOINT_FILE)[1]["server_state"]
    assert state.statistics is not None and state.statistics.rows == 569 - 114
    execute("fedavg", [], part, resume=True)
    assert read(part / "metrics.json") == read(full / "metrics.json")
    assert read(part / "history.json") == read(full / "history.json")


def test_a_recipe_run_again_picks_up_its_runs_where_they_stopped(tmp_path, monkeypatch):
    """``compare_variants`` (every variant recipe) with the same ``--out``: a run stopped
    after round 1 resumes to the uninterrupted result, a finished run is read back
    without running, and a folder holding a *different* run is still refused."""
    from fedstruct.runs import contract
    from fedstruct.runs.compare import compare_variants

    quick = {**runnable("fedavg").quick, "rounds": 3}
    variants: dict = {"a": {}}
    full = compare_variants("fedavg", variants, [0], tmp_path / "full", common=quick,
                            progress=False)  # fmt: skip
    folder = tmp_path / "again" / "a" / "seed-0"
    execute("fedavg", [quick, {"seed": 0}], folder, stop_after=1)
    assert read(folder / "run.json")["status"] == "stopped"
    resumed = compare_variants("fedavg", variants, [0], tmp_path / "again", common=quick,
                               progress=False)  # fmt: skip
    assert read(folder / "run.json")["status"] == "finished"
    assert resumed.runs["a"][0].metrics == full.runs["a"][0].metrics
    assert read(folder / "history.json") == read(tmp_path / "full/a/seed-0/history.json")

    def never(*args, **kwargs):
        raise AssertionError("a finished run was run again")

    monkeypatch.setattr(contract, "run_resolved", never)
    again = compare_variants("fedavg", variants, [0], tmp_path / "again", common=quick,
                             progress=False)  # fmt: skip
    assert again.runs["a"][0].metrics == full.runs["a"][0].metrics
    assert [p.name for p in again.runs["a"][0].figures] == read(folder / "run.json")["figures"]
    with pytest.raises(ConfigError, match="holds another run"):
        compare_variants("fedavg", {"a": {"rounds": 2}}, [0], tmp_path / "again",
                         common=quick, progress=False)  # fmt: skip


def test_a_recipe_run_stopped_before_its_first_checkpoint_starts_afresh(tmp_path):
    """The same run, recorded as stopped with no checkpoint (Ctrl-C in round 1): a
    recipe run again replaces that run's own files and runs it from the start."""
    from fedstruct.runs.compare import compare_variants

    quick = {**runnable("fedavg").quick, "rounds": 2}
    first = compare_variants("fedavg", {"a": {}}, [0], tmp_path, common=quick, progress=False)
    folder = tmp_path / "a" / "seed-0"
    record = read(folder / "run.json")
    (folder / "run.json").write_text(json.dumps({**record, "status": "stopped"}))
    (folder / CHECKPOINT_FILE).unlink()
    (folder / "metrics.json").unlink()
    again = compare_variants("fedavg", {"a": {}}, [0], tmp_path, common=quick, progress=False)
    assert read(folder / "run.json")["status"] == "finished"
    assert again.runs["a"][0].metrics == first.runs["a"][0].metrics == read(folder / "metrics.json")
