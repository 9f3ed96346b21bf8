"""FedNGM with missing entries (issue 31 item 7): masked loss, available-case
statistics, the pairwise-complete graph step."""

import numpy as np
import pandas as pd
import torch

from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.model import fit_ngm
from fedstruct.methods.fedngm.schema import Schema, missing_as_nan, summarise
from fedstruct.methods.fedngm.structure import glasso_graph
from fedstruct.methods.fedngm.train import _Columns, fill_missing, regression_loss

KINDS = {"a": "real", "b": "real", "c": "binary"}


def _chain(n, seed=0):
    """a → b → c: c depends on a only through b."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = 1.5 * a + rng.normal(scale=0.5, size=n)
    c = (b + rng.normal(scale=0.7, size=n) > 0).astype(np.int64)
    return pd.DataFrame({"a": a, "b": b, "c": c})


def _mcar(frame, share, seed=1):
    """``frame`` with a ``share`` of every column's entries missing completely at random
    (a code column's missing entry is -1, as site files read with missing=keep)."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    for name in out.columns:
        gone = rng.random(len(out)) < share
        out[name] = out[name].where(~gone, -1 if out[name].dtype.kind == "i" else np.nan)
    return missing_as_nan(out, KINDS)


def test_masked_loss_is_the_unmasked_loss_on_complete_rows_exactly():
    schema = Schema.from_frame(_chain(200), KINDS)
    x = torch.from_numpy(schema.encode(_chain(50, seed=3)))
    raw = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    cols = _Columns(schema)
    everything = torch.ones(x.shape, dtype=torch.bool)
    for per_variable in (False, True):
        plain = regression_loss(raw, x, cols, per_variable)
        masked = regression_loss(raw, x, cols, per_variable, observed=everything)
        assert torch.equal(plain, masked)


def test_a_missing_entry_adds_no_loss_and_no_gradient():
    df = _chain(60, seed=4)
    gappy = df.copy()
    gappy.loc[:9, "b"] = np.nan  # rows 0..9 miss b
    schema = Schema.from_frame(df, KINDS)
    filled, observed = fill_missing(schema.encode(gappy, missing=True), schema)
    assert observed is not None and not observed[:10, 1].any() and observed[10:].all()
    assert np.all(filled[:10, 1] == 0.0)  # b's mean after standardisation
    cols = _Columns(schema)
    raw = torch.randn(filled.shape, generator=torch.Generator().manual_seed(1), requires_grad=True)
    target = torch.from_numpy(filled)
    per_var = regression_loss(raw, target, cols, True, observed=torch.from_numpy(observed))
    # b's loss: the mean over the 50 rows where it is observed, nothing else
    assert torch.allclose(per_var[1], ((raw[10:, 1] - target[10:, 1]) ** 2).mean())
    per_var.sum().backward()
    assert torch.all(raw.grad[:10, 1] == 0) and torch.all(raw.grad[10:, 1] != 0)


def test_statistics_leave_out_missing_entries():
    df = _chain(300)
    gappy = _mcar(df, 0.2)
    stats = summarise(gappy, KINDS)
    kept = gappy["a"].dropna()
    assert stats["a"]["n"] == len(kept) < len(df)
    assert np.isclose(stats["a"]["mean"], kept.mean())
    assert sum(stats["c"]["counts"]) == gappy["c"].notna().sum()
    assert stats["c"]["categories"] == [0, 1]  # no -1 category


def _conditional_error(model, reference, test):
    return float(np.abs(model.predict(test, "b") - reference.predict(test, "b")).mean())


def test_masked_training_keeps_the_complete_data_conditionals_under_20pc_mcar():
    df, test = _chain(1000), _chain(300, seed=9)
    gappy = _mcar(df, 0.2)
    chain = np.zeros((3, 3), bool)
    chain[0, 1] = chain[1, 0] = chain[1, 2] = chain[2, 1] = True
    cfg = FedNGMConfig(epochs=40)
    schema = Schema.from_frame(gappy, KINDS)
    complete, _ = fit_ngm(schema, [(schema.encode(df), 1.0)], chain, cfg, seed=0)
    encoded = schema.encode(gappy, missing=True)
    masked, _ = fit_ngm(schema, [(encoded, 1.0)], chain, cfg, seed=0)
    # without the mask: each gap's mean taken as an observed value (input and target)
    unmasked, _ = fit_ngm(schema, [(fill_missing(encoded, schema)[0], 1.0)], chain, cfg, seed=0)
    masked_err = _conditional_error(masked, complete, test)
    unmasked_err = _conditional_error(unmasked, complete, test)
    assert masked_err < 0.15 * test["b"].std()
    assert masked_err < 0.65 * unmasked_err  # 0.18 against 0.29


def test_the_graph_step_uses_pairwise_complete_correlations():
    gappy = _mcar(_chain(2000), 0.2)
    schema = Schema.from_frame(gappy, KINDS)
    graph = glasso_graph(gappy, schema, cv=3, max_rows=5000, seed=0, edge_level=0.05)
    adj = graph.adjacency()
    assert adj[0, 1] and adj[1, 2] and not adj[0, 2]  # the chain, a ⟂ c | b
