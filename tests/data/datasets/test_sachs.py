"""The shipped Sachs et al. (2005) flow-cytometry data, its discretisations and ground truth."""

from __future__ import annotations

import gzip
import hashlib
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.datasets.sachs import (
    SACHS_CONDITIONS,
    SACHS_FILE,
    SACHS_VARIABLES,
    RowSampler,
    hartemink_codes,
    load_sachs_data,
    log_interval_codes,
    quantile_codes,
    sachs_ground_truth,
    sachs_row_conditions,
)
from fedstruct.data.networks import load_network
from fedstruct.errors import ConfigError, DataError, SampleSizeError
from fedstruct.methods.fedcdnv.sources import variable_subset_clients, variable_subsets

CDT_SHA256 = "fc331dcd0bc1d8765986b88cd1d23dd5a3f52e4ffc299fdf96de9d522ddf01aa"
CDT_HEADER = "praf,pmek,plcg,PIP2,PIP3,p44/42,pakts473,PKA,PKC,P38,pjnk"


def _shipped_text() -> str:
    path = resources.files("fedstruct.data").joinpath("files", SACHS_FILE)
    return gzip.decompress(path.read_bytes()).decode("ascii")


# ------------------------------------------------------------------ the file
def test_file_is_cdt_file_plus_condition_column():
    text = _shipped_text()
    lines = text.split("\n")
    assert lines[0] == "Raf,Mek,Plcg,PIP2,PIP3,Erk,Akt,PKA,PKC,P38,Jnk,condition"
    body = [line.rsplit(",", 1)[0] for line in lines[1:-1]]
    original = "\n".join([CDT_HEADER, *body]) + "\n"
    assert hashlib.sha256(original.encode("ascii")).hexdigest() == CDT_SHA256
    assert len(body) == 7466


def test_file_size_is_small():
    path = resources.files("fedstruct.data").joinpath("files", SACHS_FILE)
    assert len(path.read_bytes()) < 200_000


def test_raw_data_shape_names_and_values():
    frame = load_sachs_data(None)
    assert frame.shape == (7466, 11)
    assert tuple(frame.columns) == SACHS_VARIABLES == load_network("sachs").names
    assert (frame.dtypes == np.float64).all()
    assert frame.index.tolist() == list(range(7466))
    # First and last cells of cdt's file, by the original antibody names.
    first = dict(praf=26.4, pmek=13.2, plcg=8.82, PIP2=18.3, PIP3=58.8, Erk=6.61, Akt=17.0,
                 PKA=414.0, PKC=17.0, P38=44.9, pjnk=40.0)  # fmt: skip
    last = dict(praf=30.5, pmek=1.01, plcg=7.3, PIP2=173.0, PIP3=22.9, Erk=6.61, Akt=13.7,
                PKA=890.0, PKC=1.0, P38=1.0, pjnk=1.65)  # fmt: skip
    rename = {"praf": "Raf", "pmek": "Mek", "plcg": "Plcg", "pjnk": "Jnk"}
    for row, expected in ((0, first), (7465, last)):
        for name, value in expected.items():
            assert frame.loc[row, rename.get(name, name)] == value
    assert frame.to_numpy().min() == 1.0
    assert frame["PKA"].max() == 8896.0


def test_conditions_per_row_and_subsets():
    labels = sachs_row_conditions()
    assert labels.value_counts(sort=False).tolist() == [c.n_cells for c in SACHS_CONDITIONS]
    assert [c.n_cells for c in SACHS_CONDITIONS] == [853, 902, 911, 723, 810, 799, 848, 913, 707]
    # Blocks in file order.
    assert labels.iloc[852] == "cd3cd28" and labels.iloc[853] == "cd3cd28icam2"
    assert labels.iloc[4998] == "cd3cd28+ly" and labels.iloc[7465] == "b2camp"

    obs = load_sachs_data(None, conditions="observational")
    assert obs.index.tolist() == list(range(853))
    assert load_sachs_data(None, conditions="general").shape == (1755, 11)
    u0126 = load_sachs_data(None, conditions="cd3cd28+u0126")
    assert u0126.index[0] == 4199 and len(u0126) == 799
    # Sequences keep file order whatever order they are given in.
    pair = load_sachs_data(None, conditions=["pma", "cd3cd28"])
    assert len(pair) == 853 + 913 and pair.index[0] == 0 and pair.index[853] == 5846
    assert (sachs_row_conditions(["pma", "cd3cd28"]).index == pair.index).all()


def test_condition_blocks_show_the_reagents_effects():
    raw = load_sachs_data(None)
    labels = sachs_row_conditions()
    med = raw.groupby(labels, observed=True).median()
    # Psitectorigenin inhibits PIP2; U0126 (MEK inhibitor) silences Erk.
    assert med.loc["cd3cd28+psitect", "PIP2"] < 0.1 * med.loc["cd3cd28", "PIP2"]
    assert med.loc["cd3cd28+u0126", "Erk"] < 0.25 * med.loc["cd3cd28", "Erk"]


