import numpy as np
import pytest

from fedstruct.errors import ProtocolError
from fedstruct.fl import Message, from_json_bytes, json_bytes


def test_sizes_count_arrays_config_and_metrics():
    msg = Message(
        "m.step",
        arrays={"w": np.zeros((3, 4), dtype=np.float32), "i": np.arange(5, dtype=np.int64)},
        config={"round": 2, "names": ["ab", "c"], "blob": b"x" * 20},
        metrics={"n": 10, "loss": 0.5},
    )
    # 48 + 40 array bytes; 8 (int) + 2 + 1 (strings) + 20 (bytes); 2 metrics x 8
    assert msg.nbytes() == 48 + 40 + 8 + 3 + 20 + 16
    # 12 + 5 elements; 1 int + 2 strings + ceil(20/8)=3; 2 metrics
    assert msg.n_entries() == 17 + 1 + 2 + 3 + 2


def test_numpy_scalars_are_unwrapped():
    msg = Message(
        "k", config={"a": np.int64(3), "b": [np.float32(1.5)]}, metrics={"x": np.float64(2)}
    )
    assert msg.config == {"a": 3, "b": [1.5]}
    assert type(msg.config["a"]) is int
    assert msg.metrics["x"] == 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"arrays": {"o": np.array([object()], dtype=object)}},
        {"arrays": {"s": np.array(["a", "b"])}},
        {"config": {"mixed": [1, "a"]}},
        {"config": {"nested": {"a": 1}}},
        {"metrics": {"flag": True}},
        {"metrics": {"name": "x"}},
    ],
)
def test_values_that_cannot_cross_the_wire_are_refused(kwargs):
    with pytest.raises(ProtocolError):
        Message("k", **kwargs)


def test_ragged_data_travels_as_json_bytes():
    sepsets = {"A|B": [["C"], []], "B|D": [["A", "C"]]}
    blob = json_bytes(sepsets)
    assert isinstance(blob, bytes)
    assert from_json_bytes(Message("k", config={"s": blob}).config["s"]) == sepsets
