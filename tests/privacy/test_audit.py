import json
import re

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.sites import SchemaLimits
from fedstruct.errors import ConfigError, PrivacyViolationError
from fedstruct.fl import Message
from fedstruct.fl.message import json_bytes
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


# ------------------------------------------------ rows that are not sent exactly
def test_index_finds_rows_nearly_equal_rescaled_or_standardised(data):
    index = RowIndex(data)
    table = data.to_numpy().astype(float)
    rows = table[np.count_nonzero(table, axis=1) >= 3][:3]  # fewer: see the next test
    assert index.count_matches(rows + 1e-9) == 3
    assert index.count_matches(rows * 2) == 3
    assert index.count_matches(rows / 255) == 3
    standardised = (table - table.mean(axis=0)) / table.std(axis=0)
    assert index.count_matches(standardised[[5, 6]]) == 2
    assert index.count_matches(rows + 1e-3) == 0  # beyond the tolerance
    assert index.count_matches(-rows) == 0  # a negative scale is another direction


@pytest.mark.parametrize("where", [0, 3, 6])
def test_index_finds_rows_with_a_column_added(data, where):
    rows = data.to_numpy()[[1, 2, 3, 4]].astype(float)
    wider = np.insert(rows, where, [7.5, -1.0, 0.25, 3.0], axis=1)
    assert RowIndex(data).count_matches(wider) == 4
    other = np.random.default_rng(3).normal(size=(50, 7))
    assert RowIndex(data).count_matches(other) == 0


