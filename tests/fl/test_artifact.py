"""Saved models: safetensors + JSON, checked on read; scikit-learn parameters."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import load_file, save_file
from typer.testing import CliRunner

import fedstruct
from fedstruct.cli import app
from fedstruct.data import horizontal, load_network
from fedstruct.errors import ArtifactError, ConfigError
from fedstruct.fl.artifact import MODEL_JSON, MODEL_WEIGHTS, load, read_model, write_model_json
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.runs.artifacts import write_artifacts
from fedstruct.runs.contract import execute


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A FedAvg run's model, saved; its fitted estimator and test rows."""
    net = load_network("asia")
    model = FedAvg("dysp", net.cardinalities, rounds=2).fit(
        horizontal(net.sample(800, seed=0), n_clients=2, seed=0)
    )
    folder = tmp_path_factory.mktemp("run")
    write_artifacts(model, folder)
    return folder, model, net.sample(200, seed=1)


def copy_of(folder, tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in (MODEL_JSON, MODEL_WEIGHTS):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    return tmp_path


def resealed(folder, document):
    """``document`` written as ``folder``'s model.json with its checksums recomputed (an
    edit by someone who knows the format): what the checks besides the checksums catch."""
    write_model_json(folder, document)


def test_a_loaded_model_predicts_exactly_as_the_fitted_one(saved):
    folder, model, rows = saved
    loaded = load(folder)
    assert loaded.get_params()["target"] == "dysp" and loaded.config_ == model.config_
    np.testing.assert_array_equal(loaded.predict_proba(rows), model.predict_proba(rows))
    document = json.loads((folder / MODEL_JSON).read_text())
    assert document["method"] == "fedavg" and document["not_saved"] == {}
    assert len(document["weights"]["sha256"]) == 64


def test_a_changed_weights_file_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    data = bytearray((folder / MODEL_WEIGHTS).read_bytes())
    data[-1] ^= 1  # one bit of one weight
    (folder / MODEL_WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="changed or truncated"):
        load(folder)


def test_a_truncated_weights_file_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    data = (folder / MODEL_WEIGHTS).read_bytes()
    (folder / MODEL_WEIGHTS).write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="changed or truncated"):
        read_model(folder)


def test_a_model_of_a_newer_fedstruct_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    document = json.loads((folder / MODEL_JSON).read_text())
    document["fedstruct"] = "9.0.0"
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match=r"written by fedstruct 9\.0\.0, newer than"):
        load(folder)


def test_a_folder_without_a_model_is_named(tmp_path):
    with pytest.raises(ArtifactError, match="holds no saved model"):
        load(tmp_path)
    with pytest.raises(ArtifactError, match="is not a folder"):
        load(tmp_path / "absent")
    (tmp_path / MODEL_JSON).write_text("{not json")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        load(tmp_path)


