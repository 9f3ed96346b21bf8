"""The pieces of the compositions (issue 21): what the discovery sees, the clients'
own local graphs, and the discovered graph's files."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedstruct.data import load_network
from fedstruct.data.client import ClientData
from fedstruct.graphs.io import read_graph
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.methods.fcm.sources import ConceptSource, own_fci_graph
from fedstruct.reproduction.compositions import _fcm_case, discovery_clients

SMALL = {"network": "asia", "samples": 4000, "rounds": 2, "max_epochs": 2}


def test_a_clients_own_graph_is_its_fci_pag_as_a_dag():
    rows = load_network("asia").sample(5000, seed=1)[["smoke", "lung", "either"]]
    rows = rows.assign(constant=0)
    client = ClientData("h", rows, ("smoke", "lung", "either", "constant"))
    graph = own_fci_graph(client)
    assert graph.is_dag() and graph.names == client.supervised
    pairs = {frozenset((e.a, e.b)) for e in graph.edges()}
    assert pairs == {frozenset(("smoke", "lung")), frozenset(("lung", "either"))}
    assert set(graph.parents("lung")) != {"smoke", "either"}  # no collider invented
    assert not graph.neighbors("constant")


def test_local_graphs_replace_the_given_ones():
    given = ConceptSource(FCMRun(**SMALL)).clients()
    local = ConceptSource(FCMRun(**SMALL, client_graphs="fci")).clients()
    assert [c.name for c in local] == [c.name for c in given]
    for mine, theirs in zip(local, given, strict=True):
        assert mine.graph.names == mine.supervised and mine.graph.is_dag()
        pd.testing.assert_frame_equal(mine.rows, theirs.rows)


def test_the_discovery_sees_concepts_and_task_only(tmp_path):
    settings = FCMRun(**SMALL)
    clients = ConceptSource(settings).clients()
    seen = discovery_clients(clients)
    for client, view in zip(clients, seen, strict=True):
        assert list(view.rows.columns) == list(client.supervised)
        inputs = set(client.rows.columns) - set(client.supervised)
        assert inputs and inputs.isdisjoint(view.rows.columns)
        assert len(view.rows) == len(client.rows)
    found = _fcm_case({**SMALL, "seed": 0}, tmp_path)
    truth, learned = read_graph(found["truth"]), read_graph(found["found"])
    assert truth.is_dag() and set(learned.names) <= set(truth.names)
    assert np.isfinite(found["shd"]) and 0 <= found["shd"] == int(found["shd"])
    n = len(truth.names)
    assert read_graph(found["complete"]).n_edges == n * (n - 1) // 2


def test_fedngms_discovery_runs_on_all_and_on_the_common_columns(tmp_path):
    from fedstruct.methods.fedngm.settings import FedNGMRun
    from fedstruct.methods.fedngm.sources import SubpopulationSource
    from fedstruct.reproduction.compositions import _fedngm_case

    settings = {"dataset": "synthetic", "variables": 8, "samples": 3000, "seed": 0}
    found = _fedngm_case(settings, tmp_path)
    common = SubpopulationSource(FedNGMRun(**settings)).federation.common
    assert set(read_graph(found["found_common"]).names) == set(common)
    assert set(read_graph(found["found"]).names) > set(common)  # the private ones too
    assert not read_graph(found["truth"]).is_directed()  # the CI graph the data keep
