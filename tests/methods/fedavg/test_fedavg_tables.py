"""FedAvg on continuous and incomplete tables: the federated statistics step, its audit,
standardisation, imputation with indicators, regression, resume and the saved model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from fedstruct.data import ClientData
from fedstruct.data.datasets.tables import breast_cancer_sites, diabetes_sites
from fedstruct.errors import DataError, PrivacyViolationError
from fedstruct.fl import Message
from fedstruct.fl.checkpoint import read_tree
from fedstruct.fl.features import FeatureStatistics
from fedstruct.methods.fedavg import FedAvg, FedAvgConfig
from fedstruct.methods.fedavg.client import STATISTICS, FedAvgClient
from fedstruct.methods.fedavg.model import TabularSchema
from fedstruct.privacy.audit import PayloadLimit, audit_reply


def coded_cancer(missing: float = 0.0) -> list[pd.DataFrame]:
    sites = breast_cancer_sites(missing=missing)
    return [s.assign(diagnosis=(s["diagnosis"] == "malignant").astype(np.int64)) for s in sites]


CANCER = coded_cancer()
FEATURES = tuple(c for c in CANCER[0].columns if c != "diagnosis")


def cancer_model(**params) -> FedAvg:
    return FedAvg("diagnosis", {"diagnosis": 2}, continuous=FEATURES, hidden=0, **params)


def cancer_clients(sites=CANCER, missing: bool = False) -> list[ClientData]:
    return [ClientData(f"h{k}", s, missing_values=missing) for k, s in enumerate(sites[:3])]


def test_standardised_features_train_where_raw_ones_diverge(monkeypatch):
    """Three rounds on the breast-cancer measurements (areas in the thousands): with the
    federated standardisation the held-out hospital is ~0.96 right; the same model fed
    raw values (the moments replaced by 0 and 1) diverges to chance."""
    test = CANCER[3]
    model = cancer_model(rounds=3).fit(cancer_clients(), test=test)
    assert model.score(test) > 0.92
    pooled = pd.concat(CANCER[:3])
    assert model.statistics_.rows == len(pooled)
    np.testing.assert_allclose(model.statistics_.mean, pooled[list(FEATURES)].mean(), rtol=1e-12)
    assert model.history_[0]["statistics_rows"] == len(pooled)
    monkeypatch.setattr(FeatureStatistics, "moments", lambda self, column: (0.0, 1.0))
    raw = cancer_model(rounds=3).fit(cancer_clients(), test=test)
    assert raw.score(test) < 0.75


def test_the_audit_accepts_the_statistics_and_refuses_rows():
    schema = TabularSchema("diagnosis", {"diagnosis": 2}, FEATURES)
    client = FedAvgClient(ClientData("h0", CANCER[0]), schema=schema,
                          config=FedAvgConfig(), seed=0)  # fmt: skip
    reply = client.handle(Message(STATISTICS))  # audited inside handle
    assert reply.n_entries() == 1 + 3 * 30 + 2
    limit = PayloadLimit(schema.columns.summary_entries)
    rows = CANCER[0].to_numpy(dtype=np.float64)
    with pytest.raises(PrivacyViolationError, match="row"):
        audit_reply(Message(STATISTICS, arrays={"sum": rows[:2].ravel()}), client.row_index,
                    PayloadLimit(10_000), "h0")  # fmt: skip
    with pytest.raises(PrivacyViolationError, match="more than the"):
        audit_reply(Message(STATISTICS, arrays={"sum": rows[:5].sum(axis=0).repeat(4)}),
                    client.row_index, limit, "h0")  # fmt: skip


def test_missing_values_are_imputed_and_indicated():
    """Holes in 5% of every measurement and a category with holes: the model reads one
    indicator per incomplete column, imputes new rows the same way, and still predicts
    the held-out hospital well; rows without a label are counted, not trained on."""
    sites = coded_cancer(missing=0.05)
    rng = np.random.default_rng(0)
    sites = [s.assign(grade=np.where(rng.random(len(s)) < 0.1, -1, rng.integers(0, 3, len(s))))
             for s in sites]  # fmt: skip
    sites[0] = sites[0].assign(diagnosis=np.where(np.arange(len(sites[0])) < 4, -1,
                                                  sites[0]["diagnosis"]))  # fmt: skip
    model = FedAvg("diagnosis", {"grade": 3, "diagnosis": 2}, continuous=FEATURES, hidden=0,
                   missing_values=True, rounds=3)  # fmt: skip
    model.fit(cancer_clients(sites, missing=True))
    names = model.encoder_.input_names()
    assert len(names) == 3 + 30 + 31 and "grade:missing" in names and "mean radius:missing" in names
    assert model.history_[0]["missing_target_rows"] == 4
    test = sites[3][sites[3]["diagnosis"] >= 0]
    assert model.score(test) > 0.9
    row = test.iloc[:1].assign(**{"mean radius": np.nan, "grade": -1})
    x = model.encoder_.encode(row)[0]
    assert x[names.index("mean radius")] == 0 and x[names.index("mean radius:missing")] == 1
    assert x[names.index("grade:missing")] == 1 and not x[:3].any()
    assert model.predict_proba(row).shape == (1, 2)


def test_a_continuous_target_is_a_regression_near_least_squares():
    """Diabetes progression at four hospitals: FedAvg's linear regression on the
    standardised target is within 10% of pooled least squares' RMSE on the held-out
    hospital, and reports RMSE and R²."""
    sites = diabetes_sites()
    features = tuple(c for c in sites[0].columns if c != "progression")
    model = FedAvg("progression", {}, continuous=(*features, "progression"), hidden=0,
                   rounds=30)  # fmt: skip
    test = sites[3]
    model.fit([ClientData(f"h{k}", s) for k, s in enumerate(sites[:3])], test=test)
    pooled = pd.concat(sites[:3])
    least = LinearRegression().fit(pooled[list(features)], pooled["progression"])
    best = np.sqrt(np.mean((least.predict(test[list(features)]) - test["progression"]) ** 2))
    scores = model.evaluate(test)
    assert scores["rmse"] < 1.1 * best
    assert model.history_[-1]["test_rmse"] == pytest.approx(scores["rmse"], rel=1e-5)
    assert model.score(test) == pytest.approx(scores["r2"]) and 0.3 < scores["r2"] < 1
    assert model.predict(test).shape == (len(test),)
    with pytest.raises(Exception, match="continuous"):
        model.predict_proba(test)


def test_a_run_with_statistics_resumes_to_the_same_model(tmp_path):
    clients = cancer_clients()
    full = cancer_model(rounds=3, seed=2).fit(clients)
    path = tmp_path / "checkpoint.safetensors"
    cancer_model(rounds=3, seed=2).fit(clients, checkpoint=path, stop_after=1)
    state = read_tree(path)[1]["server_state"]
    assert state.statistics is not None and state.statistics.rows == full.statistics_.rows
    resumed = cancer_model(rounds=3, seed=2).fit(clients, checkpoint=path, resume=True)
    assert resumed.history_ == full.history_
    for name, value in full.params_.items():
        np.testing.assert_array_equal(resumed.params_[name], value)


def test_a_categorical_target_needs_two_levels():
    with pytest.raises(DataError, match="needs two or more"):
        FedAvg("y", {"y": 1}, continuous=("x",)).prepare()


def test_a_client_without_a_labelled_row_is_named():
    """A client whose every row misses the target has nothing to train on: the run
    names it instead of dividing by its zero rows."""
    sites = [s.iloc[:40] for s in CANCER[:2]]
    sites[1] = sites[1].assign(diagnosis=-1)
    model = cancer_model(rounds=1, missing_values=True)
    with pytest.raises(DataError, match=r"client 'h1': none of its 40 training rows gives"):
        model.fit(cancer_clients(sites, missing=True))
