"""A run's folder: never two runs mixed, a clear error when it cannot be written,
and a status that says how the run ended; bad input to the commands that use it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ArtifactError, ConfigError, DataError
from fedstruct.results.use import predict_file, query, sample
from fedstruct.runs import runnable
from fedstruct.runs.contract import execute

runner = CliRunner()


def quick(method: str) -> dict:
    return dict(runnable(method).quick)


def entries(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_folder_holding_a_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out)
    (out / "notes.txt").write_text("mine")  # the user's, written after the run
    with pytest.raises(ConfigError, match=r"holds another run \(finished\); .* add --overwrite"):
        execute("fedavg", [quick("fedavg")], out)
    (out / "fedavg_rounds.png").unlink()  # a file of the first run the second will write
    first = json.loads((out / "run.json").read_text())["files"]
    execute("fedavg", [{**quick("fedavg"), "rounds": 1}], out, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"  # not the run's: kept
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "finished" and record["kept"] == ["notes.txt"]
    assert record["files"] == [n for n in entries(out) if n != "notes.txt"]
    assert set(first) == set(record["files"])


def test_run_json_lists_every_file_the_run_wrote(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out)
    record = json.loads((out / "run.json").read_text())
    assert record["format"] == "fedstruct.run" and record["kept"] == []
    assert record["files"] == entries(out)  # the lock is gone once the run ends
    written = {"checkpoint.safetensors", "model.json", "model.safetensors", "fedavg_rounds.png",
               "config.json", "metrics.json", "history.json", "run.json"}  # fmt: skip
    assert written <= set(record["files"])


def add_users_files(out):
    """What a user puts into a run's folder: notes and a folder of figures."""
    (out / "analysis-notes.txt").write_text("mine")
    (out / "my-figures").mkdir()
    (out / "my-figures" / "fig.png").write_bytes(b"png")


def users_files_are_there(out) -> bool:
    return (out / "analysis-notes.txt").read_text() == "mine" and (
        out / "my-figures" / "fig.png"
    ).read_bytes() == b"png"


def test_files_added_while_a_run_is_stopped_are_not_the_resumed_run_s(tmp_path):
    """issue 49, item 1: the resumed run listed every file then in the folder, so a
    later --overwrite deleted the user's notes and figures."""
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out, stop_after=1)
    add_users_files(out)
    execute("fedavg", [], out, resume=True)
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "finished"
    assert record["kept"] == ["analysis-notes.txt", "my-figures"]
    assert not {"analysis-notes.txt", "my-figures"} & set(record["files"])
    execute("fedavg", [{**quick("fedavg"), "rounds": 1}], out, overwrite=True)
    assert users_files_are_there(out)
    assert json.loads((out / "run.json").read_text())["kept"] == record["kept"]


def test_a_resume_never_writes_over_a_file_the_run_did_not_write(tmp_path):
    """A stopped run saved no model: a model.json put into its folder since is the
    user's, and the resumed run, which would write one, is refused."""
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out, stop_after=1)
    (out / "model.json").write_text("mine")
    with pytest.raises(ConfigError, match=r"holds model\.json, which the run did not write"):
        execute("fedavg", [], out, resume=True)
    assert (out / "model.json").read_text() == "mine"
    assert json.loads((out / "run.json").read_text())["status"] == "stopped"


#: A fedavg run that is killed (SIGKILL, by itself) right after its round 1 is saved.
KILLED_AFTER_ROUND_1 = """
import json, os, signal, sys
from pathlib import Path
from fedstruct.runs.contract import execute
from fedstruct.fl import federation

save = federation.save_checkpoint

def save_then_die(path, payload):
    save(path, payload)
    os.kill(os.getpid(), signal.SIGKILL)

federation.save_checkpoint = save_then_die
execute("fedavg", [json.loads(sys.argv[1])], Path(sys.argv[2]))
"""


