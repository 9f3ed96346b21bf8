"""F-CMs' inputs standardised with federated statistics (issue 31, item 7): a
statistics step shared with FedAvg (:mod:`fedstruct.fl.features`), kept for resume
and saved for predict."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.errors import DataError
from fedstruct.fl import checkpoint
from fedstruct.fl.features import FeatureStatistics
from fedstruct.methods.fcm import FCM
from fedstruct.methods.fcm.client import input_columns, input_frame
from fedstruct.methods.fcm.server import FCMState

CARDS = {"big": 2, "wide": 2, "label": 2}
INPUTS = ["x0", "x1", "x2", "x3"]


def _rows(n: int, seed: int) -> pd.DataFrame:
    """Inputs on raw scales (means in the thousands, deviations 1 to 500), concepts
    cut from them and the task their "or"."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4))
    x = z * np.array([500.0, 1.0, 200.0, 50.0]) + np.array([4000.0, 3000.0, -2500.0, 900.0])
    frame = pd.DataFrame(x, columns=INPUTS)
    frame["big"] = (z[:, 0] > 0).astype(np.int64)
    frame["wide"] = (z[:, 1] > 0.5).astype(np.int64)
    frame["label"] = (frame["big"] | frame["wide"]).astype(np.int64)
    return frame


@pytest.fixture(scope="module")
def sites():
    clients = [ClientData(f"s{k}", _rows(240, k), ("big", "wide", "label")) for k in range(3)]
    return clients, _rows(400, 99)


def fcm(**kw):
    settings = {"rounds": 8, "patience": 50, "model": "cbm", "local_epochs": 4, "batch_size": 64}
    return FCM(task="label", cardinalities=CARDS, seed=0, **{**settings, **kw})


@pytest.fixture(scope="module")
def scaled(sites):
    clients, _ = sites
    return fcm(input_scaling="federated").fit(clients)


def test_standardised_inputs_beat_raw_ones_by_a_margin(sites, scaled):
    clients, test = sites
    raw = fcm(input_scaling="none").fit(clients)
    scaled_accuracy = scaled.evaluate(test)["task_accuracy"]
    raw_accuracy = raw.evaluate(test)["task_accuracy"]
    assert scaled_accuracy > raw_accuracy + 0.1
    assert scaled_accuracy > 0.85


def test_the_statistics_are_the_pooled_training_rows(sites, scaled):
    clients, _ = sites
    training = pd.concat(
        [input_frame(c.rows, INPUTS).iloc[_kept(c)] for c in clients], ignore_index=True
    )
    pooled = FeatureStatistics.of_rows(training, input_columns(INPUTS))
    np.testing.assert_allclose(scaled.encoder_.mean, pooled.mean)
    np.testing.assert_allclose(scaled.encoder_.scale, np.sqrt(pooled.variance))


def _kept(client):
    from fedstruct.fl import holdout_split

    return holdout_split(client.n_rows, 0.125, 0, client.name)[0]


def test_predict_uses_the_saved_statistics(sites, scaled):
    _, test = sites
    arrays, meta = scaled.learned_state()
    assert "features.mean" in arrays
    again = fcm(input_scaling="federated").prepare()  # as fedstruct.load does
    again.restore(arrays, meta)
    expected = scaled.prediction(test).probabilities["label"]
    np.testing.assert_allclose(again.prediction(test).probabilities["label"], expected)
    shifted = dict(arrays, **{"features.mean": arrays["features.mean"] + 1000.0})
    again.restore(shifted, meta)
    moved = again.prediction(test).probabilities["label"]
    assert not np.allclose(moved, expected)


def test_missing_inputs_are_imputed_with_an_indicator(sites):
    clients, test = sites
    holey = []
    for k, c in enumerate(clients):
        rows = c.rows.copy()
        rows.loc[rows.index[k::5], "x2"] = np.nan
        holey.append(ClientData(c.name, rows, c.supervised, missing_values=True))
    model = fcm(input_scaling="federated", rounds=2).fit(holey)
    assert model.encoder_.indicators == ("x2",)
    assert model.spec_.input_dim == len(INPUTS) + 1
    gappy = test.assign(x2=np.where(np.arange(len(test)) % 3 == 0, np.nan, test["x2"]))
    assert np.isfinite(model.prediction(gappy).probabilities["label"].to_numpy()).all()


def test_the_state_keeps_the_statistics_for_resume():
    statistics = FeatureStatistics.of_rows(_rows(50, 1)[INPUTS], input_columns(INPUTS))
    tree, arrays = checkpoint.encode(FCMState(features=tuple(INPUTS), statistics=statistics))
    restored = checkpoint.decode(tree, arrays)
    assert restored.statistics is not None
    np.testing.assert_array_equal(restored.statistics.mean, statistics.mean)
    np.testing.assert_array_equal(
        restored.encoder().scale,
        FCMState(features=tuple(INPUTS), statistics=statistics).encoder().scale,
    )


def test_raw_inputs_with_a_missing_value_are_refused_by_name(sites):
    clients, _ = sites
    rows = clients[0].rows.copy()
    rows.loc[rows.index[3], "x1"] = np.nan
    holey = ClientData("s0", rows, clients[0].supervised, missing_values=True)
    with pytest.raises(DataError, match=r"'s0': input column 'x1' has 1 missing.*'federated'"):
        fcm(input_scaling="none", rounds=1).fit([holey])
