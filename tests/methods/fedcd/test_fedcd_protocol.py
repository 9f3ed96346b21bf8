"""FED-CD end to end: bad input, what crosses the wire, determinism, a learned graph."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData
from fedstruct.data.scm import CategoricalSCM
from fedstruct.discovery import Knowledge
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl import Message
from fedstruct.graphs.metrics import shd
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.fedcd import ENCO, Beliefs, ENCOConfig, FedCD, InterventionalData
from fedstruct.methods.fedcd.client import FIT
from fedstruct.methods.fedcd.knowledge import NO_EDGE, SURE, FixedEdges
from fedstruct.methods.fedcd.sources import horizontal_interventions, vertical_interventions

SMALL = {"model_steps": 150, "graph_steps": 30, "graphs_per_step": 40}
#: Enough ENCO to run the protocol, not to learn: tests of what crosses the wire.
TINY = {"model_steps": 10, "graph_steps": 2, "graphs_per_step": 5, "batch_size": 32}


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
    # a missing value, as NaN or as the code -1, is named as missing (not as a
    # continuous column or a negative code), with the fix
    name = client.rows.columns[1]
    for hole in (np.nan, -1):
        holed = client.rows.astype(float if hole != -1 else int)
        holed.loc[[3, 7], name] = hole
        with pytest.raises(DataError, match=rf"{name}' misses values in 2 rows.*drop-rows"):
            InterventionalData.from_client(
                ClientData("c", holed, intervention=client.intervention, missing_values=True)
            )


def test_intervention_on_a_variable_outside_the_federation_names_it(chain):
    _, scm = chain
    [client] = horizontal_interventions(scm, 1, n_observational=100, n_per_intervention=5, seed=0)
    names = list(client.variables)
    with pytest.raises(UnknownVariableError, match=names[-1]):
        InterventionalData.from_client(client.select(names), names=names[:-1])


def test_a_client_sends_only_beliefs_targets_and_counts(chain):
    _, scm = chain
    clients = vertical_interventions(scm, 2, n_observational=300, n_per_intervention=20, seed=0)
    model = FedCD(rounds=1, epochs_per_round=1, **SMALL).prepare()
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
    # 150 model steps and 40 graphs per step (300 and ENCO's 100 took 2.2x the CPU):
    # SHD 0 for seeds 0-2 under the portable, AVX2 and AVX-512 kernels, already after 6
    # epochs; 4 epochs leave two edges wrong
    learner = ENCO(ENCOConfig(model_steps=150, graph_steps=60, graphs_per_step=40))
    beliefs = learner.fit(data, Beliefs.uniform(5), epochs=8, seed=0)
    from fedstruct.methods.fedcd import final_graph

    assert shd(dag, final_graph(data.names, beliefs)) == 0


def test_fedcd_is_deterministic_and_learns_the_chain(chain):
    dag, scm = chain
    clients = vertical_interventions(scm, 2, n_observational=2000, n_per_intervention=100, seed=2)
    # the same run twice, on TINY steps (every draw of the protocol, not the learning)
    twice = [FedCD(rounds=2, seed=3, **TINY).fit(clients) for _ in range(2)]
    np.testing.assert_array_equal(twice[0].beliefs_.gamma, twice[1].beliefs_.gamma)
    np.testing.assert_array_equal(twice[0].beliefs_.theta, twice[1].beliefs_.theta)
    learnt = FedCD(rounds=2, seed=3, **SMALL).fit(clients)
    assert shd(dag, learnt.graph_) == 0
    assert [h["round"] for h in learnt.history_] == [1, 2]
    assert 0.0 <= learnt.history_[-1]["edge_entropy"] <= 1.0


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
        secure_aggregation = None

        def node_ids(self):
            return []

        def send_and_receive(self, messages):
            return {}

    server = FedCDServer(FedCDConfig(rounds=2))
    state = server.run_round(NobodyGrid(), server.init_state(), 1)
    assert state.round_graphs == [None] and state.client_graphs == [{}]
    assert state.history == [{"round": 1, "clients_asked": 0, "clients_answered": 0}]


def _with_levels(clients, seed=0):
    """The clients with a continuous column ``level`` (NaN in a few rows) that depends
    on the chain's first variable, shifted per client."""
    rng = np.random.default_rng(seed)
    out = []
    for k, client in enumerate(clients):
        first = client.rows.iloc[:, 0].to_numpy()
        rows = client.rows.assign(level=10.0 * first + rng.normal(3.0 * k, 2.0, client.n_rows))
        out.append(ClientData(client.name, rows, intervention=client.intervention))
    return out