# ------------------------------------------------------------- discretisers
@pytest.mark.parametrize("conditions", ["all", "observational"])
def test_quantile_codes_balanced_and_match_pandas(conditions):
    raw = load_sachs_data(None, conditions=conditions)
    codes = load_sachs_data("quantile", conditions=conditions)
    assert (codes.dtypes == np.int64).all()
    assert codes.index.equals(raw.index)
    n = len(raw)
    for name in SACHS_VARIABLES:
        counts = np.bincount(codes[name], minlength=3)
        assert counts.size == 3
        assert np.all(np.abs(counts / n - 1 / 3) < 0.01), (name, counts)
        expected = pd.qcut(raw[name].to_numpy(), 3, labels=False)
        assert np.array_equal(codes[name].to_numpy(), expected)


def test_quantile_codes_are_monotone_and_tie_consistent():
    raw = load_sachs_data(None)
    codes = load_sachs_data("quantile")
    for name in SACHS_VARIABLES:
        order = np.argsort(raw[name].to_numpy(), kind="stable")
        assert np.all(np.diff(codes[name].to_numpy()[order]) >= 0)
        # Equal values share a code (PKC has 698 cells at exactly 1.0).
        assert codes[name].groupby(raw[name]).nunique().max() == 1
    assert (codes.loc[raw["PKC"] == 1.0, "PKC"] == 0).all()


def test_quantile_codes_more_levels_and_ties():
    assert quantile_codes(np.arange(12.0), 4).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    # A tied value is never split; repeated cut points collapse to fewer levels.
    assert quantile_codes([1, 1, 1, 1, 1, 2], 3).tolist() == [0, 0, 0, 0, 0, 1]
    codes = load_sachs_data("quantile", n_levels=4, conditions="observational")
    assert codes.to_numpy().max() == 3
    assert np.all(np.abs(np.bincount(codes["Raf"]) / 853 - 0.25) < 0.01)


def test_log_interval_codes_match_pandas_cut_on_logs():
    raw = load_sachs_data(None)
    codes = load_sachs_data("log-interval")
    for name in SACHS_VARIABLES:
        expected = pd.cut(np.log(raw[name].to_numpy()), 3, labels=False)
        assert np.array_equal(codes[name].to_numpy(), expected)
    assert np.bincount(codes["Akt"]).tolist() == [698, 6208, 560]
    with pytest.raises(DataError, match="positive"):
        log_interval_codes([0.0, 1.0, 2.0])


def _mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    """Plug-in mutual information (nats) from a pandas cross-tabulation."""
    joint = pd.crosstab(a, b).to_numpy(dtype=float)
    p = joint / joint.sum()
    outer = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / outer[nz])).sum())


def _naive_hartemink(x: np.ndarray, k: int, k0: int) -> np.ndarray:
    """Hartemink's greedy merge recomputing every candidate's total MI from scratch."""
    codes = np.column_stack([pd.qcut(x[:, j], k0, labels=False) for j in range(x.shape[1])])
    for level in range(k0, k, -1):
        for j in range(x.shape[1]):
            best, best_a = -np.inf, -1
            for a in range(level - 1):
                merged = np.where(codes[:, j] > a, codes[:, j] - 1, codes[:, j])
                total = sum(
                    _mutual_information(merged, codes[:, c]) for c in range(x.shape[1]) if c != j
                )
                if total > best + 1e-12:
                    best, best_a = total, a
            codes[:, j] = np.where(codes[:, j] > best_a, codes[:, j] - 1, codes[:, j])
    return codes


def test_hartemink_matches_naive_greedy_merge():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(300, 1))
    x = np.column_stack([z + 0.5 * rng.normal(size=(300, 1)) for _ in range(3)])
    x[:, 2] = np.exp(x[:, 0] * x[:, 1]) + 0.3 * rng.normal(size=300)
    got = hartemink_codes(x, 3, initial_levels=8)
    assert np.array_equal(got, _naive_hartemink(x, 3, 8))
    assert got.max() == 2 and got.min() == 0


def test_hartemink_on_sachs_keeps_more_information_than_quantiles():
    raw = load_sachs_data(None, conditions="observational")
    hart = load_sachs_data("hartemink", conditions="observational")
    quant = load_sachs_data("quantile", conditions="observational")
    for name in SACHS_VARIABLES:
        assert sorted(hart[name].unique()) == [0, 1, 2]
        order = np.argsort(raw[name].to_numpy(), kind="stable")
        assert np.all(np.diff(hart[name].to_numpy()[order]) >= 0)

    def total(frame: pd.DataFrame) -> float:
        v = frame.to_numpy()
        return sum(_mutual_information(v[:, i], v[:, j]) for i in range(11) for j in range(i))

    assert total(hart) > 1.15 * total(quant)


def test_hartemink_arguments():
    with pytest.raises(ConfigError, match="initial_levels"):
        hartemink_codes(np.ones((5, 2)), 3, initial_levels=2)
    with pytest.raises(DataError, match="p >= 2"):
        hartemink_codes(np.arange(5.0), 3)


