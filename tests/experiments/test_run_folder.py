"""A run's folder: never two runs mixed, a clear error when it cannot be written,
and a status that says how the run ended; bad input to the commands that use it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ArtifactError, ConfigError, DataError
from fedstruct.experiments import runnable
from fedstruct.experiments.runs import execute
from fedstruct.experiments.use import predict_file, query, sample

runner = CliRunner()


def quick(method: str) -> dict:
    return dict(runnable(method).quick)


def test_a_folder_holding_a_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    execute("fedavg", [quick("fedavg")], out)
    (out / "stale.txt").write_text("from the first run")
    with pytest.raises(ConfigError, match=r"holds another run; .* add --overwrite"):
        execute("fedavg", [quick("fedavg")], out)
    execute("fedavg", [quick("fedavg")], out, overwrite=True)
    assert not (out / "stale.txt").exists()  # emptied first: the runs' files never mix
    assert json.loads((out / "run.json").read_text())["status"] == "finished"


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
