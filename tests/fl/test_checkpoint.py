"""The checkpoint format: safetensors + JSON, registered types only, nothing executed."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from safetensors.numpy import save

from fedstruct.errors import CheckpointError
from fedstruct.fl import Message, checkpoint
from fedstruct.fl.checkpoint import (
    FORMAT,
    dumps,
    loads,
    read_header,
    read_tree,
    seal,
    write_tree,
)
from fedstruct.fl.federation import LEGACY_CHECKPOINT_FILE, load_checkpoint
from fedstruct.graphs import Graph


@dataclass(frozen=True)
class Point:
    """A registered dataclass (fields rebuilt through its constructor)."""

    x: float
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)


checkpoint.register(Point, name="tests.Point")


class Unregistered:
    pass


def test_every_kind_of_value_round_trips_exactly():
    tree = {
        "none": None,
        "flags": [True, False],
        "int": 2**70,
        "floats": [0.1, -0.0, math.inf, -math.inf],
        "text": 'é\n"',
        "tuple": (1, ("a", 2.5)),
        "by_pair": {(3, "client-1", "up"): [10, 1], 7: "x"},
        "sets": [{1, 2}, frozenset({"a"})],
        "bytes": b"\x00\xff",
        "arrays": {
            "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
            "bool": np.array([True, False]),
            "zero_d": np.array(4.5),
            "empty": np.zeros((0, 3), dtype=np.int8),
            "strided": np.arange(10.0)[::3],
            "big_endian": np.arange(3, dtype=">i4"),
        },
        "scalars": [np.float32(1.25), np.int64(-3), np.bool_(True)],
        "graph": Graph.from_edges(["a", "b", "c"], [("a", "b")]),
        "message": Message("x.fit", arrays={"w": np.ones(2)}, config={"s": b"\x01"}),
        "point": Point(1.5, ("t",), {"k": 1}),
        "proxy": MappingProxyType({"a": 1}),
    }
    header, back = loads(dumps(tree, {"round": 3}))
    assert header == {"round": 3}
    assert math.isnan(loads(dumps(math.nan))[1])
    assert back["none"] is None and back["flags"] == [True, False] and back["int"] == 2**70
    assert back["floats"] == [0.1, -0.0, math.inf, -math.inf]
    assert math.copysign(1, back["floats"][1]) == -1
    assert back["text"] == tree["text"] and back["bytes"] == b"\x00\xff"
    assert back["tuple"] == (1, ("a", 2.5)) and type(back["tuple"][1]) is tuple
    assert back["by_pair"] == tree["by_pair"]
    assert back["sets"] == [{1, 2}, frozenset({"a"})] and type(back["sets"][1]) is frozenset
    for key, array in tree["arrays"].items():
        np.testing.assert_array_equal(back["arrays"][key], array)
        assert back["arrays"][key].dtype == array.dtype.newbyteorder("=")
        assert back["arrays"][key].shape == array.shape
    assert [type(s) for s in back["scalars"]] == [np.float32, np.int64, np.bool_]
    assert back["scalars"] == tree["scalars"]
    assert back["graph"] == tree["graph"]
    assert back["message"].config == {"s": b"\x01"} and back["message"].kind == "x.fit"
    np.testing.assert_array_equal(back["message"].arrays["w"], np.ones(2))
    assert back["point"] == Point(1.5, ("t",), {"k": 1})
    assert back["proxy"] == {"a": 1}


def test_an_unregistered_type_is_refused_when_saving():
    with pytest.raises(CheckpointError, match=r"state\.x\[0\]: type .*Unregistered is not regist"):
        dumps({"x": [Unregistered()]})
    with pytest.raises(CheckpointError, match="numpy dtype <U1"):
        dumps(np.array(["a"]))


class RunsCode:
    """A pickle that runs ``touch MARKER`` when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_renamed_to_a_checkpoint_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "checkpoint.safetensors"
    path.write_bytes(pickle.dumps({"round": 1, "server_state": RunsCode(marker)}))
    with pytest.raises(CheckpointError, match="is not a fedstruct checkpoint"):
        load_checkpoint(path)
    assert not marker.exists()


def test_an_old_pickle_checkpoint_is_named_and_never_opened(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / LEGACY_CHECKPOINT_FILE).write_bytes(pickle.dumps(RunsCode(marker)))
    with pytest.raises(
        CheckpointError, match=r"checkpoint\.pkl is a pickle checkpoint of an older"
    ):
        load_checkpoint(tmp_path / "checkpoint.safetensors")
    assert not marker.exists()