@pytest.mark.deploy
@pytest.mark.parametrize("resumed", [False, True])
def test_files_added_after_a_run_was_killed_are_never_deleted(tmp_path, resumed):
    """issue 49, item 1: after a SIGKILL (run.json says running) every entry not kept
    counted as the run's; --overwrite deleted files added since, with or without a
    resume in between."""
    out = tmp_path / "run"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_ROUND_1, json.dumps(quick("fedavg")), str(out)],
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "running" and "checkpoint.safetensors" not in record["files"]
    add_users_files(out)
    if resumed:
        execute("fedavg", [], out, resume=True)
        record = json.loads((out / "run.json").read_text())
        assert record["status"] == "finished"
        assert record["kept"] == ["analysis-notes.txt", "my-figures"]
    execute("fedavg", [{**quick("fedavg"), "rounds": 1}], out, overwrite=True)
    assert users_files_are_there(out)
    record = json.loads((out / "run.json").read_text())
    assert record["kept"] == ["analysis-notes.txt", "my-figures"]
    assert record["files"] == [n for n in entries(out) if n not in record["kept"]]


def test_overwrite_never_empties_a_folder_that_only_holds_a_config_json(tmp_path):
    """The issue's reproduction: ``--overwrite`` deleted ``proj/src``."""
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "config.json").write_text("{}")
    (proj / "src" / "a.py").write_text("x")
    result = runner.invoke(
        app, ["run", "fedavg", "--rounds", "1", "--out", str(proj), "--overwrite"]
    )
    assert result.exit_code == 2
    assert "holds config.json but no fedstruct run.json, so none of its files" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (proj / "src" / "a.py").read_text() == "x"
    assert entries(proj) == ["config.json", "src"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"status": "finished"}, "not a record of this fedstruct"),  # an older fedstruct's
        ({"format": "fedstruct.run", "status": "finished", "files": ["../src"], "kept": []},
         "'files' is not a list of file names in the folder"),
        ({"format": "fedstruct.run", "status": "finished", "files": ["/etc"], "kept": []},
         "'files' is not a list"),
        ({"format": "fedstruct.run", "status": "done", "files": [], "kept": []}, "status 'done'"),
        ([], "not a record of this fedstruct"),
    ],
)  # fmt: skip
def test_a_run_json_that_is_not_ours_keeps_every_file(tmp_path, record, message):
    out = tmp_path / "run"
    (out / "src").mkdir(parents=True)
    (out / "src" / "a.py").write_text("x")
    (out / "run.json").write_text(json.dumps(record))
    with pytest.raises(ConfigError, match=message):
        execute("fedavg", [quick("fedavg")], out, overwrite=True)
    assert entries(out) == ["run.json", "src"] and (out / "src" / "a.py").exists()


def test_a_file_the_run_would_write_over_is_refused(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out)
    record = json.loads((out / "run.json").read_text())
    record["files"].remove("metrics.json")  # as if the user had put it there
    (out / "run.json").write_text(json.dumps(record))
    with pytest.raises(ConfigError, match=r"holds metrics\.json, which no earlier run wrote"):
        execute("fedavg", [quick("fedavg")], out, overwrite=True)
    assert (out / "metrics.json").exists()