def test_missing_weights_are_named(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    (folder / MODEL_WEIGHTS).unlink()
    with pytest.raises(ArtifactError, match=r"model\.safetensors is missing"):
        load(folder)


# Cloning every method's estimator with scikit-learn: tests/fl/test_estimator_contract.py.


def test_set_params_sets_and_fit_checks_as_the_constructor_did():
    model = FedCDnv(alpha=0.05).set_params(alpha=0.06)
    assert model.prepare().config_.alpha == 0.06 and model.get_params()["alpha"] == 0.06
    with pytest.raises(ConfigError, match="unknown fedcdnv parameter 'alpah'"):
        model.set_params(alpah=1)
    model.set_params(alpha=0.01)  # coupled parameters are set one at a time...
    with pytest.raises(ConfigError, match="theta1"):
        model.prepare()  # ...and checked together (theta1 = 0.049 must lie below alpha)


def test_a_model_json_that_does_not_fit_its_weights_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    document = json.loads((folder / MODEL_JSON).read_text())
    document["params"]["hidden"] = 3  # weights of another architecture
    resealed(folder, document)
    with pytest.raises(ArtifactError, match="do not fit together"):
        load(folder)
    document["params"]["no_such_parameter"] = 1
    resealed(folder, document)
    with pytest.raises(ArtifactError, match="do not fit together"):
        load(folder)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "weights",
            ["model.safetensors"],
            "'weights' is \\[\"model.safetensors\"\\], not an object",
        ),
        ("version", "abc", "'version' is \"abc\", not a format version"),
        ("version", None, "'version' is null, not a format version"),
        ("version", True, "'version' is true, not a format version"),
        ("learned", [], "'learned' is \\[\\], not an object"),
        ("params", "x", "'params' is \"x\", not an object"),
        ("data", 3, "'data' is 3, not an object or null"),
        ("method", None, "'method' is null, not a method's name"),
        ("weights", {"file": "model.safetensors"}, '"weights" is not'),
    ],
)
def test_a_model_json_of_the_wrong_shape_is_one_artifact_error(
    saved, tmp_path, key, value, message
):
    """Each of these was a traceback (issue 29, item 7): model.json follows a schema."""
    folder = copy_of(saved[0], tmp_path)
    document = json.loads((folder / MODEL_JSON).read_text())
    document[key] = value
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match=message):
        load(folder)
    del document[key]
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match=f"'{key}' is missing"):
        load(folder)


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "../model.safetensors", "sub/model.safetensors", ".."]
)
def test_the_weights_file_must_lie_in_the_run_folder(saved, tmp_path, name):
    """model.json naming /etc/passwd opened and hashed it (issue 29, item 8)."""
    folder = copy_of(saved[0], tmp_path / "run")
    (tmp_path / "model.safetensors").write_bytes((folder / MODEL_WEIGHTS).read_bytes())
    document = json.loads((folder / MODEL_JSON).read_text())
    document["weights"]["file"] = name
    resealed(folder, document)
    with pytest.raises(ArtifactError, match="which is not a file in the run folder"):
        load(folder)


def test_a_weights_link_leading_out_of_the_folder_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path / "run")
    outside = tmp_path / "elsewhere.safetensors"
    (folder / MODEL_WEIGHTS).rename(outside)
    (folder / MODEL_WEIGHTS).symlink_to(outside)
    with pytest.raises(ArtifactError, match="not a file in the run folder"):
        load(folder)


# ------------------------------------------- model.json checked on read (issue 49)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "asia-task"


@pytest.fixture(scope="module")
def file_run(tmp_path_factory):
    """A FedAvg run on the example sites (level names "no"/"yes"), as ``fedstruct run``
    makes it, and a held-out file of rows with their labels."""
    root = tmp_path_factory.mktemp("file-run")
    sites = [str(EXAMPLES / f"site-{k}.csv") for k in (1, 2, 3)]
    execute("fedavg", [{"sites": sites, "target": "dysp", "rounds": 1}], root / "run")
    held_out = root / "held-out.csv"
    pd.read_csv(sites[2]).head(200).to_csv(held_out, index=False)
    return root / "run", held_out


def predict_cli(folder, data, tmp_path):
    """``fedstruct predict FOLDER --data DATA``: its exit code and output."""
    result = CliRunner().invoke(
        app, ["predict", str(folder), "--data", str(data), "--out", str(tmp_path / "p.csv")]
    )
    return result.exit_code, result.output


def one_line_exit_2(folder, data, tmp_path, message):
    code, output = predict_cli(folder, data, tmp_path)
    assert code == 2, output
    assert message in output and "Traceback" not in output, output
    assert len(output.strip().splitlines()) == 1, output
    assert not (tmp_path / "p.csv").exists()


def edited(run, tmp_path, edit):
    """A copy of ``run``'s model files whose model.json ``edit(document)`` changed, as
    someone with a text editor would (its checksums left as they were)."""
    folder = copy_of(run, tmp_path / "edited")
    document = json.loads((folder / MODEL_JSON).read_text())
    edit(document)
    (folder / MODEL_JSON).write_text(json.dumps(document, indent=1))
    return folder, document


def _reverse_dysp(d):
    d["data"]["levels"]["dysp"].reverse()


