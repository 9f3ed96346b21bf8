"""Federated quantile bins from per-site histograms (issue 31, item 7: FED-CD)."""

import numpy as np
import pytest

from fedstruct.errors import DataError
from fedstruct.fl.binning import QuantileBins, quantile_cuts, shared_grid, site_histogram


def _sites(seed=0):
    rng = np.random.default_rng(seed)
    # sites of different sizes and shifted distributions
    return [
        {"x": rng.normal(loc, scale, size=n)}
        for loc, scale, n in ((0.0, 1.0, 300), (3.0, 2.0, 500), (-1.0, 0.5, 200))
    ]


def test_federated_cuts_are_the_pooled_quantiles_within_one_grid_step():
    sites = _sites()
    bins = QuantileBins.from_sites(["x"], sites, bins=5, cells=200, span=4.0)
    pooled = np.concatenate([s["x"] for s in sites])
    step = 8.0 * pooled.std() / 200
    expected = np.quantile(pooled, [0.2, 0.4, 0.6, 0.8], method="inverted_cdf")
    cuts = np.array(bins.cuts["x"])
    assert len(cuts) == 4
    assert np.all(cuts >= expected) and np.all(cuts - expected <= step + 1e-12)
    codes = bins.codes("x", pooled)
    shares = np.bincount(codes, minlength=5) / len(pooled)
    np.testing.assert_allclose(shares, 0.2, atol=0.03)


def test_the_merge_of_site_histograms_is_the_pooled_histogram():
    sites = _sites(1)
    edges = shared_grid(0.0, 2.0, cells=50)
    pooled = np.concatenate([s["x"] for s in sites])
    merged = np.sum([site_histogram(s["x"], edges) for s in sites], axis=0)
    np.testing.assert_array_equal(merged, site_histogram(pooled, edges))
    assert merged.sum() == len(pooled)


def test_missing_values_get_code_minus_one_and_do_not_count():
    sites = [{"x": np.array([1.0, np.nan, 2.0, 3.0, 4.0])}, {"x": np.array([5.0, 6.0])}]
    bins = QuantileBins.from_sites(["x"], sites, bins=2, cells=64)
    codes = bins.codes("x", sites[0]["x"])
    assert codes[1] == -1 and (codes[[0, 2, 3, 4]] >= 0).all()


def test_a_column_with_few_values_gets_fewer_bins_and_bad_input_is_named():
    edges = shared_grid(0.5, 0.5, cells=8)
    counts = site_histogram(np.array([0.0] * 50 + [1.0] * 50), edges)
    assert len(quantile_cuts(counts, edges, 10)) <= 2
    with pytest.raises(DataError, match="'x' has no value at any site"):
        QuantileBins.from_sites(["x"], [{"x": np.array([np.nan])}], bins=3)
    with pytest.raises(DataError, match="bins must be at least 2"):
        QuantileBins.from_sites(["x"], _sites(), bins=1)