def test_a_folder_of_other_files_is_never_emptied(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds no fedstruct run"):
        execute("fedavg", [quick("fedavg")], tmp_path, overwrite=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_unwritable_out_is_one_line_exit_2(tmp_path):
    (tmp_path / "file").write_text("")
    result = runner.invoke(app, ["run", "fedavg", "--out", str(tmp_path / "file" / "run")])
    assert result.exit_code == 2
    assert "cannot write the run into --out" in result.output
    assert "Traceback" not in result.output


def test_a_failed_run_leaves_a_folder_that_says_so(tmp_path):
    site = tmp_path / "site.csv"
    pd.DataFrame({"a": [0, 1] * 20, "y": [1, 0] * 20}).to_csv(site, index=False)
    out = tmp_path / "run"
    with pytest.raises(DataError, match="absent"):  # the target column is not in the file
        execute("fedavg", [{"sites": [str(site)], "target": "absent"}], out)
    status = json.loads((out / "run.json").read_text())
    assert status["status"] == "failed" and "absent" in status["error"]
    # The corrected command reuses the failed run's folder without --overwrite.
    (out / "notes.txt").write_text("mine")
    execute("fedavg", [{"sites": [str(site)], "target": "y", "rounds": 1}], out)
    status = json.loads((out / "run.json").read_text())
    assert status["status"] == "finished" and status["kept"] == ["notes.txt"]


def test_a_failed_run_that_saved_rounds_is_kept_for_resume(tmp_path, monkeypatch):
    from fedstruct.methods.fedavg.server import FedAvgServer

    out = tmp_path / "run"
    real = FedAvgServer.run_round

    def fail_in_round_2(self, grid, state, rnd):
        if rnd == 2:
            raise RuntimeError("disk full")
        return real(self, grid, state, rnd)

    monkeypatch.setattr(FedAvgServer, "run_round", fail_in_round_2)
    with pytest.raises(RuntimeError):
        execute("fedavg", [quick("fedavg")], out)
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    with pytest.raises(ConfigError, match=r"holds another run \(failed\)"):
        execute("fedavg", [quick("fedavg")], out)


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    """FedAvg on two sites whose states are words: the saved codebook names them."""
    folder = tmp_path_factory.mktemp("text")
    frame = pd.DataFrame({
        "smoker": ["yes", "no", "no", "yes"] * 30,
        "age": ["young", "old", "old", "mid"] * 30,
        "cough": ["yes", "no", "yes", "yes"] * 30,
    })  # fmt: skip
    paths = []
    for k in range(2):
        paths.append(str(folder / f"site-{k}.csv"))
        frame.iloc[k::2].to_csv(paths[-1], index=False)
    out = folder / "run"
    execute("fedavg", [{"sites": paths, "target": "cough", "rounds": 3}], out)
    return out, frame


def test_predictions_on_text_files_come_back_by_level_name(text_run, tmp_path):
    out, frame = text_run
    frame.drop(columns=["cough"]).head(8).to_csv(tmp_path / "new.csv", index=False)
    table, unread = predict_file(out, tmp_path / "new.csv")
    assert unread == [] and set(table["cough"]) <= {"no", "yes"}
    assert list(table.columns) == ["cough", "P(cough=no)", "P(cough=yes)"]
    assert table[["P(cough=no)", "P(cough=yes)"]].sum(axis=1).round(6).eq(1).all()


def test_predict_names_the_missing_and_the_extra_columns(text_run, tmp_path):
    out, frame = text_run
    frame.drop(columns=["age"]).assign(height=1).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ArtifactError, match=r"lacks \['age'\].* and has \['height'\]"):
        predict_file(out, tmp_path / "bad.csv")


def test_predict_names_a_level_the_sites_never_had(text_run, tmp_path):
    out, frame = text_run
    frame.head(4).assign(age="ancient").to_csv(tmp_path / "new.csv", index=False)
    with pytest.raises(DataError, match="ancient"):
        predict_file(out, tmp_path / "new.csv")


def test_sample_and_query_need_a_fedngm_run(text_run):
    out, _ = text_run
    with pytest.raises(ArtifactError, match="holds a fedavg model; sample needs a FedNGM run"):
        sample(out, 5)
    result = runner.invoke(app, ["query", str(out), "--target", "cough"])
    assert result.exit_code == 2 and "query needs a FedNGM run" in result.output


def test_query_names_an_unknown_variable_or_level(tmp_path):
    out = tmp_path / "ngm"
    frame = pd.DataFrame({
        "ward": ["icu", "er", "icu", "gen"] * 40,
        "stay": [float(k % 7) for k in range(160)],
        "age": [float(20 + k % 50) for k in range(160)],
    })  # fmt: skip
    paths = []
    for k in range(2):
        paths.append(str(tmp_path / f"site-{k}.csv"))
        frame.iloc[k::2].to_csv(paths[-1], index=False)
    execute("fedngm", [{"sites": paths, "epochs": 3, "rounds": 1}], out)
    table = query(out, {"ward": "icu"}, "stay")
    assert list(table.columns) == ["target", "mean", "median"]
    posterior = query(out, {"stay": "3"}, "ward")
    assert sorted(posterior["ward"]) == ["er", "gen", "icu"]
    assert posterior["probability"].sum() == pytest.approx(1.0)
    with pytest.raises(ArtifactError, match="no variable 'height'"):
        query(out, {"height": "3"}, "stay")
    with pytest.raises(DataError, match="'ward' has no level 'ward-9'; its levels are"):
        query(out, {"ward": "ward-9"}, "stay")
