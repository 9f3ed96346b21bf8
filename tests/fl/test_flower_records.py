import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.common.serde import recorddict_from_proto, recorddict_to_proto

from fedstruct.errors import PrivacyViolationError, ProtocolError
from fedstruct.fl import Message, from_json_bytes, json_bytes
from fedstruct.fl.flower.records import (
    error_records,
    from_records,
    raise_if_error,
    to_records,
)


def over_the_wire(msg: Message) -> Message:
    """Our message -> Flower records -> protobuf bytes -> records -> our message."""
    proto = recorddict_to_proto(to_records(msg))
    wire = proto.SerializeToString()
    parsed = type(proto)()
    parsed.ParseFromString(wire)
    return from_records(recorddict_from_proto(parsed))


def test_round_trip_is_lossless():
    sepsets = {"A|B": [["C"], []], "B|D": [["A", "C"]]}
    msg = Message(
        "fedcdnv.pag",
        arrays={
            "marks": np.array([[0, 2], [1, 0]], dtype=np.int8),
            "pvalues": np.linspace(0, 1, 7, dtype=np.float64).reshape(7, 1),
            "mask": np.array([True, False, True]),
            "w": np.zeros((0, 3), dtype=np.float32),
        },
        config={
            "round": 3,
            "alpha": 0.05,
            "flag": True,
            "names": ["A", "B", "C"],
            "sizes": [1, 2, 3],
            "empty": [],
            "sepsets": json_bytes(sepsets),
        },
        metrics={"n": 100, "loss": 0.25},
    )
    back = over_the_wire(msg)
    assert back.kind == msg.kind
    assert back.config == msg.config
    assert type(back.config["flag"]) is bool and type(back.config["round"]) is int
    assert from_json_bytes(back.config["sepsets"]) == sepsets
    assert back.metrics == msg.metrics
    assert set(back.arrays) == set(msg.arrays)
    for name, arr in msg.arrays.items():
        assert back.arrays[name].dtype == arr.dtype
        assert back.arrays[name].shape == arr.shape
        np.testing.assert_array_equal(back.arrays[name], arr)
    assert back.nbytes() == msg.nbytes()


def test_client_errors_come_back_as_the_same_exception():
    records = error_records(PrivacyViolationError("client 'c1': reply 'x' contains 1 row"))
    with pytest.raises(PrivacyViolationError, match="client 'c1': reply 'x' contains 1 row"):
        raise_if_error(records)
    raise_if_error(to_records(Message("k")))  # a normal reply raises nothing


def test_foreign_records_are_a_protocol_error():
    from flwr.app import ConfigRecord, RecordDict

    with pytest.raises(ProtocolError, match="without fedstruct records"):
        from_records(RecordDict({"config": ConfigRecord({"x": 1})}))


def test_a_message_is_few_flower_objects(monkeypatch):
    """A deployment sends each Flower object of a message in a request of its own at
    every hop: a model's arrays and the metrics travel in the config record, so that a
    message is three objects; arrays of more than INLINE_BYTES are one chunked array."""
    from flwr.app import Message as FlowerMessage
    from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects
    from flwr.supercore.task_identity import TaskIdentity

    for name in ("_run_id", "_node_id", "_task_id"):  # as in a task's process
        monkeypatch.setattr(TaskIdentity, name, 1, raising=False)
    weights = {f"{k}.weight": np.ones((32, 14), np.float32) * k for k in range(4)}
    fit = Message("fedavg.fit", weights, {"round": 1}, {"loss": 0.5, "n": 10})
    evaluate = Message("fedavg.evaluate", metrics={"correct": 3, "n": 10})

    def objects(msg: Message) -> list[str]:
        flower = FlowerMessage(to_records(msg), dst_node_id=1, message_type="query.fedstruct")
        return sorted(type(o).__name__ for o in get_all_nested_objects(flower).values())

    assert objects(fit) == objects(evaluate) == ["ConfigRecord", "Message", "RecordDict"]
    assert over_the_wire(fit).metrics == {"loss": 0.5, "n": 10}
    monkeypatch.setattr("fedstruct.fl.flower.records.INLINE_BYTES", 100)
    assert objects(fit) == sorted(
        ["ArrayChunk", "Array", "ArrayRecord", "ConfigRecord", "RecordDict", "Message"]
    )
    back = over_the_wire(fit)
    assert set(back.arrays) == set(weights) and back.metrics == fit.metrics
    np.testing.assert_array_equal(back.arrays["3.weight"], weights["3.weight"])


def test_packed_arrays_that_are_not_fedstructs_and_reserved_keys_are_refused():
    from fedstruct.fl.flower.records import METRIC_PREFIX, pack, unpack

    packed = pack({"a": np.arange(6, dtype=np.int64).reshape(2, 3)})
    np.testing.assert_array_equal(unpack(packed)["a"], np.arange(6).reshape(2, 3))
    for bad in (packed[:-1], np.concatenate([packed, packed[:1]]), packed[4:]):
        with pytest.raises(ProtocolError, match="not fedstruct's packing"):
            unpack(bad)
    with pytest.raises(ProtocolError, match="holds Python objects"):
        pack({"o": np.array([object()])})
    for key in (METRIC_PREFIX + "x", "fedstruct.arrays", "fedstruct.kind"):
        with pytest.raises(ProtocolError, match="is reserved"):
            to_records(Message("k", config={key: 1}))
