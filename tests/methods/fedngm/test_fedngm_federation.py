"""The RAND HIE table and sub-population federations (FedNGM §3.2)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.datasets.rand_hie import load_health_insurance
from fedstruct.data.mixed import MixedDataset, make_mixed_data
from fedstruct.errors import PartitionError, UnknownVariableError
from fedstruct.methods.fedngm.sources import (
    HEALTH_TARGETS,
    Segment,
    health_insurance_federation,
    subpopulation_clients,
    synthetic_federation,
)


def _raw() -> pd.DataFrame:
    """The bundled CSV read directly, as an independent oracle."""
    spec = importlib.util.find_spec("statsmodels")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    return pd.read_csv(folder / "datasets" / "randhie" / "randhie.csv")


@pytest.fixture(scope="module")
def health() -> MixedDataset:
    return load_health_insurance()


@pytest.fixture(scope="module")
def federation():
    return health_insurance_federation(seed=0)


# ------------------------------------------------------------------ the table
def test_health_table_shape_kinds_and_codes(health):
    frame = health.frame
    assert len(frame) == 20_190
    assert list(frame.columns) == [
        "visits",
        "plan",
        "deductible",
        "lpi",
        "fmde",
        "physlm",
        "disea",
        "health",
    ]
    assert health.kinds == {
        "visits": "ordinal",
        "plan": "categorical",
        "deductible": "binary",
        "lpi": "real",
        "fmde": "real",
        "physlm": "real",
        "disea": "real",
        "health": "categorical",
    }
    assert health.cardinalities == {"plan": 5, "deductible": 2, "health": 4}
    assert health.graph is None
    assert set(HEALTH_TARGETS.values()) <= set(frame.columns)
    raw = _raw()
    # health classes equal the dummies' counts; excellent = no dummy set.
    counts = frame["health"].value_counts().sort_index().to_dict()
    assert counts == {0: 11_019, 1: 7_309, 2: 1_560, 3: 302}
    assert counts[1] == raw["hlthg"].sum()
    assert counts[2] == raw["hlthf"].sum()
    assert counts[3] == raw["hlthp"].sum()
    # plan codes follow the coinsurance rate 0, 25, 50, 95, 100 %.
    assert frame["plan"].value_counts().sort_index().to_dict() == {
        0: 10_997,
        1: 4_065,
        2: 1_401,
        3: 2_653,
        4: 1_074,
    }
    coins = np.rint(np.expm1(raw["lncoins"])).astype(int)
    rate = np.array([0, 25, 50, 95, 100])[frame["plan"].to_numpy()]
    np.testing.assert_array_equal(rate, coins)
    np.testing.assert_array_equal(frame["visits"].to_numpy(), raw["mdvis"].to_numpy(float))
    np.testing.assert_array_equal(frame["deductible"].to_numpy(), raw["idp"].to_numpy())
    for c in ("lpi", "fmde", "physlm", "disea"):
        np.testing.assert_array_equal(frame[c].to_numpy(), raw[c].to_numpy())


def test_health_groups_are_persons(health):
    assert health.groups is not None
    assert np.unique(health.groups).size == 5_912
    # Everything but the yearly visit count is fixed per person.
    per_person = health.frame.drop(columns="visits").groupby(health.groups).nunique()
    assert int(per_person.to_numpy().max()) == 1


# ------------------------------------------------------------------ the federation
def test_health_federation_sizes_and_shares(federation, health):
    fed = federation
    # 20,190 rows: 10,095 public (2,019 held out), 10,095 in the pool;
    # each client draws round(0.4 * 10,095) = 4,038 rows, 808 of them test rows.
    assert len(fed.public) + len(fed.public_test) == 10_095
    assert len(fed.public_test) == 2_019
    assert [c.n_rows for c in fed.clients] == [3_230, 3_230, 3_230]
    assert [len(fed.client_test[c.name]) for c in fed.clients] == [808, 808, 808]
    expected_in = {"client-1": 3_230, "client-2": 808, "client-3": 2_423}  # 0.8, 0.2, 0.6
    for client in fed.clients:
        seg = fed.segments[client.name]
        rows = pd.concat([client.rows, fed.client_test[client.name]])
        assert rows.index.is_unique  # without replacement within a client
        inside = int(seg.mask(health)[rows.index.to_numpy()].sum())
        assert inside == expected_in[client.name] == round(seg.share * 4_038)
        # train and test keep the share up to one row of rounding
        test_in = int(seg.mask(health)[fed.client_test[client.name].index.to_numpy()].sum())
        assert test_in == round(808 * inside / 4_038)


def test_health_federation_public_and_private_rows_are_disjoint(federation, health):
    fed = federation
    public = set(fed.public.index) | set(fed.public_test.index)
    assert not set(fed.public.index) & set(fed.public_test.index)
    pool = set(range(health.n_rows)) - public
    for client in fed.clients:
        rows = set(client.rows.index) | set(fed.client_test[client.name].index)
        assert rows <= pool
        assert not set(client.rows.index) & set(fed.client_test[client.name].index)
    # Stratified public split: each deductible x health stratum gives half its rows.
    both = pd.concat([fed.public, fed.public_test])
    full = health.frame.groupby(["deductible", "health"]).size()
    half = both.groupby(["deductible", "health"]).size()
    assert (np.abs(half - full / 2) <= 0.5).all()
    # Whole persons: at most one person straddles each cut (8 strata + 8 + 2 per client).
    persons = health.groups
    straddle = set(persons[list(public)]) & set(persons[list(pool)])
    assert len(straddle) <= 8
    for client in fed.clients:
        tr = set(persons[client.rows.index])
        te = set(persons[fed.client_test[client.name].index])
        assert len(tr & te) <= 2


def test_health_federation_columns(federation):
    fed = federation
    assert fed.common == ("visits", "plan", "deductible", "disea", "health")
    assert fed.private == {"client-1": ("fmde",), "client-2": ("physlm",), "client-3": ("lpi",)}
    columns = {c.name: list(c.rows.columns) for c in fed.clients}
    assert columns["client-1"] == ["visits", "plan", "deductible", "fmde", "disea", "health"]
    assert columns["client-2"] == ["visits", "plan", "deductible", "physlm", "disea", "health"]
    assert columns["client-3"] == ["visits", "plan", "deductible", "lpi", "disea", "health"]
    for client in fed.clients:
        assert list(fed.client_test[client.name].columns) == columns[client.name]
        assert client.rows["plan"].dtype == np.int64
        assert client.supervised == ()
    assert list(fed.public.columns) == list(fed.dataset.names)


def test_health_federation_is_deterministic(federation):
    again = health_insurance_federation(seed=0)
    for a, b in zip(federation.clients, again.clients, strict=True):
        pd.testing.assert_frame_equal(a.rows, b.rows)
    other = health_insurance_federation(seed=1)
    assert not federation.clients[0].rows.index.equals(other.clients[0].rows.index)


# ------------------------------------------------------------------ generic partitioner
@pytest.fixture(scope="module")
def small() -> MixedDataset:
    rng = np.random.default_rng(0)
    n = 1_000
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 3, n).astype(np.int64),
            "b": (rng.random(n) < 0.3).astype(np.int64),
            "x": rng.standard_normal(n),
            "y": rng.integers(0, 5, n).astype(np.float64),
            "z": rng.standard_normal(n),
        }
    )
    kinds = {"a": "categorical", "b": "binary", "x": "real", "y": "ordinal", "z": "real"}
    return MixedDataset(frame, kinds, {"a": 3, "b": 2}, name="small")


def test_subpopulation_exact_sizes_and_range_segment(small):
    segs = [Segment("a", (2,), 0.6), Segment("x", (0.5, 10.0), 0.5)]
    fed = subpopulation_clients(
        small, segs, private={"client-2": ["z"]}, stratify=["b", "y"], seed=3
    )
    # public 500 (100 held out), pool 500, clients round(0.4 * 500) = 200 (40 test).
    assert (len(fed.public), len(fed.public_test)) == (400, 100)
    assert [c.n_rows for c in fed.clients] == [160, 160]
    x = small.frame["x"].to_numpy()
    rows2 = pd.concat([fed.clients[1].rows, fed.client_test["client-2"]]).index.to_numpy()
    assert int(((x[rows2] >= 0.5) & (x[rows2] <= 10.0)).sum()) == 100
    rows1 = pd.concat([fed.clients[0].rows, fed.client_test["client-1"]]).index.to_numpy()
    assert int((small.frame["a"].to_numpy()[rows1] == 2).sum()) == 120
    assert fed.common == ("a", "b", "x", "y")
    assert "z" in fed.clients[1].rows.columns and "z" not in fed.clients[0].rows.columns


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"segments": [Segment("nope", (0,))]}, UnknownVariableError, "'nope'"),
        ({"private": {"client-1": ["nope"]}}, UnknownVariableError, "'nope'"),
        ({"private": {"client-9": ["z"]}}, PartitionError, "'client-9'"),
        (
            {"private": {"client-1": ["z"], "client-2": ["z"]}},
            PartitionError,
            "'z' is private to both 'client-1' and 'client-2'",
        ),
        ({"private": {"client-2": ["a"]}}, PartitionError, "segment variable 'a'"),
        ({"public_fraction": 0.0}, PartitionError, "public_fraction"),
        ({"client_fraction": 1.0}, PartitionError, "client_fraction"),
        ({"test_fraction": -0.1}, PartitionError, "test_fraction"),
        ({"public_test_fraction": 1.5}, PartitionError, "public_test_fraction"),
        (
            {"segments": [Segment("x", (50.0, 60.0)), Segment("a", (1,))]},
            PartitionError,
            "client 'client-1'",
        ),
        ({"client_fraction": 0.0005}, PartitionError, "client 'client-1' would have 0"),
        ({"segments": [Segment("a", (7,)), Segment("a", (1,))]}, PartitionError, "0..2"),
        ({"segments": [Segment("x", (1.0, 0.0)), Segment("a", (1,))]}, PartitionError, "low"),
        ({"stratify": ["nope"]}, UnknownVariableError, "stratify variable 'nope'"),
    ],
)
def test_subpopulation_errors_name_the_culprit(small, kwargs, error, needle):
    args = {"segments": [Segment("a", (2,)), Segment("b", (1,))], **kwargs}
    segments = args.pop("segments")
    with pytest.raises(error) as info:
        subpopulation_clients(small, segments, **args)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_segment_too_small_reports_counts(small):
    with pytest.raises(PartitionError) as info:
        subpopulation_clients(small, [Segment("b", (1,), 0.9)], client_fraction=0.6, seed=0)
    message = str(info.value)
    # pool 500, client 300 rows: 270 from b == 1, but the pool has about 150.
    assert "client 'client-1' needs 270 rows of segment b in [1]" in message
    assert "lower its share" in message


def test_synthetic_federation_is_deterministic_and_over_represents():
    data = make_mixed_data(12, 4_000, seed=1)
    fed = synthetic_federation(data, seed=2)
    again = synthetic_federation(data, seed=2)
    assert fed.segments == again.segments and fed.private == again.private
    for a, b in zip(fed.clients, again.clients, strict=True):
        pd.testing.assert_frame_equal(a.rows, b.rows)
    variables = [s.variable for s in fed.segments.values()]
    assert len(set(variables)) == 3
    assert all(v in data.categorical for v in variables)
    private = [v for vs in fed.private.values() for v in vs]
    assert len(private) == len(set(private)) == 3 and not set(private) & set(variables)
    assert fed.common == tuple(v for v in data.names if v not in private)
    for client in fed.clients:
        seg = fed.segments[client.name]
        base = seg.mask(data).mean()
        assert base <= 0.6 / 1.25
        rows = pd.concat([client.rows, fed.client_test[client.name]]).index.to_numpy()
        assert int(seg.mask(data)[rows].sum()) == round(0.6 * 800)  # pool 2,000 -> 800 rows