def test_rows_with_few_values_must_match_in_size_too():
    rows = np.array([[0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 1.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    index = RowIndex(rows)
    assert index.count_matches(rows) == 3
    # [0, 0, 5, 0] is not the client's row [0, 0, 2, 0] scaled: too many rows look so
    assert index.count_matches(np.array([[0.0, 0.0, 5.0, 0.0], [0.0, 3.0, 3.0, 0.0]])) == 0
    assert index.count_matches(np.array([[2.0, 4.0, 6.0, 8.0]])) == 1


def test_weights_and_counts_do_not_match_random_data():
    rng = np.random.default_rng(5)
    index = RowIndex(rng.normal(size=(2000, 8)))
    assert index.count_matches(rng.normal(size=(5000, 8))) == 0
    assert index.count_matches(rng.integers(0, 50, size=(500, 9)).astype(float)) == 0
    narrow = RowIndex(rng.normal(size=(5000, 2)))  # every direction of a plane is near one
    assert narrow.count_matches(rng.normal(size=(5000, 2))) == 0


def test_rows_in_the_config_part_are_refused(data):
    row = data.to_numpy()[9].tolist()
    leaks = [
        {"flat": [float(v) for v in data.to_numpy()[:2].ravel()]},
        {"rows": json_bytes({"batch": data.to_numpy()[:3].tolist()})},
        {"rows": json.dumps([[0.5, 1.5], row])},
    ]
    for config in leaks:
        with pytest.raises(PrivacyViolationError, match=r"config '(flat|rows)' contains"):
            _audit(Message("m.fit", config=config), data)
    _audit(Message("m.fit", config={"sepsets": json_bytes({"a|b": [["c"], []]}), "n": 5}), data)


# ------------------------------------- common patterns: coincidences are not leaks
@pytest.fixture()
def binary():
    """A binary table of 6 columns where ``[1, 0, 1, 0, 1, 0]`` is typical (148 rows)
    and the other patterns are rarer, like a site's share of asia."""
    rng = np.random.default_rng(0)
    typical = np.tile([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], (140, 1))
    return np.vstack([typical, rng.integers(0, 2, size=(545, 6))]).astype(float)


# The FedCDnv update that the audit refused on a bootstrap replicate of asia (client-5,
# --bootstrap 2 --jobs 1): row 3 is [1, 0, 1, 0, 1, 0] to within 1e-8.
PVALUES = np.array([
    [0.0, 0.942, 0.652, 1.0, -0.981, 0.788],
    [0.942, 0.0, -0.851, 0.0, 1.0, 0.585],
    [0.652, -0.851, 0.0, 1.0, 0.0, -0.719],
    [1.0, 3.59137182e-09, 1.0, 0.0, 1.0, 4.72717094e-58],
    [-0.981, 1.0, 0.0, 1.0, 0.0, 1.0],
    [0.788, 0.585, -0.719, 0.0, 1.0, 0.0],
])  # fmt: skip


def test_a_pvalue_row_that_hits_a_common_pattern_is_not_a_leak(binary):
    _audit(Message("fedcdnv.update", arrays={"pvalues": PVALUES}), binary)
    # The rule before k-anonymity (every match a leak) refused it.
    assert RowIndex(binary, anonymity=10**9).count_matches(PVALUES) == 1
    assert RowIndex(binary).count_matches(PVALUES) == 0


def test_a_rare_row_is_a_leak_even_among_other_rows(binary):
    patterns, counts = np.unique(binary, axis=0, return_counts=True)
    rare = patterns[(counts < 10) & (patterns.sum(axis=1) == 3)][0]  # 3 ones: scalable
    weights = np.random.default_rng(4).normal(size=(20, 6))
    for hidden in (np.vstack([weights, rare]), np.vstack([weights, 3 * rare]).T):
        with pytest.raises(PrivacyViolationError, match="'w' contains 1 row"):
            _audit(Message("m.fit", arrays={"w": hidden}), binary)


def test_an_array_made_of_common_rows_is_still_a_leak(binary):
    index = RowIndex(binary)
    batch = binary[:8]  # all the typical pattern: each row stands for 148 records
    assert index.count_matches(batch) == 8
    assert index.count_matches(batch[[0]]) == 1  # one row sent alone is the whole array
    assert index.count_matches(np.vstack([batch[:3], PVALUES[:2]])) == 3  # a majority
    assert index.count_matches(np.vstack([batch[:3], PVALUES])) == 0  # 3 of 9: chance
    with pytest.raises(PrivacyViolationError, match="'x' contains 8 row"):
        _audit(Message("m.fit", arrays={"x": batch.ravel()}), binary)
    # All-zero rows (constant: never a match) do not dilute a batch, with or without a label.
    diluted = np.vstack([batch[:4], np.zeros((6, 6))])
    assert index.count_matches(diluted) == 4
    assert index.count_matches(np.hstack([diluted, np.arange(10.0)[:, None]])) == 4


def test_the_anonymity_must_be_a_positive_integer(binary):
    for bad in (0, 2.5, True):
        with pytest.raises(ConfigError, match="audit anonymity must be a positive integer"):
            RowIndex(binary, anonymity=bad)


def test_the_asia_bootstrap_that_was_refused_now_runs(tmp_path):
    from typer.testing import CliRunner

    from fedstruct.cli import app

    args = ["run", "fedcdnv", "--network", "asia", "--bootstrap", "2", "--jobs", "1"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output.strip().splitlines()[-1]
    assert (tmp_path / "run" / "consensus.json").exists()


# ------------------------------------- near copies: rounded, noised, a column off, permuted
@pytest.fixture()
def measurements():
    """A mixed table of 400 rows: six measurements of very different scales, a
    three-level code and a 0/1 flag (as a site's encoded rows)."""
    rng = np.random.default_rng(0)
    scale, shift = [1, 2, 5, 10, 100, 0.5], [0, 1, 50, 100, 1000, 0]
    table = rng.normal(size=(400, 6)) * scale + shift
    codes = np.column_stack([rng.integers(0, 3, 400), rng.integers(0, 2, 400)])
    return pd.DataFrame(np.hstack([table, codes]), columns=list("abcdefgh"))


def near_copies(data: pd.DataFrame) -> dict[str, np.ndarray]:
    """Issue 49's tables the audit passed: the site's rows with one column dropped,
    rounded to 2 decimals, with 0.1 % noise, with the columns permuted."""
    table, rng = data.to_numpy(), np.random.default_rng(7)
    return {
        "one column dropped": np.delete(table, 2, axis=1),
        "another dropped": np.delete(table, 7, axis=1),
        "each row without another column": np.stack(
            [np.delete(row, k % 8) for k, row in enumerate(table)]
        ),
        "rounded to 2 decimals": table.round(2),
        "0.1 % noise": table * (1 + 0.001 * rng.normal(size=table.shape)),
        "columns permuted": table[:, rng.permutation(8)],
        "a batch of 20, transposed": table[100:120].round(2).T,
        "a batch of 30 as float32, permuted": table[:30, ::-1].astype(np.float32),
    }


def test_near_copies_of_a_table_are_refused(measurements):
    index = RowIndex(measurements)
    for what, copy in near_copies(measurements).items():
        assert index.count_matches(copy) == 0, what  # the exact check misses each
        found = index.near_copy(copy)
        assert found is not None and found[0] == found[1] >= 10, what
    with pytest.raises(
        PrivacyViolationError,
        match=r"^client 'c1': reply 'm.fit' array 'x' is a copy of the client's rows: 64 of "
        r"the 64 rows looked at hold each value near the client's, one column left out",
    ):
        _audit(Message("m.fit", arrays={"x": near_copies(measurements)["one column dropped"]}),
               measurements)  # fmt: skip
    config = {"rows": json.dumps(measurements.to_numpy().round(2)[:40].tolist())}
    with pytest.raises(PrivacyViolationError, match="config 'rows' is a copy"):
        _audit(Message("m.fit", config=config), measurements)


def test_what_is_not_a_near_copy(measurements, binary):
    index, rng = RowIndex(measurements), np.random.default_rng(8)
    table = measurements.to_numpy()
    spread = table.std(axis=0)
    replies = {
        "weights": rng.normal(size=(64, 8)) * 0.1,
        "weights of one column less": rng.normal(size=(64, 7)),
        "means and deviations": np.vstack([table.mean(axis=0), spread]),
        "a bootstrap of the rows with 5 % noise": table[rng.integers(0, 400, 400)]
        + rng.normal(size=(400, 8)) * spread * 0.05,
        "rounded to 0 decimals": table.round(0),
        "a few rows, rounded (beyond a bulk check: the exact one's)": table[:9].round(2),
        "half of an array": np.vstack([table[:20].round(2), rng.normal(size=(21, 8))]),
    }
    for what, reply in replies.items():
        assert index.near_copy(reply) is None, what
        _audit(Message("m.fit", arrays={"x": reply}), measurements)
    # rows of codes coincide by chance: a table of them is not indexed (PVALUES pass)
    assert RowIndex(binary).near_copy(binary[:, ::-1]) is None
    _audit(Message("fedcdnv.update", arrays={"pvalues": np.tile(PVALUES, (10, 1))}), binary)
