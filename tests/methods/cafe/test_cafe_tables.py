"""CAFE and its baselines on a table: the statistics step and its audit, imputation with
indicators, every algorithm on (1, 1, D) inputs, resume, and the continuous target
refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData
from fedstruct.errors import DataError, ProtocolError
from fedstruct.fl import Message
from fedstruct.fl.tabular import TabularSchema
from fedstruct.methods.cafe import CAFE, CafeConfig
from fedstruct.methods.cafe.client import STATISTICS, CafeClient

CARDINALITIES = {"ward": 3, "y": 2}
CONTINUOUS = ("age", "marker")
SMALL = {"rounds": 3, "local_epochs": 2, "feature_dim": 8, "heads": 2}


def site(seed: int, n: int = 40) -> pd.DataFrame:
    """Coded rows: ``y`` is 1 when ``age`` is high; 10 % of ``age`` and ``ward`` missing
    (NaN, code -1)."""
    rng = np.random.default_rng(seed)
    age = rng.normal(50 + 5 * seed, 10, n)
    rows = pd.DataFrame({
        "ward": rng.integers(0, 3, n),
        "age": age,
        "marker": rng.normal(0, 1, n),
        "y": (age > 52).astype(np.int64),
    })  # fmt: skip
    rows.loc[rng.random(n) < 0.1, "age"] = np.nan
    rows.loc[rng.random(n) < 0.1, "ward"] = -1
    return rows


SITES = [site(k) for k in range(3)]


def clients() -> list[ClientData]:
    return [ClientData(f"h{k}", rows, missing_values=True) for k, rows in enumerate(SITES)]


def table_model(**params) -> CAFE:
    return CAFE(target="y", cardinalities=CARDINALITIES, continuous=CONTINUOUS,
                missing_values=True, **{**SMALL, **params})  # fmt: skip


def test_a_mixed_table_with_holes_trains_on_pooled_statistics_and_predicts():
    model = table_model(test_fraction=0.25).fit(clients())
    pooled = pd.concat(SITES)
    statistics = model.statistics_
    assert statistics.rows == sum(len(c.rows) - len(c.rows) // 4 for c in clients())
    assert model.history_[0]["missing_target_rows"] == 0
    assert model.encoder_.indicators == ("ward", "age")  # 'marker' is complete
    assert model.model_.backbone[1].in_features == 3 + 2 + 2  # one-hot, standardised, flags
    assert model.evaluate(pooled)["accuracy"] > 0.8  # age decides y
    scores = model.site_scores_
    assert set(scores) == {"h0", "h1", "h2"} and sum(s["n"] for s in scores.values()) == 30
    holes = pd.DataFrame({"ward": [-1, 2], "age": [np.nan, 80.0], "marker": [0.0, np.nan]})
    proba = model.prediction(holes).probabilities["y"].to_numpy()
    assert proba.shape == (2, 2) and proba[1, 1] > 0.5  # imputed, and old means sick


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "moon", "fedproto"])
def test_every_baseline_runs_on_the_table(algorithm):
    model = table_model(algorithm=algorithm, rounds=2, test_fraction=0.25).fit(clients())
    assert sum(s["n"] for s in model.site_scores_.values()) == 30
    assert 0 <= model.history_[-1]["site_accuracy"] <= 1
    if algorithm != "fedproto":  # FedProto's models stay on the clients
        assert model.predict(SITES[0].drop(columns="y")).shape == (40,)


def test_a_resumed_table_run_asks_for_the_statistics_once_and_ends_the_same(tmp_path):
    whole = table_model().fit(clients())
    checkpoint = tmp_path / "checkpoint.safetensors"
    table_model().fit(clients(), checkpoint=checkpoint, stop_after=1)
    resumed = table_model().fit(clients(), checkpoint=checkpoint, resume=True)
    assert [h.get("statistics_rows") for h in resumed.history_] == [120, None, None]
    np.testing.assert_array_equal(resumed.statistics_.mean, whole.statistics_.mean)
    np.testing.assert_array_equal(resumed.learned_state()[0]["model.weight"],
                                  whole.learned_state()[0]["model.weight"])  # fmt: skip


def test_the_statistics_reply_passes_the_audit_and_holds_no_row():
    schema = TabularSchema("y", CARDINALITIES, CONTINUOUS, missing_values=True)
    client = CafeClient(ClientData("h0", SITES[0], missing_values=True), shape=None,
                        n_classes=2, config=CafeConfig(), seed=0, table=schema)  # fmt: skip
    reply = client.handle(Message(STATISTICS))  # audited inside handle
    assert reply.n_entries() == 1 + 3 * 2 + (3 + 2)
    np.testing.assert_array_equal(reply.arrays["level_counts"][3:], np.bincount(SITES[0]["y"]))
    with pytest.raises(ProtocolError, match="without its feature encoding"):
        client.handle(Message("cafe.fit"))


def test_an_image_client_has_no_statistics_to_send():
    rows = pd.DataFrame({"px_0": [0.0, 1.0], "label": [0, 1]})
    client = CafeClient(ClientData("c", rows), shape=(1, 1, 1), n_classes=2,
                        config=CafeConfig(backbone="mlp"), seed=0)  # fmt: skip
    with pytest.raises(ProtocolError, match="holds images"):
        client.handle(Message(STATISTICS))


def test_a_continuous_target_is_refused_naming_the_column_and_the_fix():
    with pytest.raises(DataError, match=r"target 'age' is continuous.*kinds\.age=categorical"):
        CAFE(target="age", cardinalities=CARDINALITIES, continuous=CONTINUOUS).prepare()