def crafted(path: Path, tree: object, **metadata: str) -> Path:
    """A safetensors file whose header holds ``tree`` as a checkpoint would, with the
    checksums of its content (as if whoever crafted it recomputed them)."""
    entries = {"format": FORMAT, "version": "1", "fedstruct": "0.1.0", "header": "{}"}
    entries.update(tree=json.dumps(tree), **metadata)
    path.write_bytes(seal(save({"a0": np.zeros(1)}, metadata=entries)))
    return path


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        (
            {"$": "object", "type": "posix.system", "fields": {"command": "touch ran"}},
            "names type 'posix.system', which is not a registered checkpoint type",
        ),
        (
            {"$": "object", "type": "builtins.eval", "fields": {}},
            "names type 'builtins.eval', which is not a registered",
        ),
        (
            {"$": "object", "type": "tests.Point", "fields": {"x": 1, "y": 2}},
            r"no field\(s\) \['y'\]",
        ),
        ({"$": "object", "type": "tests.Point", "fields": {}}, "missing 1 required"),
        ({"$": "array", "key": "a9"}, "names an array 'a9' the file does not hold"),
        ({"$": "float", "value": "__import__('os')"}, "not inf, -inf or nan"),
        ({"$": "exec"}, "unknown tag 'exec'"),
        (
            {"$": "object", "type": "fedstruct.Graph", "fields": {"names": ["a"], "marks": [[7]]}},
            "refused",
        ),
    ],
)
def test_a_crafted_tree_is_refused(tmp_path, tree, message):
    path = crafted(tmp_path / "checkpoint.safetensors", tree)
    with pytest.raises(CheckpointError, match=message):
        read_tree(path)
    assert not (Path.cwd() / "ran").exists()


def test_a_checkpoint_of_a_newer_format_or_another_kind_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="format version '2', newer than"):
        read_header(crafted(tmp_path / "a", None, version="2"))
    with pytest.raises(CheckpointError, match=r'no "format": "fedstruct\.checkpoint"'):
        read_header(crafted(tmp_path / "b", None, format="other"))
    (tmp_path / "c").write_bytes(b"\xff" * 40)
    with pytest.raises(CheckpointError, match="not a fedstruct checkpoint"):
        read_header(tmp_path / "c")


def test_a_checkpoint_is_written_atomically(tmp_path):
    path = tmp_path / "checkpoint.safetensors"
    write_tree(path, {"a": np.ones(3)}, {"round": 1})
    with pytest.raises(CheckpointError):
        write_tree(path, {"a": Unregistered()}, {"round": 2})
    assert read_header(path) == {"round": 1}  # the failed write left the previous file
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.safetensors"]


def test_no_read_path_in_the_package_unpickles():
    """Only the restricted CIFAR unpickler (numpy types only) may read a pickle."""
    src = Path(__file__).resolve().parents[2] / "src" / "fedstruct"
    allowed = {src / "data" / "datasets" / "images.py"}
    found = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if path not in allowed
        and any(call in path.read_text() for call in ("pickle.load", "pickle.Unpickler"))
    ]
    assert found == []


def test_a_checkpoint_without_checksums_is_refused(tmp_path):
    entries = {"format": FORMAT, "version": "1", "fedstruct": "0.1.0", "header": "{}"}
    path = tmp_path / "checkpoint.safetensors"
    path.write_bytes(save({"a0": np.zeros(1)}, metadata={**entries, "tree": "null"}))
    with pytest.raises(CheckpointError, match="records no checksums of its content"):
        read_header(path)


def test_a_changed_tensor_byte_is_refused(tmp_path):
    blob = bytearray(dumps({"w": np.arange(4, dtype=np.float32)}, {"round": 1}))
    blob[-1] ^= 1
    with pytest.raises(CheckpointError, match="the checksum of its arrays does not match"):
        loads(bytes(blob))