def test_continuous_columns_are_binned_by_an_exchange_of_aggregates(chain):
    """The cut points the bins' exchange gives are those of the pooled rows' histogram
    over the pooled grid (the computation in one process); only aggregates cross."""
    from fedstruct.fl.binning import QuantileBins, quantile_cuts, shared_grid, site_histogram
    from fedstruct.fl.features import FeatureColumns, FeatureStatistics
    from fedstruct.methods.fedcd.client import BIN_COUNTS, BIN_GRID, BIN_SUMMARY

    _, scm = chain
    clients = _with_levels(
        vertical_interventions(scm, 3, n_observational=300, n_per_intervention=20, seed=0)
    )
    model = FedCD(continuous=["level"], bins=5, bin_grid=64, rounds=1, epochs_per_round=1,
                  **TINY).fit(clients)  # fmt: skip
    pooled = pd.concat([c.rows for c in clients], ignore_index=True)
    mean, sd = FeatureStatistics.of_rows(pooled, FeatureColumns(continuous=("level",))).moments(
        "level"
    )
    edges = shared_grid(mean, sd, 64)
    values = pooled["level"].to_numpy()
    expected = quantile_cuts(site_histogram(values, edges), edges, 5)
    np.testing.assert_allclose(model.bins_.cuts["level"], expected, rtol=0, atol=1e-12)
    sites = [{"level": c.rows["level"].to_numpy()} for c in clients]
    assert model.bins_ == QuantileBins.from_sites(["level"], sites, bins=5, cells=64)
    # what a client sends: 4 numbers, then 66 counts; both pass the privacy audit
    client = model.make_client(clients[0])
    summary = client.handle(Message(BIN_SUMMARY, config={"round": 1}))
    assert {k: v.size for k, v in summary.arrays.items()} == {
        "rows": 1, "count": 1, "sum": 1, "squares": 1, "level_counts": 0}  # fmt: skip
    counts = client.handle(Message(BIN_COUNTS, arrays={BIN_GRID: edges[None]}))
    assert counts.arrays["counts"].shape == (1, 66)
    assert counts.arrays["counts"].sum() == clients[0].n_rows
    assert model.graph_.names == (*clients[0].variables,)


def test_a_client_with_continuous_columns_needs_the_cuts_and_rows_never_leave(chain):
    from fedstruct.errors import PrivacyViolationError, ProtocolError
    from fedstruct.fl import handles
    from fedstruct.methods.fedcd import FedCDClient
    from fedstruct.methods.fedcd.client import BIN_COUNTS

    _, scm = chain
    [client] = _with_levels(
        horizontal_interventions(scm, 1, n_observational=100, n_per_intervention=5, seed=0)
    )
    model = FedCD(continuous=["level"], rounds=1, **TINY).prepare()
    with pytest.raises(ProtocolError, match="no bin cut points yet"):
        model.make_client(client).handle(Message(FIT, config={"round": 1}))

    class Leaky(FedCDClient):  # answers the grid with its rows, not its counts
        @handles(BIN_COUNTS, max_entries=10**6)
        def bin_counts(self, msg):
            return Message(BIN_COUNTS, arrays={"counts": self.data.rows.to_numpy(float)[:5]})

    leaky = Leaky(client, config=model.config_, seed=0, binning=model.binning_)
    with pytest.raises(PrivacyViolationError):
        leaky.handle(Message(BIN_COUNTS))


def test_a_run_with_bins_resumes_to_the_same_graph(chain, tmp_path):
    from fedstruct.fl.checkpoint import read_tree

    _, scm = chain
    clients = _with_levels(
        vertical_interventions(scm, 2, n_observational=300, n_per_intervention=20, seed=0)
    )
    options = {"continuous": ["level"], "rounds": 2, "epochs_per_round": 1, **TINY}
    full = FedCD(**options).fit(clients)
    path = tmp_path / "checkpoint.safetensors"
    FedCD(**options).fit(clients, checkpoint=path, stop_after=1)
    assert read_tree(path)[1]["server_state"].bins == full.bins_
    resumed = FedCD(**options).fit(clients, checkpoint=path, resume=True)
    assert resumed.bins_ == full.bins_
    np.testing.assert_array_equal(resumed.beliefs_.gamma, full.beliefs_.gamma)
    assert resumed.history_ == full.history_


def test_knowledge_fixes_enco_edges_every_client_round_and_the_aggregate(chain):
    dag, scm = chain
    clients = vertical_interventions(scm, 2, n_observational=300, n_per_intervention=20, seed=0)
    names = list(clients[0].variables)
    a, b = dag.edges()[0].a, dag.edges()[0].b  # a true edge a -> b
    far = names[-1] if names[-1] not in (a, b) else names[0]
    knowledge = Knowledge(forbidden=[(a, b)], required=[(far, a)], tiers=[[names[1]], [names[2]]])
    model = FedCD(rounds=2, epochs_per_round=1, seed=1, knowledge=knowledge, **TINY)
    model.fit(clients)
    i, j, f = names.index(a), names.index(b), names.index(far)
    graphs = [model.graph_, *(g for r in model.client_graphs_ for g in r.values())]
    for graph in graphs:
        assert not graph.directed()[i, j] and graph.directed()[f, i]
        assert not graph.directed()[2, 1]  # tier 2 into tier 1
    probs = model.beliefs_.edge_probability
    assert probs[i, j] == 0.0 and probs[f, i] == 1.0 and probs[i, f] == 0.0 and probs[2, 1] == 0.0
    np.testing.assert_allclose(model.beliefs_.theta, -model.beliefs_.theta.T)


def test_fixed_edges_name_what_the_knowledge_fixes():
    names = ["A", "B", "C"]
    fixed = FixedEdges.from_knowledge(Knowledge(tiers=[["A"], ["B"]], required=[("C", "B")]), names)
    assert fixed.gamma_fixed.tolist() == [
        [False, False, False],
        [True, False, True],  # B -> A (tiers), B -> C (C -> B required): impossible
        [False, True, False],  # C -> B required (fixed at SURE)
    ]
    assert fixed.gamma[2, 1] == SURE and fixed.gamma[1, 0] == NO_EDGE
    assert fixed.theta[0, 1] == SURE and fixed.theta[2, 1] == SURE and fixed.theta[1, 2] == -SURE
    assert not fixed.theta_fixed[0, 2]  # A - C: unconstrained
    assert FixedEdges.from_knowledge(None, names) is None
