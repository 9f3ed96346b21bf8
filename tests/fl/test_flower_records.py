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
