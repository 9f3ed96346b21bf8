"""The checkpoint format: safetensors + JSON, registered types only, nothing executed."""

from __future__ import annotations

import json
import math
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from safetensors.numpy import save_file

from fedstruct.errors import CheckpointError
from fedstruct.fl import Message, checkpoint
from fedstruct.fl.checkpoint import FORMAT, dumps, loads, read_header, read_tree, write_tree
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
    """A safetensors file whose header holds ``tree`` as a checkpoint would."""
    entries = {"format": FORMAT, "version": "1", "fedstruct": "0.1.0", "header": "{}"}
    entries.update(tree=json.dumps(tree), **metadata)
    save_file({"a0": np.zeros(1)}, str(path), metadata=entries)
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