def test_loading_is_deterministic_and_returns_copies():
    for method in (None, "quantile", "log-interval"):
        a = load_sachs_data(method)
        b = load_sachs_data(method)
        pd.testing.assert_frame_equal(a, b)
        a.iloc[0, 0] = -5
        assert load_sachs_data(method).iloc[0, 0] != -5


def test_bad_arguments_name_the_culprit():
    with pytest.raises(DataError, match="unknown discretization 'kmeans'"):
        load_sachs_data("kmeans")
    with pytest.raises(DataError, match=r"unknown Sachs condition 'cd3'.*cd3cd28"):
        load_sachs_data(conditions=["cd3"])
    with pytest.raises(DataError, match="empty"):
        load_sachs_data(conditions=[])
    with pytest.raises(ConfigError, match="n_levels"):
        load_sachs_data(n_levels=1)


# ------------------------------------------------------------- ground truth
def test_ground_truth_is_the_bnlearn_dag():
    g = sachs_ground_truth()
    assert g.names == SACHS_VARIABLES
    assert g.n_edges == 17
    assert np.array_equal(g.marks, load_network("sachs").graph.marks)
    g.require_dag()
    edges = {(g.names[i], g.names[j]) for i, j in zip(*np.nonzero(g.directed()), strict=True)}
    assert edges == {
        ("Erk", "Akt"), ("Mek", "Erk"), ("PIP3", "PIP2"), ("PKA", "Akt"), ("PKA", "Erk"),
        ("PKA", "Jnk"), ("PKA", "Mek"), ("PKA", "P38"), ("PKA", "Raf"), ("PKC", "Jnk"),
        ("PKC", "Mek"), ("PKC", "P38"), ("PKC", "PKA"), ("PKC", "Raf"), ("Plcg", "PIP2"),
        ("Plcg", "PIP3"), ("Raf", "Mek"),
    }  # fmt: skip


def test_cdt_ground_truth_differs_as_documented():
    bn, cdt = sachs_ground_truth(), sachs_ground_truth("cdt")
    assert cdt.n_edges == 18
    assert not cdt.is_acyclic()  # Plcg -> PIP2 -> PIP3 -> Plcg
    assert cdt.directed()[cdt.index("PIP3"), cdt.index("Plcg")]
    assert int((bn.adjacency() & cdt.adjacency()).sum()) // 2 == 15
    assert int((bn.directed() & cdt.directed()).sum()) == 13
    with pytest.raises(DataError, match="unknown Sachs ground truth"):
        sachs_ground_truth("pcalg")


# ------------------------------------------------------------------ sampler
def test_row_sampler_draws_distinct_rows_deterministically():
    table = load_sachs_data("quantile")
    sampler = RowSampler(table)
    a = sampler.sample(500, seed=3)
    pd.testing.assert_frame_equal(a, sampler.sample(500, seed=3))
    assert not a.equals(sampler.sample(500, seed=4))
    assert a.index.tolist() == list(range(500))
    everything = RowSampler(load_sachs_data(None)).sample(7466, seed=0)
    assert not everything.duplicated().any()  # cdt's file has no duplicate rows
    assert np.isclose(everything.to_numpy().sum(), load_sachs_data(None).to_numpy().sum())
    with pytest.raises(SampleSizeError, match="7467"):
        sampler.sample(7467, seed=0)
    with pytest.raises(DataError, match="intervention"):
        sampler.sample(10, seed=0, interventions={"Raf": 0})


def test_row_sampler_feeds_the_fedcdnv_partitioner():
    split = variable_subsets(SACHS_VARIABLES, 6, seed=1, per_client=9)
    clients = variable_subset_clients(RowSampler(load_sachs_data()), split, seed=2)
    assert len(clients) == 6
    for client, variables in zip(clients, split.clients, strict=True):
        assert tuple(client.rows.columns) == tuple(variables)
        assert len(variables) == 9
        assert 100 <= len(client.rows) <= 2000
        assert set(np.unique(client.rows.to_numpy())) <= {0, 1, 2}


def test_the_codes_are_computed_once_and_every_caller_gets_its_own_frame(monkeypatch):
    from fedstruct.data.datasets import sachs

    sachs._codes.cache_clear()
    calls = []
    discretize = sachs._discretize
    monkeypatch.setattr(sachs, "_discretize", lambda *a: calls.append(a[1:]) or discretize(*a))
    first = load_sachs_data("log-interval", conditions="general")
    first.iloc[0, 0] = 2 - first.iloc[0, 0]  # a caller's frame is its own to change
    again = load_sachs_data("log-interval", conditions=["cd3cd28icam2", "cd3cd28"])
    assert calls == [("log-interval", 3)]  # the same rows: computed once
    assert again.iloc[0, 0] != first.iloc[0, 0] and again.iloc[1:].equals(first.iloc[1:])
    sachs._codes.cache_clear()
