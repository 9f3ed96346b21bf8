"""F-CMs with secure aggregation: the module-wise average (each module over the
clients that trained it), the strength vote over the clients' graphs and the losses
come as secure sums, give the plain run's model to the quantisation bound and its
graph exactly, and the server never holds a client's update, graph or row count."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.data.networks import load_network
from fedstruct.data.schedule import Schedule
from fedstruct.fl import Participation
from fedstruct.fl.secagg import protocol as p
from fedstruct.methods.fcm import FCM
from fedstruct.methods.fcm.client import DESCRIBE

NET = load_network("asia")
CARDS = dict(NET.cardinalities)
SETS = [
    ["asia", "tub", "either", "dysp"],
    ["smoke", "lung", "either", "dysp"],
    ["smoke", "bronc", "dysp"],
    ["lung", "xray", "either"],
]


@pytest.fixture(scope="module")
def clients():
    rows = NET.sample(800, seed=0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(len(rows), 6)) + rows[["asia", "smoke", "lung"]].to_numpy() @ np.ones(
        (3, 6)
    )
    feats = pd.DataFrame(x.astype(np.float32), columns=[f"x{i}" for i in range(6)])
    out = []
    for k, chosen in enumerate(SETS):
        keep = [v for v in NET.graph.names if v in chosen]
        part = slice(k * 200, (k + 1) * 200)
        frame = pd.concat([feats.iloc[part], rows[keep].iloc[part]], axis=1)
        graph = NET.graph.restrict(keep)
        out.append(ClientData(f"c{k}", frame.reset_index(drop=True), keep, graph=graph))
    return out


@pytest.mark.parametrize("memory", ["all", "round"])
def test_secure_aggregation_gives_the_plain_model_and_graph(clients, memory, recording_backend):
    """c2 and c3 join in round 3: with graph_memory="all" the vote keeps counting c0
    and c1 (asked once) and adds the newcomers' sum."""
    late = Participation(schedule=Schedule.arrivals([c.name for c in clients], 2, 3))
    options = {"task": "dysp", "cardinalities": CARDS, "model": "cbm", "rounds": 3,
               "patience": 50, "local_epochs": 1, "graph_memory": memory,
               "participation": late, "input_scaling": "federated"}  # fmt: skip
    plain = FCM(**options).fit(clients)
    backend = recording_backend()
    secure = FCM(secure_aggregation=True, **options).fit(clients, backend=backend)
    assert secure.graph_ == plain.graph_
    assert secure.concepts_ == plain.concepts_
    for a, b in zip(plain.history_, secure.history_, strict=True):
        assert b["val_loss"] == pytest.approx(a["val_loss"], rel=1e-5)
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)
        assert b["val_task_accuracy"] == pytest.approx(a["val_task_accuracy"], abs=1e-12)
    mine = secure.model_.state_arrays()
    for name, value in plain.model_.state_arrays().items():
        np.testing.assert_allclose(mine[name], value, atol=1e-4)
    kinds = {m.kind for _, m in backend.received}
    assert kinds == {DESCRIBE, p.KEYS, p.SHARE, p.MASK, p.UNMASK}
    for _, m in backend.received:
        if m.kind == DESCRIBE:  # names only: the graph and n come as sums
            assert not m.arrays and set(m.metrics) == {"has_task"}
