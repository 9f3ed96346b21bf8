"""FedNGM sampler fidelity and distillation: ordinal level draws, the log1p schema
transform, the partial-correlation edge test and soft distillation targets."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch

from fedstruct.data.mixed import make_mixed_data
from fedstruct.errors import ConfigError, DataError
from fedstruct.fl import Message
from fedstruct.methods.fedngm.client import summary_arrays, summary_from_message
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.levels import draw_levels, level_probabilities, level_scale
from fedstruct.methods.fedngm.metrics import covariance_error
from fedstruct.methods.fedngm.model import fit_ngm
from fedstruct.methods.fedngm.network import NeuralView, routing_masks
from fedstruct.methods.fedngm.schema import (
    Schema,
    pool_summaries,
    pooled_moments,
    skewness,
    summarise,
)
from fedstruct.methods.fedngm.sources import synthetic_federation
from fedstruct.methods.fedngm.structure import (
    glasso_graph,
    partial_correlation_threshold,
    sample_partial_correlations,
)
from fedstruct.methods.fedngm.train import Objective, Structure, conditional_targets, fit_view


# ------------------------------------------------------------ ordinal level draws
def test_two_levels_give_the_bernoulli_with_the_requested_mean_at_any_scale():
    mean = np.array([0.1, 0.5, 0.93])
    for scale in (0.05, 1.0, 40.0):
        p = level_probabilities(mean, np.array([0.0, 1.0]), scale)
        np.testing.assert_allclose(p, np.column_stack([1 - mean, mean]), atol=1e-8)


def test_level_distribution_matches_the_mean_and_clips_it_into_the_range():
    levels = np.array([-1.4, -0.7, 0.0, 0.7, 1.4])
    mean = np.array([-3.0, -1.2, 0.0, 0.33, 1.39, 5.0])
    p = level_probabilities(mean, levels, 0.5)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    edge = 1e-3 * 2.8  # the target is clipped 0.1 % of the range inside the ends
    expected = [-1.4 + edge, -1.2, 0, 0.33, 1.39, 1.4 - edge]
    np.testing.assert_allclose(p @ levels, expected, atol=1e-7)
    # symmetric around the middle level; nearly uniform for a huge scale
    np.testing.assert_allclose(p[2], p[2][::-1], atol=1e-12)
    flat = level_probabilities(np.array([0.0]), levels, 1e3)[0]
    np.testing.assert_allclose(flat, 0.2, atol=1e-6)


def test_a_base_measure_is_tilted_and_without_information_returned_as_is():
    levels = np.log1p(np.array([0.0, 1.0, 2.0, 5.0, 30.0]))
    base = np.array([0.4, 0.3, 0.2, 0.08, 0.02])
    marginal_mean = float(base @ levels)
    p = level_probabilities(np.array([marginal_mean, 1.0]), levels, 1e4, base)
    np.testing.assert_allclose(p[0], base, atol=1e-6)  # the marginal itself
    assert p[1] @ levels == pytest.approx(1.0, abs=1e-8)
    # the tilt is exponential in the level: p / base is log-linear at a huge scale
    ratio = np.log(p[1] / base)
    slope = np.diff(ratio) / np.diff(levels)
    np.testing.assert_allclose(slope, slope[0], rtol=1e-4)
    with pytest.raises(DataError, match=r"give one positive weight per level \(5\)"):
        level_probabilities(np.array([1.0]), levels, 1.0, base[:3])


def test_level_scale_recovers_the_scale_that_generated_the_levels():
    rng = np.random.default_rng(0)
    levels = np.arange(5.0)
    mean = rng.uniform(0.3, 3.7, 20000)
    values = draw_levels(mean, levels, 0.8, rng)
    # the draws follow the probabilities (and so have the requested means)
    assert abs(values.mean() - mean.mean()) < 0.02
    scale = level_scale(mean, values, levels)
    assert scale == pytest.approx(0.8, rel=0.04)
    # by construction the average conditional variance equals the mean squared residual
    # on the 4,000 evenly spaced rows the calibration uses
    pick = np.linspace(0, len(mean) - 1, 4000).round().astype(int)
    p = level_probabilities(mean[pick], levels, scale)
    variance = (p @ levels**2 - (p @ levels) ** 2).mean()
    residual = ((values - mean)[pick] ** 2).mean()
    assert variance == pytest.approx(residual, rel=1e-4)


def _ordinal_frame(n, seed):
    """A real ``a`` and a 5-level equal-frequency ordinal ``o`` driven by it."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    latent = 0.8 * a + 0.6 * rng.normal(size=n)
    cuts = np.quantile(latent, [0.2, 0.4, 0.6, 0.8])
    return pd.DataFrame({"a": a, "o": np.searchsorted(cuts, latent).astype(float)})


