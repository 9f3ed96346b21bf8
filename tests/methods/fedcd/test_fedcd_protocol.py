"""FED-CD end to end: bad input, what crosses the wire, determinism, a learned graph."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData
from fedstruct.data.scm import CategoricalSCM
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.experiments.fedcd.federation import horizontal_interventions, vertical_interventions
from fedstruct.fl import Message
from fedstruct.graphs.metrics import shd
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.fedcd import ENCO, Beliefs, ENCOConfig, FedCD, InterventionalData
from fedstruct.methods.fedcd.client import FIT

SMALL = {"model_steps": 150, "graph_steps": 30, "graphs_per_step": 40}


@pytest.fixture(scope="module")
def chain():
    dag = chain_dag(5, seed=0)
    scm = CategoricalSCM(dag, seed=0, n_categories=4)
    return dag, scm


def test_purely_observational_data_is_refused(chain):
    _, scm = chain
    rows = scm.sample(200, seed=0)
    with pytest.raises(DataError, match="needs interventions"):
        FedCD(rounds=1, **SMALL).fit([ClientData("a", rows), ClientData("b", rows)])


def test_constant_variable_and_continuous_data_are_refused(chain):
    _, scm = chain
    [client] = horizontal_interventions(scm, 1, n_observational=100, n_per_intervention=5, seed=0)
    rows = client.rows.copy()
    rows[rows.columns[2]] = 0
    with pytest.raises(DataError, match=rf"{rows.columns[2]}.*fewer than 2 categories"):
        InterventionalData.from_client(ClientData("c", rows, intervention=client.intervention))
    noisy = client.rows.astype(float) + 0.5
    with pytest.raises(DataError, match="discretise"):
        InterventionalData.from_client(ClientData("c", noisy, intervention=client.intervention))


def test_intervention_on_a_variable_outside_the_federation_names_it(chain):
    _, scm = chain
    [client] = horizontal_interventions(scm, 1, n_observational=100, n_per_intervention=5, seed=0)
    names = list(client.variables)
    with pytest.raises(UnknownVariableError, match=names[-1]):
        InterventionalData.from_client(client.select(names), names=names[:-1])


def test_a_client_sends_only_beliefs_targets_and_counts(chain):
    _, scm = chain
    clients = vertical_interventions(scm, 2, n_observational=300, n_per_intervention=20, seed=0)
    model = FedCD(rounds=1, epochs_per_round=1, **SMALL)
    client = model.make_client(clients[0])
    reply = client.handle(Message(FIT, config={"round": 1}))
    assert set(reply.arrays) == {"gamma", "theta", "targets"}
    assert reply.arrays["gamma"].shape == (5, 5)
    np.testing.assert_allclose(reply.arrays["theta"], -reply.arrays["theta"].T)
    expected = sorted(clients[0].variables.index(t) for t in clients[0].intervention_targets)
    assert reply.arrays["targets"].tolist() == expected
    assert reply.metrics["n"] == clients[0].n_rows


def test_enco_recovers_a_chain_exactly(chain):
    dag, scm = chain
    [client] = horizontal_interventions(
        scm, 1, n_observational=2000, n_per_intervention=100, seed=1
    )
    data = InterventionalData.from_client(client)
    learner = ENCO(ENCOConfig(model_steps=300, graph_steps=60))
    beliefs = learner.fit(data, Beliefs.uniform(5), epochs=8, seed=0)
    from fedstruct.methods.fedcd import final_graph

    assert shd(dag, final_graph(data.names, beliefs)) == 0


def test_fedcd_is_deterministic_and_learns_the_chain(chain):
    dag, scm = chain
    clients = vertical_interventions(scm, 2, n_observational=2000, n_per_intervention=100, seed=2)
    runs = [FedCD(rounds=2, seed=3, **SMALL).fit(clients) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].beliefs_.gamma, runs[1].beliefs_.gamma)
    np.testing.assert_array_equal(runs[0].beliefs_.theta, runs[1].beliefs_.theta)
    assert shd(dag, runs[0].graph_) == 0
    assert [h["round"] for h in runs[0].history_] == [1, 2]
    assert 0.0 <= runs[0].history_[-1]["edge_entropy"] <= 1.0


def test_clients_with_different_variables_are_a_protocol_error(chain):
    _, scm = chain
    a, b = vertical_interventions(scm, 2, n_observational=300, n_per_intervention=20, seed=0)
    b = ClientData(
        b.name,
        b.rows.iloc[:, ::-1],
        intervention=pd.Series(b.intervention).map(lambda c: c if c < 0 else 4 - c).to_numpy(),
    )
    from fedstruct.errors import ProtocolError

    with pytest.raises(ProtocolError, match="same variables"):
        FedCD(rounds=1, epochs_per_round=1, **SMALL).fit([a, b])


def test_a_round_nobody_answers_is_logged_and_keeps_the_rounds_aligned():
    from fedstruct.methods.fedcd import FedCDConfig, FedCDServer

    class NobodyGrid:
        def node_ids(self):
            return []

        def send_and_receive(self, messages):
            return {}

    server = FedCDServer(FedCDConfig(rounds=2))
    state = server.run_round(NobodyGrid(), server.init_state(), 1)
    assert state.round_graphs == [None] and state.client_graphs == [{}]
    assert state.history == [{"round": 1, "clients_asked": 0, "clients_answered": 0}]
