"""scikit-learn's breast-cancer and diabetes tables split into hospitals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from fedstruct.data.datasets.tables import (
    SIZE_LEVELS,
    anes96_sites,
    breast_cancer_concepts,
    breast_cancer_hospitals,
    breast_cancer_sites,
    diabetes_sites,
)
from fedstruct.errors import ConfigError


def test_the_hospitals_hold_every_row_once_in_the_given_shares():
    sites = breast_cancer_sites(seed=3)
    assert [len(s) for s in sites] == [228, 142, 114, 85]  # 40/25/20/15 % of 569
    assert set(sites[0]["diagnosis"]) == {"malignant", "benign"}
    pooled = np.sort(np.concatenate([s["mean radius"].to_numpy() for s in sites]))
    np.testing.assert_array_equal(pooled, np.sort(load_breast_cancer().data[:, 0]))


def test_holes_fall_in_the_features_only_at_about_the_share_asked():
    sites = diabetes_sites(missing=0.1, seed=1)
    features = [c for c in sites[0].columns if c != "progression"]
    holes = np.mean([s[features].isna().to_numpy().mean() for s in sites])
    assert 0.07 < holes < 0.13
    assert not any(s["progression"].isna().any() for s in sites)
    assert set(sites[0]["sex"].dropna()) == {1.0, 2.0}


def test_the_skewed_hospitals_differ_in_class_mix_and_hold_a_categorical_with_holes():
    sites = breast_cancer_hospitals(seed=0)
    assert sum(len(s) for s in sites) == 569 and min(len(s) for s in sites) >= 40
    malignant = [float((s["diagnosis"] == "malignant").mean()) for s in sites]
    assert max(malignant) - min(malignant) > 0.5  # label skew: 9 % to 98 % at seed 0
    pooled = np.concatenate([s["tumour_size"].dropna().to_numpy() for s in sites])
    assert set(pooled) == set(SIZE_LEVELS) and "mean area" not in sites[0]
    counts = np.unique(pooled, return_counts=True)[1]
    assert counts.min() > 170  # tertiles of mean area, less the 3 % holes
    holes = np.mean([s.drop(columns="diagnosis").isna().to_numpy().mean() for s in sites])
    assert 0.02 < holes < 0.04 and not any(s["diagnosis"].isna().any() for s in sites)


@pytest.mark.parametrize(
    ("kwargs", "fragment"), [({"shares": (0.5, 0.6)}, "sum to 1"), ({"missing": 1.0}, "missing")]
)
def test_bad_splits_are_refused(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        diabetes_sites(**kwargs)


def test_anes96_sites_split_by_education_with_holes_off_the_vote():
    sites = anes96_sites(missing=0.05, seed=2)
    assert list(sites) == ["educ-low", "educ-mid", "educ-high"]
    assert sum(len(s) for s in sites.values()) == 944
    assert "educ" not in sites["educ-low"] and not sites["educ-mid"]["vote"].isna().any()
    holes = np.mean([s.drop(columns="vote").isna().to_numpy().mean() for s in sites.values()])
    assert 0.03 < holes < 0.07
    assert str(sites["educ-high"]["PID"].dtype) == "Int64"  # codes stay whole numbers


def test_the_concept_table_cuts_four_measurements_at_their_medians():
    frame = breast_cancer_concepts()
    assert frame.shape == (569, 31) and "mean radius" not in frame
    assert frame["radius_high"].sum() == 284  # above the median of 569 values
    assert set(frame["diagnosis"]) == {"malignant", "benign"}