def test_gibbs_samples_keep_an_ordinal_variance_and_its_covariance():
    """Gaussian noise snapped to the levels gave 0.76-0.80 of the variance and shrank
    the covariance with the neighbour by a quarter; the level draws keep both."""
    df = _ordinal_frame(6000, 0)
    schema = Schema.from_frame(df, {"a": "real", "o": "ordinal"})
    x = schema.encode(df)
    model, _ = fit_ngm(schema, [(x, 1.0)], np.array([[0, 1], [1, 0]], bool),
                       FedNGMConfig(epochs=15), seed=0)  # fmt: skip
    s = model.sample_encoded(8000, seed=1)
    assert set(np.unique(model.schema.decode(s).o)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    cs, cd = np.cov(s.T), np.cov(x.T)
    assert cs[1, 1] / cd[1, 1] == pytest.approx(1.0, abs=0.05)
    assert cs[0, 1] / cd[0, 1] == pytest.approx(1.0, abs=0.06)
    assert covariance_error(s, x) < 0.05


# ------------------------------------------------------------ log1p transform
def _skewed_frame(n, seed):
    rng = np.random.default_rng(seed)
    count = rng.poisson(np.exp(rng.normal(0.8, 1.0, n))).astype(float)  # heavy tail
    flag = (rng.random(n) < 0.1).astype(float)  # mostly zero: skewed, not heavy-tailed
    shifted = rng.exponential(1.0, n) ** 2 - 0.5  # skewed, but negative values
    return pd.DataFrame({"count": count, "flag": flag, "shifted": shifted})


SKEWED_KINDS = {"count": "ordinal", "flag": "real", "shifted": "real"}


def test_pooled_moments_and_skewness_equal_those_of_the_pooled_rows():
    rng = np.random.default_rng(3)
    parts = [rng.gamma(2.0, 1.0, n) + k for k, n in enumerate((50, 200, 75))]
    whole = np.concatenate(parts)
    summary = [
        (len(p), p.mean(), ((p - p.mean()) ** 2).sum(), ((p - p.mean()) ** 3).sum()) for p in parts
    ]
    n, mean, m2, m3 = pooled_moments(summary)
    assert (n, mean) == (325, pytest.approx(whole.mean(), rel=1e-12))
    assert m2 == pytest.approx(((whole - whole.mean()) ** 2).sum(), rel=1e-10)
    assert m3 == pytest.approx(((whole - whole.mean()) ** 3).sum(), rel=1e-10)
    assert skewness(n, m2, m3) == pytest.approx(scipy.stats.skew(whole), rel=1e-10)


def test_only_a_heavy_right_tail_gets_the_log1p_transform():
    df = _skewed_frame(4000, 0)
    halves = [summarise(df.iloc[:1000], SKEWED_KINDS), summarise(df.iloc[1000:], SKEWED_KINDS)]
    schema = pool_summaries(halves, log_skew=2.0)
    assert {v.name: v.transform for v in schema.variables} == {
        "count": "log1p", "flag": "", "shifted": ""
    }  # fmt: skip
    assert scipy.stats.skew(df["flag"]) > 2.0  # skewed, yet left alone
    count = schema.spec("count")
    assert count.mean == pytest.approx(np.log1p(df["count"]).mean(), rel=1e-10)
    assert count.std == pytest.approx(np.log1p(df["count"]).std(ddof=0), rel=1e-10)
    assert count.scale_mean == pytest.approx(df["count"].mean(), rel=1e-10)
    assert pool_summaries(halves).spec("count").transform == ""  # log_skew=None
    # encode -> decode returns the data, levels included
    back = schema.decode(schema.encode(df))
    np.testing.assert_allclose(back["count"], df["count"], atol=1e-4)
    x = schema.encode(df)
    np.testing.assert_allclose(x[:, 0].mean(), 0.0, atol=1e-5)
    np.testing.assert_allclose(count.encoded_levels[0], (0.0 - count.mean) / count.std)
    with pytest.raises(DataError, match=r"'count' is modelled as log\(1 \+ x\)"):
        schema.encode(df.head(2).assign(count=[1.0, -1.0]))
    assert Schema.from_json(schema.to_json()) == schema


def test_the_describe_message_carries_the_log_moments():
    df = _skewed_frame(500, 1)
    summary = summarise(df, SKEWED_KINDS)
    arrays, config = summary_arrays(summary)
    assert "log_moments:shifted" not in arrays  # negative values: no log moments
    back = summary_from_message(Message("fedngm.describe", arrays=arrays, config=config))
    assert back["count"]["log_m3"] == pytest.approx(summary["count"]["log_m3"])
    assert pool_summaries([back], log_skew=2.0) == pool_summaries([summary], log_skew=2.0)


def test_a_log1p_model_predicts_and_samples_on_the_data_scale():
    """A count with a lognormal tail: on the log scale its conditional is Gaussian-like,
    so the samples keep its zeros and its rank dependence; modelled raw, they do not.
    (Its raw covariance is too tail-dominated to compare on 4,000 rows.)"""
    rng = np.random.default_rng(5)
    n = 4000
    a = rng.normal(size=n)
    y = np.round(np.exp(0.7 + 0.8 * a + 0.6 * rng.normal(size=n)) - 1.0).clip(0.0)
    df = pd.DataFrame({"a": a, "y": y})
    kinds = {"a": "real", "y": "ordinal"}
    zeros, rank = float((df.y == 0).mean()), scipy.stats.spearmanr(df.a, df.y)[0]
    models, stats = {}, {}
    for log_skew in (2.0, None):
        schema = Schema.from_frame(df, kinds, log_skew=log_skew)
        models[log_skew], _ = fit_ngm(schema, [(schema.encode(df), 1.0)],
                                      np.array([[0, 1], [1, 0]], bool),
                                      FedNGMConfig(epochs=20), seed=0)  # fmt: skip
        samples = models[log_skew].sample(4000, seed=2)
        assert set(samples.y) <= set(df.y)
        stats[log_skew] = (float((samples.y == 0).mean()), scipy.stats.spearmanr(samples)[0])
    assert models[2.0].schema.spec("y").transform == "log1p"
    assert models[None].schema.spec("y").transform == ""
    assert stats[2.0][0] == pytest.approx(zeros, abs=0.06)  # 0.400 vs 0.371 (0.551 without)
    assert stats[2.0][1] == pytest.approx(rank, abs=0.03)  # 0.758 vs 0.754
    assert stats[None][0] > zeros + 0.1  # 0.551
    assert stats[None][1] < rank - 0.1  # 0.594
    pred = models[2.0].predict(df.head(500), "y")  # back on the count scale
    assert pred.min() >= 0.0
    assert np.abs(pred - df.y[:500]).mean() < 0.8 * np.abs(df.y[:500] - df.y.mean()).mean()


# ------------------------------------------------------------ point predictions
def _fit_pair(df, kinds, log_skew=None):
    schema = Schema.from_frame(df, kinds, log_skew=log_skew)
    model, _ = fit_ngm(schema, [(schema.encode(df), 1.0)], np.array([[0, 1], [1, 0]], bool),
                       FedNGMConfig(epochs=20), seed=0)  # fmt: skip
    return model


def test_the_median_prediction_follows_a_skewed_residual_whose_spread_grows():
    """``y = a + (1 + |a|) e``, ``e ~ Exp(1) - 1``: the conditional mean is ``a``, the
    conditional median ``a + (1 + |a|)(ln 2 - 1)``. The median point (binned residual
    quantiles) has the lower MAE, the mean point the lower RMSE, and each beats the
    constant mean on its own metric."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=8000)
    y = a + (1 + np.abs(a)) * (rng.exponential(size=8000) - 1.0)
    df = pd.DataFrame({"a": a, "y": y})
    train, test = df.iloc[:6000], df.iloc[6000:]
    model = _fit_pair(train, {"a": "real", "y": "real"})
    median = model.predict(test, "y", point="median")
    mean = model.predict(test, "y")
    t = test.y.to_numpy()
    truth = test.a.to_numpy() + (1 + np.abs(test.a.to_numpy())) * (np.log(2) - 1)
    assert np.abs(median - truth).mean() < 0.25  # the conditional median, not the mean
    assert np.abs(mean - test.a.to_numpy()).mean() < 0.25
    mae = {k: np.abs(v - t).mean() for k, v in (("median", median), ("mean", mean))}
    rmse = {k: np.sqrt(((v - t) ** 2).mean()) for k, v in (("median", median), ("mean", mean))}
    assert mae["median"] < 0.99 * mae["mean"]  # 0.959; theory: ln 2 / (2/e) = 0.94
    assert rmse["mean"] < 0.99 * rmse["median"]  # 0.958; theory: 1 / 1.046 = 0.956
    assert model.quantiles.shape == (5, 21, 2) and model.bin_edges.shape == (4, 2)
    spread = model.quantiles[:, -1, 1] - model.quantiles[:, 0, 1]
    assert spread[0] > 1.5 * spread[2] < spread[4]  # |a| large at both ends
    with pytest.raises(ConfigError, match="point"):
        model.predict(test, "y", point="mode")


def test_the_mean_prediction_of_a_log1p_variable_is_the_smearing_estimate():
    """``y = exp(a + 0.8 e) - 1``: ``E[y | a] = exp(a + 0.32) - 1``; back-transforming
    the log-scale prediction gives the median ``exp(a) - 1``, a third lower."""
    rng = np.random.default_rng(4)
    a = rng.normal(0.5, 0.5, size=8000)
    y = np.expm1(a + 0.8 * rng.normal(size=8000))
    df = pd.DataFrame({"a": a, "y": y.clip(0.0)})
    model = _fit_pair(df.iloc[:6000], {"a": "real", "y": "real"}, log_skew=1.0)
    assert model.schema.spec("y").transform == "log1p"
    test = df.iloc[6000:]
    ratio_mean = model.predict(test, "y") / np.expm1(test.a + 0.32)
    ratio_median = model.predict(test, "y", point="median") / np.expm1(test.a)
    assert np.median(ratio_mean) == pytest.approx(1.0, abs=0.12)  # 1.07; exp(a) - 1: 0.73
    assert np.median(ratio_median) == pytest.approx(1.0, abs=0.12)  # 1.05


def test_the_paired_bootstrap_tells_a_tie_from_a_clear_loss():
    from fedstruct.methods.fedngm.metrics import headline_error, win_probability
    from fedstruct.methods.fedngm.schema import VariableSpec

    rng = np.random.default_rng(0)
    y = rng.normal(size=2000)
    real = VariableSpec("y", "real")
    good, noisy = y + rng.normal(0, 0.5, 2000), y + rng.normal(0, 0.6, 2000)
    assert headline_error(real, y, good) == pytest.approx(np.abs(good - y).mean())
    assert win_probability(real, y, good, good) == 0.5  # the same predictions: ties only
    assert win_probability(real, y, good, noisy) > 0.95  # 0.40 vs 0.48 MAE, paired
    assert win_probability(real, y, noisy, good) < 0.05
    twin = good + rng.normal(0, 0.01, 2000)  # as good up to noise: neither wins clearly
    assert 0.05 < win_probability(real, y, good, twin) < 0.95
    cats = VariableSpec("c", "categorical", categories=(0, 1, 2))
    labels = np.repeat([0, 1, 2], [400, 80, 20])
    majority = np.zeros(500, dtype=int)  # recall 1, 0, 0: macro recall 1/3
    right = labels.copy()
    right[:60] = 1  # recall 340/400, 1, 1
    assert headline_error(cats, labels, majority) == pytest.approx(2 / 3)
    assert headline_error(cats, labels, right) == pytest.approx(1 - (0.85 + 2) / 3)
    assert win_probability(cats, labels, right, majority) == 1.0


# ------------------------------------------------------------ edge test
def test_partial_correlation_threshold_controls_the_family_wise_error():
    """Independent columns: a false edge in at most ~level of the data sets."""
    rng = np.random.default_rng(0)
    n, p, level, reps = 400, 8, 0.2, 300
    threshold = partial_correlation_threshold(n, p, level)
    assert threshold == pytest.approx(
        np.tanh(scipy.stats.norm.isf(level / (2 * 28)) / np.sqrt(n - p - 1)), rel=1e-12
    )
    hits = 0
    for _ in range(reps):
        prec = np.linalg.inv(np.cov(rng.normal(size=(n, p)).T))
        d = np.sqrt(np.diag(prec))
        partial = np.abs(prec / np.outer(d, d))[np.triu_indices(p, 1)]
        hits += bool((partial > threshold).any())
    assert 0.08 < hits / reps < 0.25  # Bonferroni: at most 0.2, near it for 28 tests
    assert partial_correlation_threshold(10, 12, 0.01) == 1.0  # too few rows


def test_the_edge_test_keeps_the_chain_and_drops_what_cv_glasso_adds():
    rng = np.random.default_rng(1)
    n = 3000
    a = rng.normal(size=n)
    b = 0.7 * a + rng.normal(size=n)
    c = 0.7 * b + rng.normal(size=n)
    others = rng.normal(size=(n, 5))
    df = pd.DataFrame({"a": a, "b": b, "c": c, **{f"z{k}": others[:, k] for k in range(5)}})
    schema = Schema.from_frame(df, dict.fromkeys(df.columns, "real"))
    tested = glasso_graph(df, schema, cv=3, max_rows=5000, seed=0, edge_level=0.01)
    assert {frozenset((e.a, e.b)) for e in tested.edges()} == {
        frozenset("ab"), frozenset("bc")
    }  # fmt: skip
    plain = glasso_graph(df, schema, cv=3, max_rows=5000, seed=0)
    assert len(list(plain.edges())) > 2


def test_sample_partial_correlations_are_the_residual_correlations():
    """Oracle: correlate the residuals of i and j regressed on the other columns."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 5)) @ rng.normal(size=(5, 5))
    partial = sample_partial_correlations(x)
    for i, j in ((0, 1), (2, 4), (1, 3)):
        rest = np.column_stack([np.ones(500), np.delete(x, [i, j], axis=1)])
        res = [x[:, k] - rest @ np.linalg.lstsq(rest, x[:, k], rcond=None)[0] for k in (i, j)]
        assert partial[i, j] == pytest.approx(np.corrcoef(res)[0, 1], abs=1e-9)
    assert sample_partial_correlations(x[:6]) is None  # fewer rows than columns + 2
    assert sample_partial_correlations(np.column_stack([x, x[:, 0] + x[:, 1]])) is None


def test_a_failed_cv_penalty_falls_back_to_the_sample_partial_correlations():
    """Mixed data seed 2, client-1 (8,000 rows, 44 design columns): scikit-learn's
    GraphicalLassoCV fails at the small penalties (scores -inf) and picks 0.185, whose
    graph has 26 of the 45 true edges (7 false); the sample partial correlations give
    42 (1 false), by the ``partial`` method and by the default's fallback."""
    import warnings

    from sklearn.covariance import GraphicalLassoCV

    from fedstruct.methods.fedngm.structure import glasso_design

    data = make_mixed_data(30, 50_000, seed=2)
    rows = synthetic_federation(data, n_clients=3, seed=2).clients[0].rows
    schema = Schema.from_frame(rows, {v: data.kinds[v] for v in rows.columns})
    truth = data.graph.restrict(list(schema.names)).adjacency()
    assert truth.sum() // 2 == 45
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = GraphicalLassoCV(cv=3, max_iter=200).fit(glasso_design(rows, schema)[0])
    assert not np.all(np.isfinite(cv.cv_results_["mean_test_score"]))
    precision = np.abs(cv.precision_) > 1e-6
    owner = glasso_design(rows, schema)[1]
    raw = np.zeros_like(truth)
    raw[owner[np.nonzero(precision)[0]], owner[np.nonzero(precision)[1]]] = True
    np.fill_diagonal(raw, False)
    assert (raw & truth).sum() // 2 < 35  # what the failed CV's penalty alone keeps
    for partial in (False, True):
        graph = glasso_graph(rows, schema, cv=3, max_rows=10_000, seed=2, edge_level=0.2,
                             sample_partials=partial)  # fmt: skip
        found = graph.adjacency()
        assert ((found & truth).sum() // 2, (found & ~truth).sum() // 2) == (42, 1)


def test_only_a_large_penalty_chosen_over_failed_fits_counts_as_a_failed_cv():
    """Failures at α = 0 (nearly collinear columns, the RAND table) leave a penalty
    below the test's threshold: the glasso graph stands; a penalty above it, chosen
    because every smaller one failed (synthetic seed 2), does not."""
    from types import SimpleNamespace

    from fedstruct.methods.fedngm.structure import cv_failed_below

    def fitted(alpha, failed):
        alphas = np.array([0.0, 0.004, 0.05, 0.185, 0.5])
        scores = np.where(np.isin(alphas, failed), -np.inf, -1.0)
        return SimpleNamespace(
            alpha_=alpha, cv_results_={"alphas": alphas, "mean_test_score": scores}
        )

    assert cv_failed_below(fitted(0.185, [0.0, 0.004, 0.05]), 0.044)
    assert not cv_failed_below(fitted(0.004, [0.0]), 0.044)  # small penalty: keep it
    assert not cv_failed_below(fitted(0.185, []), 0.044)  # CV chose it freely
    assert not cv_failed_below(fitted(0.185, [0.5]), 0.044)  # only a larger one failed


# ------------------------------------------------------------ soft targets
def test_conditional_targets_are_the_model_predictions_given_the_others():
    view = NeuralView(2, [4], seed=0)
    with torch.no_grad():  # f(a, b) = (0.5 b, 0.5 a), exactly
        view.layers[0].weight.copy_(torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]]))
        view.layers[0].bias.zero_()
        view.layers[1].weight.copy_(torch.tensor([[0, 0, 0.5, -0.5], [0.5, -0.5, 0, 0]]))
        view.layers[1].bias.zero_()
    schema = Schema.from_frame(
        pd.DataFrame({"a": [-1.0, 1.0], "b": [-1.0, 1.0]}), {"a": "real", "b": "real"}
    )
    x = np.array([[2.0, -1.0], [0.5, 3.0]], np.float32)
    t = conditional_targets(view, schema, x, [[0], [1]])
    np.testing.assert_allclose(t, [[-0.5, 1.0], [1.5, 0.25]], atol=1e-6)