def _set(path, value):
    def edit(document):
        *parents, key = path.split(".")
        for name in parents:
            document = document[name]
        document[key] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        (_reverse_dysp, "'data.levels.dysp'"),  # flipped every prediction (0.846 -> 0.154)
        (_set("params.target", "xray"), "'params.target'"),  # predicted another column
        (_set("data.kinds.smoke", "ordinal"), "'data.kinds.smoke'"),  # blamed the input file
        (_set("params.hidden", 3), "'params.hidden'"),
        (_set("weights.sha256", "0" * 64), "'weights.sha256'"),
        (_set("extra", 1), "'extra'"),
    ],
)
def test_an_edited_model_json_is_refused_naming_what_changed(file_run, tmp_path, edit, changed):
    """Issue 49: model.json was not checksummed; an edit gave silently wrong answers."""
    run, held_out = file_run
    assert predict_cli(run, held_out, tmp_path)[0] == 0
    (tmp_path / "p.csv").unlink()
    folder, _ = edited(run, tmp_path, edit)
    message = f"model.json was changed after the run wrote it: the checksum of its {changed}"
    one_line_exit_2(folder, held_out, tmp_path, message)
    with pytest.raises(ArtifactError, match=re.escape(changed)):
        read_model(folder)  # export reads it so


def test_a_model_json_without_checksums_is_refused(file_run, tmp_path):
    folder, _ = edited(file_run[0], tmp_path, lambda d: d.pop("checksums"))
    with pytest.raises(ArtifactError, match="records no checksums of its entries: it was written"):
        load(folder)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("data.levels.dysp", ["no", "yes", "maybe"]),
         "'data.levels.dysp' names 3 levels, but the model has 2 states for 'dysp'"),
        (_set("params.target", "age"), "do not fit together (target 'age' is not among the"),
        (_set("data.kinds.smoke", "continuous"),
         "'data.levels.smoke' is [\"no\", \"yes\"], not absent: the variable is continuous"),
        (_set("data.kinds.smoke", "text"), "'data.kinds.smoke' is \"text\", not a kind"),
        (_set("data.levels.smoke", ["no", "no"]), "'data.levels.smoke' is [\"no\", \"no\"], not"),
        (_set("data.levels.age", ["1"]), "'data.levels.age' is [\"1\"], not absent: no such"),
        (_set("data.variables", ["asia", "asia"]), "'data.variables' is [\"asia\", \"asia\"]"),
        (_set("data.kinds", []), "'data.kinds' is [], not an object giving each variable's"),
    ],
)  # fmt: skip
def test_a_resealed_codebook_that_does_not_fit_the_model_is_refused(
    file_run, tmp_path, edit, message
):
    """With its checksums recomputed, an edited codebook is still checked: known kinds,
    level names for exactly the categorical and ordinal variables, as many as the model
    has states, the target among the variables (and blamed on model.json, not the
    input file)."""
    folder, document = edited(file_run[0], tmp_path, edit)
    resealed(folder, document)
    one_line_exit_2(folder, file_run[1], tmp_path, message)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("version", "abc", "'version' is \"abc\", not a format version (a whole number)"),
        ("version", -1, "'version' is -1, not a format version (1 or more)"),
        ("version", 99, "'version' is 99, a model format version that neither fedstruct 0.1.0"),
        ("fedstruct", "abc", "'fedstruct' is \"abc\", not a fedstruct version"),
        ("fedstruct", "-1", "'fedstruct' is \"-1\", not a fedstruct version"),
    ],
)
def test_a_wrong_version_gets_its_own_message(saved, tmp_path, key, value, message):
    """These said "written by fedstruct 0.1.0, newer than this fedstruct 0.1.0"."""
    folder = copy_of(saved[0], tmp_path)
    document = json.loads((folder / MODEL_JSON).read_text())
    document[key] = value
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match=re.escape(message)) as caught:
        load(folder)
    assert "newer than" not in str(caught.value)


