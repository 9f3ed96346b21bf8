"""Saved models: safetensors + JSON, checked on read; scikit-learn parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedstruct.data import horizontal, load_network
from fedstruct.errors import ArtifactError, ConfigError
from fedstruct.experiments.artifacts import write_artifacts
from fedstruct.fl.artifact import MODEL_JSON, MODEL_WEIGHTS, load, read_model
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcdnv import FedCDnv


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


def test_a_loaded_model_predicts_exactly_as_the_fitted_one(saved):
    folder, model, rows = saved
    loaded = load(folder)
    assert loaded.get_params()["target"] == "dysp" and loaded.config == model.config
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


def test_set_params_validates_as_the_constructor_does():
    model = FedCDnv(alpha=0.05).set_params(alpha=0.06)
    assert model.config.alpha == 0.06 and model.get_params()["alpha"] == 0.06
    with pytest.raises(ConfigError, match="unknown fedcdnv parameter 'alpah'"):
        model.set_params(alpah=1)
    with pytest.raises(ConfigError, match="theta1"):
        model.set_params(alpha=0.01)  # theta1 = 0.049 must lie below alpha


def test_a_model_json_that_does_not_fit_its_weights_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path)
    document = json.loads((folder / MODEL_JSON).read_text())
    document["params"]["hidden"] = 3  # weights of another architecture
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match="do not fit together"):
        load(folder)
    document["params"]["no_such_parameter"] = 1
    (folder / MODEL_JSON).write_text(json.dumps(document))
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
        ("version", "abc", "'version' is \"abc\", not an integer"),
        ("version", None, "'version' is null, not an integer"),
        ("version", True, "'version' is true, not an integer"),
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
    (folder / MODEL_JSON).write_text(json.dumps(document))
    with pytest.raises(ArtifactError, match="which is not a file in the run folder"):
        load(folder)


def test_a_weights_link_leading_out_of_the_folder_is_refused(saved, tmp_path):
    folder = copy_of(saved[0], tmp_path / "run")
    outside = tmp_path / "elsewhere.safetensors"
    (folder / MODEL_WEIGHTS).rename(outside)
    (folder / MODEL_WEIGHTS).symlink_to(outside)
    with pytest.raises(ArtifactError, match="not a file in the run folder"):
        load(folder)