def test_soft_targets_distil_a_teacher_better_than_its_draws():
    rng = np.random.default_rng(2)
    n = 3000
    a = rng.normal(size=n)
    b = np.tanh(2 * a) + 0.5 * rng.normal(size=n)
    c = (b + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    df = pd.DataFrame({"a": a, "b": b, "c": c})
    schema = Schema.from_frame(df, {"a": "real", "b": "real", "c": "binary"})
    adj = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], bool)
    cfg = FedNGMConfig(epochs=10)
    teacher, _ = fit_ngm(schema, [(schema.encode(df), 1.0)], adj, cfg, seed=0)
    draws = teacher.sample_encoded(1500, seed=3)
    soft = conditional_targets(teacher.view, schema, draws, [[0, 2], [1]])
    probe = schema.encode(df.iloc[:1000])
    gaps = {}
    for label, source in (("hard", (draws, 1.0)), ("soft", (draws, 1.0, soft))):
        student = NeuralView(schema.n_columns, [3 * 8], seed=4)
        student.route(routing_masks(schema.widths, adj, 8))
        fit_view(student, schema, Objective([source], Structure.for_graph(adj, 0.0)),
                 epochs=20, batch_size=128, learning_rate=3e-3, validation_fraction=0.1,
                 seed=0)  # fmt: skip
        ref = conditional_targets(teacher.view, schema, probe, [[0, 2], [1]])
        got = conditional_targets(student, schema, probe, [[0, 2], [1]])
        gaps[label] = float(np.mean((got - ref) ** 2))
    assert gaps["soft"] < 0.5 * gaps["hard"]


def test_new_settings_are_checked():
    with pytest.raises(ConfigError, match="fedngm log_skew must be a finite number \\(or null\\)"):
        FedNGMConfig(log_skew=float("inf"))
    with pytest.raises(
        ConfigError, match=r"fedngm edge_level must be a number in \(0, 1\) \(or null\)"
    ):
        FedNGMConfig(edge_level=1.5)
    with pytest.raises(ConfigError, match="fedngm soft_targets must be true or false"):
        FedNGMConfig(soft_targets="yes")
    cfg = FedNGMConfig()
    assert (cfg.log_skew, cfg.edge_level, cfg.soft_targets, cfg.public_weight) == (
        2.0, 0.2, True, 1.0
    )  # fmt: skip
