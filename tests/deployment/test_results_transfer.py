"""A deployed run's results back to its submitter (fedstruct.deployment.results), without
a cluster: the SuperLink's answers (a list, then chunks of each file) and the fetcher,
joined directly where the deployed test (tests/fl/test_flower_deploy.py) joins them by
the signed Control API call.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from fedstruct.deployment import results
from fedstruct.deployment.contract import RUNS_ENV
from fedstruct.deployment.results import (
    answer,
    fetch,
    mirror_progress,
    new_name,
    pull_progress,
    record_fetched,
)
from fedstruct.errors import DeploymentError
from fedstruct.runs.folder import read_record, write_record
from fedstruct.runs.progress import PROGRESS_FILE, PROGRESS_FORMAT, read_progress


@pytest.fixture
def superlink(tmp_path):
    """A SuperLink's runs folder holding one finished run ``alarm-1234abcd``: its files
    (one larger than a chunk, one in a sub-folder), a file the run did not write, a
    link, and a write in progress; ``ask(request)`` answers as the SuperLink does."""
    runs = tmp_path / "runs"
    folder = runs / "alarm-1234abcd"
    (folder / "plots").mkdir(parents=True)
    write_record(folder, "running", kept=[])
    (folder / "config.json").write_text('{"method": "fedavg"}\n')
    (folder / "metrics.json").write_text('{"accuracy": 0.9}\n')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 300)
    (folder / "plots" / "rounds.png").write_bytes(b"\x89PNG...")
    (folder / "plots" / ".rounds.png-tmp").write_bytes(b"half")
    (folder / "secret.txt").write_text("not the run's\n")
    write_record(folder, "finished", kept=["secret.txt"], figures=["plots/rounds.png"])
    (folder / "link").symlink_to(tmp_path)
    record = read_record(folder)
    record["files"].append("link")
    (folder / "run.json").write_text(json.dumps(record))
    environ = {RUNS_ENV: str(runs)}
    asked: list[dict] = []

    def ask(request: str) -> bytes:
        answered = answer(request, environ)
        asked.append(json.loads(request))
        return answered

    return folder, ask, asked


def test_the_list_names_the_runs_files_with_their_size_and_hash(superlink, monkeypatch):
    folder, ask, _ = superlink
    listing = json.loads(ask(json.dumps({"folder": folder.name})))
    names = [f["name"] for f in listing["files"]]
    # not the record, the lock, the file it keeps, the link or the write in progress
    assert names == ["config.json", "metrics.json", "model.safetensors", "plots/rounds.png"]
    model = next(f for f in listing["files"] if f["name"] == "model.safetensors")
    content = (folder / "model.safetensors").read_bytes()
    assert model["size"] == len(content)
    assert model["sha256"] == hashlib.sha256(content).hexdigest()
    assert listing["record"]["status"] == "finished"


def test_a_file_comes_in_chunks_of_at_most_chunk_bytes(superlink, tmp_path, monkeypatch):
    folder, ask, asked = superlink
    monkeypatch.setattr(results, "CHUNK", 10_000)
    out = tmp_path / "mine"
    fetched = fetch(ask, folder.name, out)
    assert (out / "model.safetensors").read_bytes() == (folder / "model.safetensors").read_bytes()
    assert (out / "plots" / "rounds.png").read_bytes() == b"\x89PNG..."
    offsets = [a["offset"] for a in asked if a.get("file") == "model.safetensors"]
    assert offsets == list(range(0, 76_800, 10_000))  # 8 chunks of a 76,800-byte model
    assert fetched.size == sum((out / f).stat().st_size for f in fetched.files)
    assert not list(out.rglob(".*"))  # no temporary file left


def test_the_submitters_config_and_the_files_its_folder_keeps_are_not_written(superlink, tmp_path):
    folder, ask, _ = superlink
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text("mine\n")
    fetch(ask, folder.name, out, skip={"config.json"})
    assert (out / "config.json").read_text() == "mine\n"
    (out / "metrics.json").unlink()
    (out / "metrics.json").write_text("my own notes\n")
    with pytest.raises(DeploymentError, match=r"is not the run's .* move it away"):
        fetch(ask, folder.name, out, kept=["metrics.json"])
    assert (out / "metrics.json").read_text() == "my own notes\n"


def test_the_record_of_the_fetched_run_is_the_superlinks_with_the_local_kept(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    write_record(out, "running", kept=["notes.txt"])
    (out / "metrics.json").write_text("{}\n")
    theirs = {"format": "fedstruct.run", "status": "finished", "seconds": 3.5,
              "figures": ["a.png"], "files": ["x"], "kept": ["y"],
              "inputs": {"a": "b"}}  # fmt: skip
    record_fetched(out, theirs, results="run-12345678", flower_run=7)
    record = read_record(out)
    assert record["status"] == "finished" and record["seconds"] == 3.5
    assert record["figures"] == ["a.png"] and record["flower_run"] == 7
    assert record["kept"] == ["notes.txt"] and record["files"] == ["metrics.json", "run.json"]
    assert "inputs" not in record  # never the SuperLink's


@pytest.mark.parametrize(
    "name", ["../escape", "/etc/passwd", "a/../../b", "a\\b", "", "run.json", ".hidden", "a//b"]
)
def test_a_path_that_would_leave_the_folder_is_refused_before_anything_is_written(tmp_path, name):
    good = {"name": "metrics.json", "size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()}
    bad = {**good, "name": name}
    listing = {"record": {"status": "finished"}, "files": [good, bad]}

    def ask(request: str) -> bytes:
        asked = json.loads(request)
        return json.dumps(listing).encode() if "file" not in asked else b"{}"

    out = tmp_path / "mine"
    with pytest.raises(DeploymentError, match="not a path inside a run's folder"):
        fetch(ask, "x", out)
    assert not out.exists() and not (tmp_path / "escape").exists()


def test_a_file_is_not_written_through_a_link_or_when_its_bytes_are_not_the_listed(
    tmp_path,
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "mine"
    out.mkdir()
    (out / "plots").symlink_to(elsewhere)
    content = b"picture"
    entry = {"name": "plots/a.png", "size": 7, "sha256": hashlib.sha256(content).hexdigest()}

    def serving(data: bytes):
        def ask(request: str) -> bytes:
            asked = json.loads(request)
            if "file" not in asked:
                return json.dumps({"record": {}, "files": [entry]}).encode()
            return data[asked["offset"] :]

        return ask

    with pytest.raises(DeploymentError, match="is not a folder of the run"):
        fetch(serving(content), "x", out)
    assert list(elsewhere.iterdir()) == []
    (out / "plots").unlink()
    with pytest.raises(DeploymentError, match="changed while it was fetched"):
        fetch(serving(b"PICTURE"), "x", out)
    with pytest.raises(DeploymentError, match="do not make its listed 7 bytes"):
        fetch(serving(b"picture and more"), "x", out)
    assert not (out / "plots" / "a.png").exists() and not list(out.rglob(".*"))
    fetch(serving(content), "x", out)
    assert (out / "plots" / "a.png").read_bytes() == content


def test_the_superlink_refuses_what_is_not_a_runs_file_in_one_line(superlink):
    folder, ask, _ = superlink
    cases = {
        json.dumps({"folder": "../elsewhere"}): "is not inside the SuperLink's runs folder",
        json.dumps({"folder": "nothing-here"}): "keeps no run in its results folder",
        json.dumps({"folder": folder.name, "file": "secret.txt", "offset": 0}): (
            "'secret.txt' is not a file of the run"
        ),
        json.dumps({"folder": folder.name, "file": "link", "offset": 0}): "is not a file",
        json.dumps({"folder": folder.name, "file": "run.json", "offset": -1}): "must be",
        json.dumps(["a", "list"]): "must be",
        "not json": "is not valid JSON",
    }
    for request, words in cases.items():
        with pytest.raises(DeploymentError, match=words) as refused:
            ask(request)
        assert "\n" not in str(refused.value)


def test_a_new_name_is_the_folders_name_and_random_digits():
    first, second = new_name(Path("/home/ann/runs/alarm 3 hospitals")), new_name(Path("/x/y"))
    assert first.startswith("alarm-3-hospitals-") and len(first) == len("alarm-3-hospitals-") + 8
    assert second.startswith("y-") and new_name(Path("/")).startswith("run-")
    assert first != new_name(Path("/home/ann/runs/alarm 3 hospitals"))


def test_a_new_runs_folder_on_the_superlink_must_be_new_and_a_resumed_one_must_hold_it(
    tmp_path,
):
    """The ServerApp's side (deployment.app): a new run never writes into a folder that
    holds files; a resumed run needs the run it resumes; the submitter's config.json is
    written there."""
    pytest.importorskip("flwr")
    from fedstruct.deployment.app import _prepare
    from fedstruct.errors import ConfigError

    folder = tmp_path / "alarm-1234abcd"
    folder.mkdir()
    (folder / "someone-elses.txt").write_text("x\n")
    with pytest.raises(ConfigError, match="holds files already"):
        _prepare(folder, '{"method": "fedavg"}', resume=False)
    assert sorted(p.name for p in folder.iterdir()) == ["someone-elses.txt"]
    fresh = tmp_path / "fresh-1234abcd"
    fresh.mkdir()
    with pytest.raises(ConfigError, match="--resume needs the folder of a run"):
        _prepare(fresh, "{}", resume=True)
    _prepare(fresh, '{"method": "fedavg", "settings": {}}', resume=False)
    assert json.loads((fresh / "config.json").read_text())["method"] == "fedavg"
    assert read_record(fresh)["status"] == "running"
    _prepare(fresh, '{"method": "fedavg", "settings": {}}', resume=True)


def test_resuming_a_run_that_names_no_results_folder_is_one_line(tmp_path):
    pytest.importorskip("flwr")
    from fedstruct.deployment.submit import _results_folder
    from fedstruct.errors import ConfigError
    from fedstruct.fl.flower.cluster import DeploymentOptions

    (tmp_path / "config.json").write_text('{"method": "fedavg", "deployment": {}}')
    with pytest.raises(ConfigError, match="names no results folder on the SuperLink"):
        _results_folder(tmp_path, DeploymentOptions(), resume=True)
    config, name = _results_folder(tmp_path, DeploymentOptions(), resume=False)
    assert re.fullmatch(r"[A-Za-z0-9._-]+-[0-9a-f]{8}", name)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["deployment"]["results"] == name == config["deployment"]["results"]
    again = DeploymentOptions(results=name)
    assert _results_folder(tmp_path, again, resume=True)[1] == name


def test_the_progress_of_a_run_is_asked_while_it_runs_and_mirrored(tmp_path):
    """The SuperLink gives a run's progress.json (``null`` before its first round), to
    ``fedstruct status ID`` and to the submitter, which mirrors it into its own folder;
    what is not a progress file is refused in one line."""
    runs = tmp_path / "runs"
    folder = runs / "alarm-5678abcd"
    folder.mkdir(parents=True)
    write_record(folder, "running", kept=[])
    environ = {RUNS_ENV: str(runs)}

    def ask(request: str) -> bytes:
        return answer(request, environ)

    mine = tmp_path / "mine"
    mine.mkdir()
    assert pull_progress(ask, folder.name) is None
    mirror_progress(ask, folder.name, mine)
    assert not (mine / PROGRESS_FILE).exists()
    progress = {
        "format": PROGRESS_FORMAT, "round": 2, "rounds": 5, "done": False, "asked": ["a"],
        "answered": ["a"], "bytes_down": 10, "bytes_up": 5, "started": 1.0, "updated": 2.0,
        "timed_rounds": 2, "seconds_in_rounds": 1.0, "metrics": {"accuracy": 0.5},
    }  # fmt: skip
    (folder / PROGRESS_FILE).write_text(json.dumps(progress))
    assert pull_progress(ask, folder.name) == progress
    mirror_progress(ask, folder.name, mine)
    assert read_progress(mine) == progress
    (folder / PROGRESS_FILE).write_text('{"round": "two"}')
    with pytest.raises(DeploymentError, match="is not a progress file of this fedstruct"):
        pull_progress(ask, folder.name)
    with pytest.raises(DeploymentError, match="must be"):
        ask(json.dumps({"folder": folder.name, "progress": 1}))