def test_nan_weights_are_refused_naming_the_array(file_run, tmp_path):
    """A model with a NaN weight wrote NaN probabilities, rc 0 (issue 49); the checksums
    recomputed, as a diverged training would have written them."""
    folder = copy_of(file_run[0], tmp_path / "nan")
    arrays = load_file(str(folder / MODEL_WEIGHTS))
    arrays["0.weight"][0, 0] = np.nan
    save_file(arrays, str(folder / MODEL_WEIGHTS))
    document = json.loads((folder / MODEL_JSON).read_text())
    document["weights"]["sha256"] = hashlib.sha256(
        (folder / MODEL_WEIGHTS).read_bytes()
    ).hexdigest()
    resealed(folder, document)
    one_line_exit_2(
        folder, file_run[1], tmp_path, "its array '0.weight' holds 1 value(s) that are NaN"
    )


@pytest.mark.parametrize("given", [None, 3, b"run", ["run"], "run\0x"])
def test_load_of_something_that_is_not_a_path_is_one_artifact_error(given):
    with pytest.raises(ArtifactError, match="a run folder is a path"):
        fedstruct.load(given)
    with pytest.raises(ArtifactError, match="a run folder is a path"):
        read_model(given)


def test_a_continuous_column_resealed_as_categorical_is_blamed_on_model_json(tmp_path):
    """An edited kind was blamed on the input file (issue 49); with its checksums
    recomputed, a column the model reads as continuous must still be continuous."""
    sites = [str(EXAMPLES.parent / "diabetes" / f"hospital-{k}.csv") for k in (1, 2)]
    run = tmp_path / "run"
    execute("fedavg", [{"sites": sites, "target": "progression", "rounds": 1, "hidden": 0}], run)
    document = json.loads((run / MODEL_JSON).read_text())
    document["data"]["kinds"]["bmi"] = "categorical"
    document["data"]["levels"]["bmi"] = ["low", "high"]
    resealed(run, document)
    with pytest.raises(ArtifactError, match=r"'data\.kinds\.bmi' is 'categorical', but the model"):
        load(run)


# ------------------------------------------ a run folder's other records, damaged
def run_copy(run, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for path in run.iterdir():
        if path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    return folder


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("metrics.json", '{"test_acc', "metrics.json is not valid JSON"),  # truncated
        ("metrics.json", "[]", "metrics.json holds a JSON list, not an object"),
        ("metrics.json", '{"rows_site-1": "x"}', "'rows_site-1' is \"x\", not a number"),
        ("metrics.json", '{"rows_site-1": null}', None),  # was int(None): a traceback
        ("run.json", '{"format": "fedst', "run.json is not valid JSON"),
        ("run.json", "3", "run.json holds a JSON int, not an object"),
        ("run.json", '{"figures": "abc", "seconds": "x", "status": 3}', None),
        ("history.json", "[{", "history.json is not valid JSON"),
        ("history.json", '{"a": 1}', "history.json is not a list of per-round records"),
    ],
)
def test_show_on_damaged_run_records_is_one_line(file_run, tmp_path, name, text, message):
    """``show`` read run.json, metrics.json and history.json as it found them: a
    truncated file or a value of the wrong type was a traceback or passed in silence
    (issue 49). Now one line naming the file, or a summary of what is right."""
    folder = run_copy(file_run[0], tmp_path)
    (folder / name).write_text(text)
    code, output = cli("show", folder)
    assert "Traceback" not in output
    if message is None:
        assert code == 0, output
        return
    assert code == 2 and message in " ".join(output.split()), output
    assert len(output.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["metrics.json", "run.json", "history.json"])
def test_a_fifo_in_place_of_a_run_record_is_refused_not_waited_on(file_run, tmp_path, name):
    """A named pipe is never opened for reading (it would block until someone writes)."""
    folder = run_copy(file_run[0], tmp_path)
    (folder / name).unlink()
    os.mkfifo(folder / name)
    code, output = cli("show", folder)
    assert code == 2 and "is a named pipe (FIFO)" in output, output
    code, output = cli("predict", folder, "--data", file_run[1], "--out", tmp_path / "p.csv")
    if name == "history.json":  # the model's history_: read by predict too
        assert code == 2 and "is a named pipe (FIFO)" in output, output
    else:
        assert code == 0 and (tmp_path / "p.csv").is_file(), output
