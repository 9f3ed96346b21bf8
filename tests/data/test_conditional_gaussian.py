"""ConditionalGaussianSCM: kinds, dtypes, scales, reproducibility, the linear mechanism."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.graphs import Graph

DAG = Graph.from_edges(["A", "B", "C", "D"], [("A", "C"), ("B", "C"), ("C", "D")])
KINDS = {"A": "categorical", "B": "real", "C": "real", "D": "binary"}


def test_samples_have_the_kinds_dtypes_and_unit_scale():
    model = ConditionalGaussianSCM(DAG, KINDS, seed=0)
    data = model.sample(20_000, seed=1)
    frame = data.frame
    assert model.cardinalities == {"A": 3, "D": 2}
    assert frame["A"].dtype == np.int64 and set(frame["A"]) == {0, 1, 2}
    assert frame["D"].dtype == np.int64 and set(frame["D"]) == {0, 1}
    assert frame["C"].dtype == np.float64
    assert frame["C"].std() == pytest.approx(1.0, abs=0.05)
    assert data.graph.n_edges == 4  # the moral graph marries A and B
    again = model.sample(20_000, seed=1).frame
    assert frame.equals(again)


def test_a_real_child_is_linear_in_its_parents_with_a_share_r2_explained():
    model = ConditionalGaussianSCM(DAG, KINDS, seed=3, r2_range=(0.5, 0.5))
    frame = model.sample(50_000, seed=2).frame
    design = np.column_stack(
        [np.ones(len(frame)), frame["B"], *((frame["A"] == k) for k in (1, 2))]
    ).astype(float)
    coef, *_ = np.linalg.lstsq(design, frame["C"].to_numpy(), rcond=None)
    resid = frame["C"].to_numpy() - design @ coef
    assert 1 - resid.var() / frame["C"].var() == pytest.approx(0.5, abs=0.02)
    # The residual is Gaussian: no leftover non-linearity in B.
    assert abs(np.corrcoef(resid, frame["B"] ** 2)[0, 1]) < 0.02


def test_bad_settings_are_named():
    with pytest.raises(UnknownVariableError, match=r"lacks variables \['D'\]"):
        ConditionalGaussianSCM(DAG, {k: v for k, v in KINDS.items() if k != "D"}, seed=0)
    with pytest.raises(ConfigError, match=r"'A'.*ordinal"):
        ConditionalGaussianSCM(DAG, {**KINDS, "A": "ordinal"}, seed=0)
    with pytest.raises(ConfigError, match="logit_scale"):
        ConditionalGaussianSCM(DAG, KINDS, seed=0, logit_scale=0)


def test_a_perfect_intervention_cuts_a_variable_from_its_parents():
    model = ConditionalGaussianSCM(DAG, KINDS, seed=0)
    plain = model.sample(4000, seed=3).frame
    child = next(v for v in DAG.names if DAG.parents(v))
    done = model.sample(4000, seed=3, interventions={child: "uniform"}).frame
    others = [v for v in DAG.names if v not in DAG.descendants(child) | {child}]
    pd.testing.assert_frame_equal(done[others], plain[others])  # same draws elsewhere
    for parent in DAG.parents(child):
        x, y = done[parent].to_numpy(float), done[child].to_numpy(float)
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.06
    with pytest.raises(UnknownVariableError, match="'nope'"):
        model.sample(10, seed=0, interventions={"nope": "uniform"})
    with pytest.raises(ConfigError, match="give a number or 'uniform'"):
        model.sample(10, seed=0, interventions={child: "high"})