# ------------------------------------ a real run's checkpoint, edited (issue 49)
@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A FedAvg run of 3 rounds on asia stopped after round 1, as ``fedstruct run
    fedavg --stop-after 1`` leaves it."""
    from fedstruct.runs.contract import execute

    out = tmp_path_factory.mktemp("stopped") / "run"
    settings = {"network": "asia", "clients": 2, "rounds": 3, "samples": 600, "test_samples": 200}
    execute("fedavg", [settings], out, stop_after=1)
    return out


def resume_refused(stopped: Path, tmp_path: Path, edit, message: str) -> None:
    """``fedstruct run fedavg --resume`` on a copy of ``stopped`` whose checkpoint
    ``edit(path)`` changed: one line naming ``message``, exit 2, no round run."""
    from typer.testing import CliRunner

    from fedstruct.cli import app

    out = tmp_path / "run"
    out.mkdir()
    for path in stopped.iterdir():
        (out / path.name).write_bytes(path.read_bytes())
    edit(out / "checkpoint.safetensors")
    history = (out / "history.json").read_text()
    result = CliRunner().invoke(app, ["run", "fedavg", "--resume", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert (out / "history.json").read_text() == history


def by_hand(old: bytes, new: bytes):
    """An edit of the file's bytes, as with a text editor (its checksums unchanged; as
    long as before, so that the header's length stays right)."""
    assert len(old) == len(new)

    def edit(path: Path) -> None:
        blob = path.read_bytes()
        assert blob.count(old) == 1
        path.write_bytes(blob.replace(old, new))

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (by_hand(b'\\"round\\": 1, \\"done\\": false', b'\\"round\\": 3, \\"done\\": true '),
         "the checksums of its done, round do not match"),  # reported finished after 1 round
        (by_hand(b'\\"round\\": 1', b'\\"round\\":-1'), "the checksum of its round does not"),
        (by_hand(b'"dtype":"F32","shape":[32,14]', b'"dtype":"I32","shape":[32,14]'),
         "the checksum of its arrays does not match"),  # resumed to a loss of 1.3e17
        (by_hand(b'\\"test_accuracy\\":0.', b'\\"test_accuracy\\":1.'),
         "the checksum of its state does not match"),  # a fake value reached history.json
    ],
)  # fmt: skip
def test_a_checkpoint_edited_by_hand_is_refused_naming_what_changed(
    stopped, tmp_path, edit, message
):
    resume_refused(stopped, tmp_path, edit, message)


def resealed(change_header=None, change_state=None):
    """An edit by someone who recomputes the checksums: the checkpoint read, changed
    and written again as fedstruct writes it."""

    def edit(path: Path) -> None:
        header, tree = read_tree(path)
        if change_state is not None:
            tree["server_state"] = change_state(tree["server_state"])
        write_tree(path, tree, change_header(header) if change_header else header)

    return edit


def _state(**fields):
    return lambda state: dataclasses.replace(state, **fields)


def _ints(state):
    params = {k: v.astype(np.int32) for k, v in state.params.items()}
    return dataclasses.replace(state, params=params)


def _history(**record):
    return lambda state: dataclasses.replace(state, history=[{**state.history[0], **record}])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (resealed(lambda h: {**h, "round": 3, "done": True}),
         "its history holds 1 records after round 3, not one per round"),
        (resealed(lambda h: {**h, "done": True}),
         "says done = true after round 1, but its state says the run had rounds left"),
        (resealed(lambda h: {**h, "round": -1}), "says round -1, outside this run's rounds 1..3"),
        (resealed(lambda h: {**h, "round": 0}), "says round 0, outside this run's rounds 1..3"),
        (resealed(lambda h: {**h, "round": True}), "has no round (a whole number), done"),
        (resealed(lambda h: {**h, "done": "no"}), "has no round (a whole number), done"),
        (resealed(change_state=_ints),
         "its server_state.params['0.weight'] is an array of int32 [32, 14], not of float32"),
        (resealed(change_state=_state(params="x")),
         "its server_state.params is a string, not a mapping"),  # was a traceback
        (resealed(change_state=_state(history={"round": 1})),
         "its server_state.history is a mapping, not a list"),  # was a traceback
        (resealed(change_state=_history(train_loss=[0.1])),
         "its history's record 1 is not an object of numbers and names"),
        (resealed(change_state=_history(round=2)), "its history's record 1 says round 2"),
    ],
)  # fmt: skip
def test_a_resealed_checkpoint_is_checked_against_the_run(stopped, tmp_path, edit, message):
    """Bounds and types, besides the checksums: the round in 1..rounds, done as the
    state says, the state's types and the arrays' dtypes as a new run has them, one
    history record per round."""
    resume_refused(stopped, tmp_path, edit, message)


def test_a_checkpoint_that_runs_out_of_memory_is_one_line(monkeypatch):
    """Issue 51: FedCDnv on pigs with 10 sites ran out of memory while writing its
    checkpoint, and safetensors' Rust side surfaced it as a panic ("PyObject pointer is
    null"); it is one CheckpointError now."""
    import safetensors.numpy

    from fedstruct.errors import CheckpointError
    from fedstruct.fl import checkpoint

    class PanicException(BaseException):  # pyo3's, raised from Rust
        pass

    def panics(*args, **kwargs):
        raise PanicException("PyObject pointer is null")

    monkeypatch.setattr(safetensors.numpy, "save", panics)
    with pytest.raises(CheckpointError, match="out of memory while writing the run's checkpoint"):
        checkpoint.dumps({"a": np.zeros(3)})

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(safetensors.numpy, "save", no_memory)
    with pytest.raises(CheckpointError, match="out of memory"):
        checkpoint.dumps({"a": np.zeros(3)})
