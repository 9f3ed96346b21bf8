"""A column a site never observes (its file misses it at every row), for the methods
that read every column at every site (issue 31, "Bad input"): FedAvg and F-CMs'
inputs impute it there from the other sites' federated statistics, its missing
indicator on; FedAvg refuses a site without its target."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fedstruct.errors import DataError, FedstructWarning
from fedstruct.fl import holdout_split
from fedstruct.methods.fcm import FCMRun
from fedstruct.methods.fedavg import FedAvgRun
from fedstruct.runs.contract import build_estimator, runnable


def three_sites(folder, rows=60):
    """h0 observes everything; h1 misses the continuous ``x`` at every row, h2 the
    categorical ``g`` (levels a, b, c; b the most frequent). The sites' ``x`` have
    different means (0, 3, 6), so statistics taken over the wrong sites differ."""
    rng = np.random.default_rng(1)
    frames = []
    for k in range(3):
        x = rng.normal(loc=3.0 * k, size=rows)
        g = rng.choice(["a", "b", "c"], p=[0.2, 0.5, 0.3], size=rows)
        y = np.where(x - 3.0 * k + (g == "b") + rng.normal(size=rows) > 0.5, "yes", "no")
        frames.append(pd.DataFrame({"x": x, "g": g, "z": rng.normal(size=rows), "y": y}))
    frames[1]["x"] = np.nan
    frames[2]["g"] = np.nan
    paths = []
    for k, frame in enumerate(frames):
        paths.append(folder / f"h{k}.csv")
        frame.to_csv(paths[-1], index=False)
    return frames, [str(p) for p in paths]


def fedavg_source(paths, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FedstructWarning)  # "unobserved there": tested elsewhere
        run = FedAvgRun(sites=paths, rounds=1, test_fraction=0.0, hidden=0, **settings)
        source = runnable("fedavg").resolve(run)
        return run, source, source.clients()


def test_fedavg_imputes_an_unobserved_column_from_the_other_sites(tmp_path):
    frames, paths = three_sites(tmp_path)
    run, source, clients = fedavg_source(paths, target="y")
    assert source.unobserved == {"h1": ("x",), "h2": ("g",)}
    assert [c.variables[-1] for c in clients[1:]] == ["x", "g"]  # added, missing everywhere
    model = build_estimator(run, source).fit(clients)
    stats = model.statistics_
    observed_x = pd.concat([frames[0]["x"], frames[2]["x"]])
    mean, sd = stats.moments("x")  # h0's and h2's values only: about 3, not 0 or 2
    assert mean == pytest.approx(observed_x.mean(), rel=1e-12)
    assert sd == pytest.approx(observed_x.std(ddof=0), rel=1e-12)
    g_counts = pd.concat([frames[0]["g"], frames[1]["g"]]).value_counts()
    np.testing.assert_array_equal(stats.levels("g"), g_counts[["a", "b", "c"]].to_numpy())
    names = model.encoder_.input_names()
    at = {c.name: model.encoder_.encode(c.rows) for c in clients}
    x, x_gone, g_gone = (names.index(n) for n in ("x", "x:missing", "g:missing"))
    g_block = [names.index(f"g={code}") for code in range(3)]
    np.testing.assert_array_equal(at["h1"][:, [x, x_gone]], [[0.0, 1.0]] * 60)  # the mean
    np.testing.assert_array_equal(at["h2"][:, g_block], 0.0)  # no level (missing-level)
    np.testing.assert_array_equal(at["h2"][:, g_gone], 1.0)
    # The sites that observe the columns are encoded with the same statistics.
    expected = ((frames[0]["x"] - mean) / sd).to_numpy(dtype=np.float32)
    np.testing.assert_allclose(at["h0"][:, x], expected, rtol=1e-6)
    assert not at["h0"][:, [x_gone, g_gone]].any()
    # The federated mode of g is b, the other sites' most frequent level.
    mode = model.schema_.encoder(stats, "mode")
    assert mode.fill[list(mode.columns.levelled).index("g")] == 1
    # Both sites' own files predict (the column empty there), by the other columns.
    model.data_ = source.inputs()  # the codebook a saved model carries
    for frame in frames[1:]:
        proba = model.predict_proba(frame)
        assert np.isfinite(proba).all() and np.ptp(proba[:, 1]) > 0.05


def test_fedavg_says_which_columns_it_imputes_where():
    from fedstruct.runs.sites import warn_imputed_unobserved

    with pytest.warns(FedstructWarning) as caught:
        warn_imputed_unobserved({"h1": ("x",), "h2": ()}, "mode")
    assert len(caught) == 1  # h2 observes every column: nothing to say
    text = str(caught[0].message)
    assert "site 'h1' does not observe ['x']" in text and "missing indicator on" in text
    assert "categorical: the federated mode" in text


def test_fedavg_refuses_a_site_without_its_target(tmp_path):
    _, paths = three_sites(tmp_path)
    _, source, _ = fedavg_source(paths, target="x")
    with pytest.raises(DataError, match=r"site 'h1' does not observe the target 'x'.*leave the"):
        _ = source.target


def test_f_cms_inputs_a_site_does_not_observe_are_imputed_from_the_others(tmp_path):
    frames, paths = three_sites(tmp_path)
    for frame, path in zip(frames, paths, strict=True):  # a concept: is y's level known
        frame.assign(c=(frame["z"] > 0).astype(int)).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FedstructWarning)
        run = FCMRun(sites=paths, task="y", concepts=["c"], inputs=["x", "z"], rounds=1,
                     client_graphs="flat")  # fmt: skip
        source = runnable("fcm").resolve(run)
        clients = source.clients()
    assert source.unobserved == {"h1": ("x",)}
    assert [c.variables[:2] for c in clients] == [("x", "z")] * 3
    model = build_estimator(run, source).fit(clients)
    kept = {k: holdout_split(60, run.validation_fraction, run.seed, f"h{k}")[0] for k in (0, 2)}
    observed_x = pd.concat([frames[k]["x"].iloc[rows] for k, rows in kept.items()])
    x = model.encoder_.columns.continuous.index("x")
    assert model.encoder_.mean[x] == pytest.approx(observed_x.mean(), rel=1e-12)
    assert model.encoder_.indicators == ("x",)
