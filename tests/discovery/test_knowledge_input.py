"""Issue 49, item 1: knowledge files read through :mod:`fedstruct.files` (duplicate
keys, FIFOs, devices, deep nesting refused in one line), empty tiers refused, a
misspelt name suggested, and an estimator's ``knowledge=`` checked when it is built."""

from __future__ import annotations

import json
import os

import pytest

from fedstruct.data import ClientData, load_network
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.errors import ConfigError, KnowledgeError, UnknownVariableError

NAMES = ["age", "sex", "diagnosis", "treatment", "outcome"]


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("k.json", '{"tiers": [["age"]], "tiers": [["sex"]]}'),
        ("k.yaml", "tiers: [[age]]\ntiers: [[sex]]\n"),
    ],
)
def test_a_key_given_twice_is_refused_not_the_last_kept(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    assert "'tiers' is given twice" in _one_line(err) and str(path) in str(err.value)


@pytest.mark.parametrize("text", ['{"tiers": [["age"], []]}', "tiers: [[age], []]\n"])
def test_an_empty_tier_is_refused(tmp_path, text):
    path = tmp_path / ("k.json" if text.startswith("{") else "k.yaml")
    path.write_text(text)
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    assert "tiers[1] is empty; list at least one variable in each tier" in _one_line(err)
    with pytest.raises(KnowledgeError, match=r"tiers\[0\] is empty"):
        Knowledge(tiers=[[]])
    # restricting to a site's variables drops the tiers it empties, as before
    assert Knowledge(tiers=[["age"], ["sex"]]).restrict(["sex"]).tiers == (("sex",),)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "k.json"
    os.mkfifo(path)
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    assert "is a named pipe (FIFO); give a regular file" in _one_line(err)


def test_a_link_to_dev_zero_is_refused_before_reading(tmp_path):
    path = tmp_path / "k.yaml"
    path.symlink_to("/dev/zero")
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    assert "is a device; give a regular file" in _one_line(err)


@pytest.mark.parametrize(("name", "depth"), [("k.json", 100_000), ("k.yaml", 5_000)])
def test_deep_nesting_is_one_line(tmp_path, name, depth):
    path = tmp_path / name
    nested = "[" * depth + "]" * depth
    path.write_text(f'{{"tiers": {nested}}}' if name.endswith("json") else f"tiers: {nested}\n")
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    assert str(path) in _one_line(err)


def test_a_misspelt_variable_gets_a_suggestion_and_every_name():
    many = [*NAMES, *(f"v{k}" for k in range(40))]
    with pytest.raises(UnknownVariableError) as err:
        Knowledge(forbidden=[("agee", "sex")]).resolve(many)
    message = _one_line(err)
    assert "knowledge: forbidden names an unknown variable 'agee' (did you mean 'age'?)" in message
    assert message.endswith("v8, v9")  # every variable, sorted: no cut-off list


# ------------------------------------------------------------ the estimators
def test_an_estimator_refuses_a_knowledge_of_the_wrong_type_when_built():
    from fedstruct.methods.fedcd import FedCD
    from fedstruct.methods.fedcdnv import FedCDnv

    with pytest.raises(ConfigError) as err:
        FedCDnv(knowledge=123).prepare()
    assert "fedcdnv knowledge must be a Knowledge (Knowledge.read(path)), its mapping" in (
        _one_line(err)
    )
    assert "got int 123" in str(err.value)
    with pytest.raises(ConfigError, match=r"unknown format '\.txt'; name it \.json, \.yaml"):
        FedCD(knowledge="k.txt").prepare()
    with pytest.raises(ConfigError, match=r"fedcdnv knowledge: its mapping: tiers\[0\] is empty"):
        FedCDnv(knowledge={"tiers": [[]]}).prepare()
    told = Knowledge(tiers=[["asia"], ["dysp"]])
    assert FedCDnv(knowledge=told).prepare().config_.knowledge is told
    assert FedCDnv(knowledge=told.to_dict()).prepare().config_.knowledge == told.to_dict()


def test_a_missing_knowledge_file_is_one_line_when_fit_starts(tmp_path):
    """The path is kept as given (a saved model's parameters hold it, and loading the
    model elsewhere must not need the file); ``fit`` reads it before any round."""
    from fedstruct.methods.fedcdnv import FedCDnv

    rows = load_network("asia").sample(400, seed=0)
    clients = [ClientData("a", rows.iloc[:200]), ClientData("b", rows.iloc[200:])]
    model = FedCDnv(knowledge=str(tmp_path / "none.json"))
    with pytest.raises(KnowledgeError) as err:
        model.fit(clients)
    assert f"knowledge file {tmp_path / 'none.json'} does not exist; check the path" in (
        _one_line(err)
    )
    assert not hasattr(model, "history_")
    (tmp_path / "none.json").write_text(json.dumps({"tiers": [["asia"], ["dysp"]]}))
    assert model.fit(clients).graph_ is not None
