import numpy as np
import pandas as pd
import pytest

from fedstruct.errors import PrivacyViolationError
from fedstruct.fl import Message
from fedstruct.privacy import PayloadLimit, RowIndex, audit_reply


@pytest.fixture()
def data():
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.integers(0, 3, size=(500, 6)), columns=list("abcdef"))


def _audit(msg, data, max_entries=10**6, graphs=()):
    audit_reply(msg, RowIndex(data), PayloadLimit(max_entries, frozenset(graphs)), "c1")


def test_index_counts_leaked_rows_in_every_layout(data):
    index = RowIndex(data)
    rows = data.to_numpy()[[3, 10, 42]]
    assert index.count_matches(rows) == 3
    assert index.count_matches(rows.astype(np.float32)) == 3  # dtype does not hide a row
    assert index.count_matches(rows.T) == 3  # transposed table
    assert index.count_matches(rows.ravel()) == 3  # flattened table
    assert index.count_matches(rows[None, :, :]) == 3  # extra leading axis
    assert index.count_matches(rows + 0.5) == 0


def test_constant_and_random_rows_are_not_leaks(data):
    index = RowIndex(data)
    assert index.count_matches(np.zeros((4, 6))) == 0
    assert index.count_matches(np.random.default_rng(1).normal(size=(200, 6))) == 0


def test_reply_with_a_data_row_is_refused(data):
    leak = Message(
        "m.fit",
        arrays={
            "w": np.random.default_rng(2).normal(size=(6, 3)),
            "mean": data.to_numpy()[7].astype(float),
        },
    )
    with pytest.raises(PrivacyViolationError, match="'mean' contains 1 row"):
        _audit(leak, data)


def test_reply_over_the_declared_bound_is_refused(data):
    msg = Message("m.fit", arrays={"w": np.zeros(11)})
    _audit(msg, data, max_entries=11)
    with pytest.raises(PrivacyViolationError, match=r"11 entries, more than the 10"):
        _audit(msg, data, max_entries=10)


def test_declared_graphs_are_exempt_but_must_be_mark_matrices(data):
    marks = np.zeros((6, 6), dtype=np.int8)
    marks[0, 1], marks[1, 0] = 2, 1
    _audit(Message("m.graph", arrays={"pag": marks}), data, graphs=["pag"])
    bogus = data.to_numpy()[:6].astype(np.int8)
    with pytest.raises(PrivacyViolationError, match="not an endpoint-mark matrix"):
        _audit(Message("m.graph", arrays={"pag": bogus}), data, graphs=["pag"])
