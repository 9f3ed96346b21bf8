import re

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.sites import SchemaLimits
from fedstruct.errors import PrivacyViolationError
from fedstruct.fl import Message
from fedstruct.privacy import PayloadLimit, RowIndex, audit_description, audit_reply


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


# ------------------------------------------------------------- the schema handshake
def _description(n_rows, **levels):
    out = {"site": "h1", "n_rows": n_rows, "columns": ["x", *levels], "kinds": ["continuous"]}
    out["kinds"] += ["categorical"] * len(levels)
    out.update({f"levels.{c}": list(names) for c, names in levels.items()})
    return out


def test_a_handshake_description_within_the_limits_passes():
    audit_description(_description(50, sex=["f", "m"]), SchemaLimits(), "h1")
    audit_description({"dropped_rows": 0, "constant": ["x"]}, SchemaLimits(), "h1", "report")


@pytest.mark.parametrize(
    ("description", "fragment"),
    [
        (_description(5, sex=["f", "m"]), "has 5 rows, fewer than the 10"),
        (_description(500, code=[f"c{i}" for i in range(101)]), "has 101 levels, more than"),
        (_description(30, id=[f"p{i}" for i in range(27)]), "'id' of site 'h1' looks like an"),
        ({**_description(50), "means": [0.5, 1.5]}, "key 'means' holds float values"),
        ({**_description(50), "rows": [[0, 1]]}, "key 'rows' holds list values"),
    ],
)
def test_a_handshake_description_saying_too_much_is_refused(description, fragment):
    with pytest.raises(PrivacyViolationError, match=re.escape(fragment)):
        audit_description(description, SchemaLimits(), "h1")
