"""The sites' pooled correlations (round 1's co-moments) and the query check built
on them (issue 49, item 9)."""

import numpy as np
import pandas as pd
import pytest
import torch

from fedstruct.errors import DataError
from fedstruct.methods.fedngm.model import NGM
from fedstruct.methods.fedngm.moments import (
    PooledCorrelation,
    pool_comoments,
    site_comoments,
    unfollowed_message,
)
from fedstruct.methods.fedngm.network import NeuralView
from fedstruct.methods.fedngm.schema import Schema, summarise
from fedstruct.methods.fedngm.structure import glasso_graph

KINDS = {"x": "real", "y": "real", "o": "ordinal", "c": "categorical"}


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, n)
    return pd.DataFrame(
        {
            "x": x,
            "y": 0.8 * x + rng.normal(0.0, 1.0, n),
            "o": np.clip(np.round(x / 2), 0, 4),
            "c": rng.integers(0, 3, n),
        }
    )


def _pooled(parts: list[pd.DataFrame]) -> PooledCorrelation | None:
    sites = [(summarise(p, KINDS), *site_comoments(p, KINDS)) for p in parts]
    return pool_comoments(sites, ["x", "y", "o"])


def test_pooled_correlations_equal_those_of_the_pooled_rows():
    table = _table(900, 0)
    shifted = table.iloc[200:550].assign(x=table.x.iloc[200:550] + 1.0)  # site means differ
    parts = [table.iloc[:200], shifted, table.iloc[550:]]
    pooled = _pooled(parts)
    whole = pd.concat(parts)[["x", "y", "o"]]
    np.testing.assert_allclose(pooled.matrix, np.corrcoef(whole.to_numpy().T), atol=1e-12)
    np.testing.assert_allclose(pooled.mean, whole.mean(), atol=1e-12)
    np.testing.assert_allclose(pooled.std, whole.std(ddof=0), atol=1e-12)
    names, pairs, _ = site_comoments(parts[0], KINDS)
    assert names == ["x", "y", "o"] and pairs.tolist() == [[200] * 3] * 3  # no category


def test_with_holes_the_pairs_observed_together_count():
    table = _table(3000, 1)
    holes = table.mask(np.random.default_rng(2).random(table.shape) < 0.1)
    holes["c"] = table["c"]
    parts = [holes.iloc[:1000], holes.iloc[1000:]]
    pooled = _pooled(parts)
    pairwise = holes[["x", "y", "o"]].corr()  # pandas: pairwise-complete
    np.testing.assert_allclose(pooled.matrix, pairwise.to_numpy(), atol=0.02)
    _, pairs, _ = site_comoments(parts[0], KINDS)
    both = (parts[0][["x", "y"]].notna()).all(axis=1).sum()
    assert pairs[0, 1] == both < 1000


def test_the_linear_fit_is_the_gaussian_conditional_mean():
    pooled = PooledCorrelation(
        ("x", "y"), np.array([1.0, 2.0]), np.array([2.0, 3.0]), np.array([[1, 0.6], [0.6, 1]])
    )
    expected, residual = pooled.linear_fit("y", {"x": 5.0})
    assert expected == pytest.approx(2.0 + 0.6 * 3.0 / 2.0 * (5.0 - 1.0))
    assert residual == pytest.approx(3.0 * np.sqrt(1 - 0.36))
    assert pooled.linear_fit("y", {"z": 1.0}) is None
    assert pooled.linear_fit("y", {}) is None
    back = PooledCorrelation.from_json(pooled.to_json())
    assert back.names == pooled.names and np.array_equal(back.matrix, pooled.matrix)


def _linear_ngm(rho: float) -> NGM:
    """An NGM over standard-normal a, b whose views compute f(a, b) = (rho b, rho a)."""
    schema = Schema.from_frame(pd.DataFrame({"a": [-1.0, 1.0], "b": [-1.0, 1.0]}),
                               {"a": "real", "b": "real"})  # fmt: skip
    view = NeuralView(2, [4], seed=0)
    with torch.no_grad():
        view.layers[0].weight.copy_(torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]]))
        view.layers[0].bias.zero_()
        view.layers[1].weight.copy_(torch.tensor([[0, 0, rho, -rho], [rho, -rho, 0, 0]]))
        view.layers[1].bias.zero_()
    return NGM(schema, view, np.array([[0, 1], [1, 0]], bool), np.zeros(2, np.float32),
               np.zeros((0, 2), np.float32), np.zeros((1, 1, 2), np.float32))  # fmt: skip


def test_an_answer_that_does_not_follow_its_evidence_is_named():
    data = PooledCorrelation(("a", "b"), np.zeros(2), np.ones(2), np.array([[1, 0.9], [0.9, 1]]))
    how = {"method": "gradient", "steps": 100}
    right, flat = _linear_ngm(0.9), _linear_ngm(0.0)
    answer = float(right.predict(pd.DataFrame({"a": [2.0]}), "b", **how)[0])
    assert answer == pytest.approx(1.8, abs=0.01)
    assert unfollowed_message(right, data, {"a": 2.0}, "b", answer, **how) is None
    note = unfollowed_message(flat, data, {"a": 2.0}, "b", 0.0, **how)
    assert note.startswith("b = 0 does not follow this evidence: the sites' pooled correlations")
    assert "linear fit of 1.8 (residual deviation 0.436)" in note
    assert "moves +0 from the model's answer with the evidence at its pooled means (0)" in note
    assert "--inference message answers 0" in note
    # far from the fit though moving with the evidence: a wrong fixed point
    note = unfollowed_message(right, data, {"a": 2.0}, "b", 5.0, **how)
    assert "is 3.2 from it, beyond 2 residual deviations" in note
    # nothing to say: weak evidence, no correlations
    assert unfollowed_message(flat, data, {"a": 0.1}, "b", 0.0, **how) is None
    assert unfollowed_message(flat, None, {"a": 2.0}, "b", 0.0, **how) is None


def test_a_graph_step_on_near_copies_is_one_line_naming_them() -> None:
    """Issue 49: GraphicalLassoCV's "Non SPD result" on nearly collinear columns was a
    traceback; it names the two columns now."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000)
    frame = pd.DataFrame(
        {"a": a, "b": a + 1e-9 * rng.standard_normal(1000), "c": rng.standard_normal(1000) + a}
    )
    schema = Schema.from_frame(frame, dict.fromkeys(frame.columns, "real"))
    with pytest.raises(DataError, match="'a' and 'b' are nearly copies of each other"):
        glasso_graph(frame, schema, cv=3, max_rows=10_000, seed=0)
