"""Federated feature statistics (fedstruct.fl.features): exact pooled moments from
per-site sums, the encoding (one-hot, standardised, imputed, indicated), and what they
save."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.errors import DataError, ProtocolError
from fedstruct.fl import checkpoint
from fedstruct.fl.features import (
    CATEGORICAL_IMPUTATIONS,
    FeatureColumns,
    FeatureEncoder,
    FeatureStatistics,
    site_summary,
)
from fedstruct.methods.fedavg.config import CATEGORICAL_IMPUTATIONS as CONFIG_CHOICES

COLUMNS = FeatureColumns({"colour": 3}, ("weight", "height"))


def table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "colour": rng.choice([0, 1, 1, 2], n),
        # a large offset with a small spread: sum x^2 / n - mean^2 loses every digit here
        "weight": 1e8 + rng.normal(0, 1, n),
        "height": rng.normal(170, 10, n),
    })  # fmt: skip
    frame.loc[rng.random(n) < 0.1, "height"] = np.nan
    frame.loc[rng.random(n) < 0.05, "colour"] = -1
    return frame


def sites() -> list[pd.DataFrame]:
    return [table(n, seed) for seed, n in enumerate((400, 37, 150))]


def test_federated_mean_and_variance_equal_the_pooled_rows():
    parts = sites()
    pooled = pd.concat(parts)
    stats = FeatureStatistics.merge(COLUMNS, [site_summary(p, COLUMNS) for p in parts])
    values = pooled[["weight", "height"]].to_numpy()
    np.testing.assert_allclose(stats.mean, np.nanmean(values, axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats.variance[1], np.nanvar(values[:, 1]), rtol=1e-12)
    # at an offset of 1e8 numpy's own two-pass variance is exact to ~1e-10 only
    np.testing.assert_allclose(stats.variance[0], np.nanvar(values[:, 0]), rtol=1e-9)
    naive = np.nanmean(values**2, axis=0) - np.nanmean(values, axis=0) ** 2
    assert abs(naive[0] / np.nanvar(values[:, 0]) - 1) > 1e-3  # what sums of x^2 would give
    assert stats.count.tolist() == np.isfinite(values).sum(axis=0).tolist()
    counts = np.bincount(pooled["colour"][pooled["colour"] >= 0], minlength=3)
    assert stats.levels("colour").tolist() == counts.tolist()
    assert stats.rows == len(pooled) and stats.incomplete == ("colour", "height")


def test_a_summary_holds_aggregates_of_its_declared_size():
    summary = site_summary(sites()[0], COLUMNS)
    assert sum(a.size for a in summary.values()) == COLUMNS.summary_entries == 1 + 3 * 2 + 3
    with pytest.raises(ProtocolError, match="wrong arrays"):
        FeatureStatistics.merge(COLUMNS, [{**summary, "sum": summary["sum"][:1]}])
    with pytest.raises(ProtocolError, match="no site"):
        FeatureStatistics.merge(COLUMNS, [])


def test_the_encoding_standardises_imputes_and_indicates():
    parts = sites()
    pooled = pd.concat(parts, ignore_index=True)
    stats = FeatureStatistics.of_rows(pooled, COLUMNS)
    encoder = FeatureEncoder.from_statistics(stats, COLUMNS.names)
    x = encoder.encode(pooled)
    names = encoder.input_names()
    assert names == ["colour=0", "colour=1", "colour=2", "weight", "height",
                     "colour:missing", "height:missing"]  # fmt: skip
    height, gone = x[:, names.index("height")], pooled["height"].isna().to_numpy()
    observed = height[~gone].astype(np.float64)
    assert abs(observed.mean()) < 1e-5 and abs(observed.std() - 1) < 1e-5
    assert np.all(height[gone] == 0) and np.array_equal(x[:, -1] == 1, gone)
    no_colour = (pooled["colour"] < 0).to_numpy()
    assert np.all(x[no_colour, :3] == 0) and np.all(x[no_colour, names.index("colour:missing")])
    mode = FeatureEncoder.from_statistics(stats, COLUMNS.names, "mode").encode(pooled)
    assert np.all(mode[no_colour, 1] == 1)  # level 1 is the most frequent
    assert np.array_equal(mode[~no_colour], x[~no_colour])


def test_a_site_without_a_column_leaves_it_the_other_sites_statistics():
    """A site missing a column at every row counts no value of it (its rows still count):
    the column's moments and level counts are the other sites', its indicator on; a
    column no site observes has nothing to impute it from."""
    parts = sites()
    parts[1] = parts[1].assign(height=np.nan, colour=-1)
    stats = FeatureStatistics.merge(COLUMNS, [site_summary(p, COLUMNS) for p in parts])
    others = pd.concat([parts[0], parts[2]])
    assert stats.moments("height") == pytest.approx(
        (others["height"].mean(), others["height"].std(ddof=0)), rel=1e-12
    )
    counts = np.bincount(others["colour"][others["colour"] >= 0], minlength=3)
    assert stats.levels("colour").tolist() == counts.tolist()
    assert stats.rows == sum(map(len, parts)) and stats.incomplete == ("colour", "height")
    nowhere = [p.assign(height=np.nan) for p in parts]
    never = FeatureStatistics.merge(COLUMNS, [site_summary(p, COLUMNS) for p in nowhere])
    with pytest.raises(DataError, match=r"features \['height'\] have no value at any site"):
        FeatureEncoder.from_statistics(never, COLUMNS.names)
    assert FeatureEncoder.from_statistics(never, ["colour", "weight"]).width == 5


def test_a_complete_column_gets_no_indicator_and_one_hot_refuses_holes():
    complete = pd.DataFrame({"colour": [0, 1, 2, 1], "weight": [1.0, 2, 3, 4], "height": 1.0})
    stats = FeatureStatistics.of_rows(complete, COLUMNS)
    encoder = FeatureEncoder.from_statistics(stats, ["colour", "weight"])
    assert encoder.indicators == () and encoder.width == 4
    later = complete.assign(weight=[np.nan, 2, 3, 4])  # imputed without an indicator
    assert encoder.encode(later)[0, 3] == 0
    plain = FeatureEncoder.one_hot(FeatureColumns({"colour": 3}))
    with pytest.raises(DataError, match="variable 'colour' has value -1"):
        plain.encode(complete.assign(colour=[-1, 0, 1, 2]), where="input")


def test_statistics_and_encoders_survive_arrays_and_checkpoints():
    stats = FeatureStatistics.merge(COLUMNS, [site_summary(p, COLUMNS) for p in sites()])
    again = FeatureStatistics.from_arrays(COLUMNS, stats.to_arrays())
    assert again is not None and again.rows == stats.rows
    np.testing.assert_array_equal(again.variance, stats.variance)
    _, restored = checkpoint.loads(checkpoint.dumps(stats))
    np.testing.assert_array_equal(restored.mean, stats.mean)
    assert restored.columns == COLUMNS
    encoder = FeatureEncoder.from_statistics(stats, COLUMNS.names, "mode")
    copy = FeatureEncoder.from_arrays(COLUMNS, encoder.to_arrays())
    rows = sites()[1]
    np.testing.assert_array_equal(copy.encode(rows), encoder.encode(rows))


def test_the_run_settings_offer_the_encoders_imputations():
    assert CONFIG_CHOICES == CATEGORICAL_IMPUTATIONS
