"""Test-wise deletion of missing values in the discovery CI tests (issue 31, item 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import load_network
from fedstruct.data.client import ClientData
from fedstruct.discovery import fci, make_ci_test, pc
from fedstruct.discovery.missing import RowMasks
from fedstruct.errors import ConfigError, NonFiniteDataError


def mixed_frame(n: int = 800, seed: int = 0) -> pd.DataFrame:
    """Two categorical and three continuous columns with dependences between them."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.3)) % 3
    x = a + rng.standard_normal(n)
    y = x + 0.5 * b + rng.standard_normal(n)
    w = rng.standard_normal(n)
    return pd.DataFrame({"a": a, "b": b, "x": x, "y": y, "w": w})


def with_holes(frame: pd.DataFrame, rate: float, seed: int = 1) -> pd.DataFrame:
    """MCAR holes: ``-1`` in code columns, NaN in float columns."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    for col in out.columns:
        holes = rng.random(len(out)) < rate
        if out[col].dtype.kind == "i":
            out.loc[holes, col] = -1
        else:
            out.loc[holes, col] = np.nan
    return out


def complete_rows(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    part = frame[columns]
    observed = part.notna() & (part != -1)
    return part[observed.all(axis=1)].reset_index(drop=True)


@pytest.mark.parametrize("test", ["g2", "chi2"])
def test_discrete_pvalue_equals_the_test_on_the_complete_rows(test):
    frame = with_holes(mixed_frame()[["a", "b"]].assign(c=lambda f: (f.a * 2 + 1) % 3), 0.2)
    cards = {"a": 3, "b": 3, "c": 3}
    deleted = make_ci_test(frame, test, cardinalities=cards)
    assert deleted.has_missing
    for i, j, z, cols in [(0, 1, (), ["a", "b"]), (0, 1, (2,), ["a", "b", "c"])]:
        by_hand = make_ci_test(complete_rows(frame, cols), test, cardinalities=cards)
        names = list(by_hand.names)
        expected = by_hand.pvalue(names.index("a"), names.index("b"), (2,) if z else ())
        assert deleted.pvalue(i, j, z) == expected
        assert deleted.rows_used(i, j, z) == by_hand.n_samples < len(frame)


def test_fisherz_pvalue_equals_the_test_on_the_complete_rows():
    frame = with_holes(mixed_frame()[["x", "y", "w"]], 0.15)
    deleted = make_ci_test(frame, "fisherz")
    by_hand = make_ci_test(complete_rows(frame, ["x", "y", "w"]), "fisherz")
    assert deleted.pvalue(0, 1, (2,)) == pytest.approx(by_hand.pvalue(0, 1, (2,)), rel=1e-10)
    pair = make_ci_test(complete_rows(frame, ["x", "w"]), "fisherz")
    assert deleted.pvalue(0, 2) == pytest.approx(pair.pvalue(0, 1), rel=1e-10)
    assert deleted.rows_used(0, 2) == pair.n_samples


def test_dg_pvalue_equals_the_test_on_the_complete_rows():
    frame = with_holes(mixed_frame(), 0.1)
    deleted = make_ci_test(frame, "dg")
    cols = ["a", "b", "x", "y"]
    by_hand = make_ci_test(complete_rows(frame, cols), "dg")
    # a ⊥ y | b, x: every variable of the test has holes; the rows complete on all four
    expected = by_hand.pvalue(0, 3, (1, 2))
    assert deleted.pvalue(0, 3, (1, 2)) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert deleted.pvalue(1, 3, (0, 2)) == pytest.approx(by_hand.pvalue(1, 3, (0, 2)), rel=1e-9)
    assert deleted.rows_used(0, 3, (1, 2)) == by_hand.n_samples


def test_a_complete_table_gives_the_same_tests_either_way():
    frame = load_network("asia").sample(2000, seed=3)
    kept, refused = fci(frame, test="auto"), fci(make_ci_test(frame, "g2", missing="error"))
    assert kept.ci_test.kind == "g2" and not kept.ci_test.has_missing
    assert dict(kept.ci_test.cache) == dict(refused.ci_test.cache)
    assert kept.graph == refused.graph
    assert kept.ci_test.rows_summary() == {
        "rows_min": 2000.0,
        "rows_median": 2000.0,
        "skipped": float(kept.ci_test.n_skipped),
    }


def test_a_test_with_too_few_complete_rows_is_skipped_counted_and_dependent():
    a = np.array([0, 1, -1, -1, 0, 1, 0, 1] * 5)
    b = np.array([-1, -1, 0, 1, 1, 0, 0, 1] * 5)
    frame = pd.DataFrame({"a": a, "b": b, "c": np.tile([0, 1], 20)})
    # a and b are both observed in 4 of every 8 rows: 20 rows, fewer than the
    # toolbox rule's 5 per cell of the 2 x 2 x 2 table (40)
    test = make_ci_test(frame, "g2")
    assert test.query(0, 1, (2,)) == (0.0, True) and test.n_skipped == 1
    assert test.query(0, 1)[1] is False  # 20 rows >= 5 * 4 cells: performed
    # a column missing wherever another is observed: no complete row, skipped even
    # when the rule performs every test
    frame["d"] = np.where(a == -1, 1, -1)
    frame.loc[frame.index % 16 == 2, "d"] = 0
    never = make_ci_test(frame, "g2", small_sample="none")
    assert never.rows_used(0, 3) == 0
    assert never.query(0, 3) == (0.0, True) and never.n_skipped == 1
    x = np.where(np.arange(40) % 2 == 0, np.nan, np.arange(40.0))
    y = np.where(np.arange(40) % 2 == 1, np.nan, np.arange(40.0) ** 0.5)
    z = np.random.default_rng(0).standard_normal(40)
    fz = make_ci_test(pd.DataFrame({"x": x, "y": y, "z": z}), "fisherz")
    assert fz.query(0, 1) == (0.0, True)  # no row holds both
    assert fz.rows_summary() == {"rows_min": 0.0, "rows_median": 0.0, "skipped": 1.0}
    # a skipped test never removes an edge: x - y stays adjacent
    assert pc(fz).graph.is_adjacent("x", "y")


def test_missing_values_need_testwise_and_bad_values_stay_errors():
    frame = with_holes(mixed_frame()[["x", "y"]], 0.1)
    with pytest.raises(NonFiniteDataError, match=r"'x' has NaN.*missing='testwise'"):
        make_ci_test(frame, "fisherz", missing="error")
    frame.loc[3, "y"] = np.inf
    with pytest.raises(NonFiniteDataError, match="'y' has infinite values"):
        make_ci_test(frame, "fisherz")
    with pytest.raises(ConfigError, match="missing-value mode"):
        make_ci_test(frame, "fisherz", missing="drop")


def test_row_masks_and_their_cache():
    observed = np.ones((6, 4), dtype=bool)
    observed[0, 1] = observed[1, 2] = observed[2, 3] = observed[3, 1] = False
    masks = RowMasks(observed)
    assert masks.incomplete == {1, 2, 3}
    assert masks.rows((0,)) is None and masks.count((0,)) == 6
    assert masks.count((1, 2)) == 3 and masks.count((0, 1, 2, 3)) == 2
    assert masks.rows((3, 2, 1)).tolist() == [False, False, False, False, True, True]
    assert masks.count((2, 1, 0)) == 3  # the same set in another order


def test_clients_keep_missing_values_only_when_told():
    frame = pd.DataFrame({"a": [0, 1, -1], "x": [0.5, np.nan, 1.0]})
    with pytest.raises(NonFiniteDataError, match="'x' has 1 NaN"):
        ClientData("s", frame)
    client = ClientData("s", frame, missing_values=True)
    assert np.isnan(client.rows["x"][1])
    with pytest.raises(NonFiniteDataError, match="'x' has 1 infinite values"):
        ClientData("s", frame.assign(x=[0.5, np.inf, 1.0]), missing_values=True)
