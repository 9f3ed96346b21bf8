"""Issue 49, item 9: scikit-learn's ``GridSearchCV`` runs on an estimator (it failed on
``__sklearn_tags__``), cross-validating over sites, and a ``clone`` refitted on
``read_federation`` clients reads the raw rows its parent read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from fedstruct.data import ClientData, load_network, read_federation
from fedstruct.methods.fedavg import FedAvg

ASIA = load_network("asia")


def _sites(k: int = 3) -> list[ClientData]:
    rows = ASIA.sample(200 * k, seed=0)
    return [ClientData(f"site-{i}", rows.iloc[i::k]) for i in range(k)]


def test_grid_search_cross_validates_over_the_sites():
    clients = _sites(3)
    model = FedAvg("dysp", ASIA.cardinalities, rounds=2, hidden=0)
    search = GridSearchCV(model, {"learning_rate": [0.05, 0.5]}, cv=3).fit(clients)
    assert search.best_params_["learning_rate"] in (0.05, 0.5)
    assert search.best_estimator_.params_  # refitted on every site
    # each split trains on two sites and scores on the third, as by hand
    by_hand = []
    for held in range(3):
        train = [c for i, c in enumerate(clients) if i != held]
        fitted = clone(model).set_params(learning_rate=0.5).fit(train)
        by_hand.append(fitted.score([clients[held]]))
    assert search.cv_results_["mean_test_score"][1] == pytest.approx(np.mean(by_hand))


def test_scoring_a_list_of_clients_is_scoring_their_rows():
    clients = _sites(2)
    model = FedAvg("dysp", ASIA.cardinalities, rounds=1).fit(clients)
    assert model.score(clients) == model.score(pd.concat([c.rows for c in clients]))


def test_a_clone_refitted_on_read_federation_clients_reads_raw_rows(tmp_path):
    named = ASIA.sample(400, seed=1).apply(lambda column: column.map({0: "no", 1: "yes"}))
    paths = [tmp_path / "a.csv", tmp_path / "b.csv"]
    named.iloc[:200].to_csv(paths[0], index=False)
    named.iloc[200:].to_csv(paths[1], index=False)
    federation = read_federation(paths)
    cardinalities = federation.schema.cardinalities()
    parent = FedAvg("dysp", cardinalities, rounds=2).fit(federation.clients)
    raw = pd.read_csv(paths[0]).head(20)
    expected = parent.predict(raw)
    assert set(expected) <= {"no", "yes"}  # level names in, level names out
    refitted = clone(parent).fit(federation.clients)
    np.testing.assert_array_equal(refitted.predict(raw), expected)
    assert refitted.data_ == federation.schema.inputs()
    # on rows given as codes the model reads codes, as before
    coded = FedAvg("dysp", ASIA.cardinalities, rounds=1).fit(_sites(2))
    assert coded.data_ is None
