"""F-CMs end to end: bad input, what crosses the wire, evolving concept sets, regimes."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.data.networks import load_network
from fedstruct.data.schedule import Schedule
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl import Message, Participation
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm import FCM, FCMConfig, ModelSpec, aggregate_graphs, fit_standalone
from fedstruct.methods.fcm.client import DESCRIBE, TRAIN, FCMClient
from fedstruct.methods.fcm.model import adapt, node_of
from fedstruct.methods.fcm.server import module_wise_average

NET = load_network("asia")
CARDS = dict(NET.cardinalities)
#: Supervised sets: the first two clients never see "xray" and "bronc".
SETS = [
    ["asia", "tub", "either", "dysp"],
    ["smoke", "lung", "either", "dysp"],
    ["smoke", "bronc", "dysp"],
    ["lung", "xray", "either"],
]


@pytest.fixture(scope="module")
def asia():
    """Inputs: a random linear map of the concepts' one-hot codes, plus noise."""
    rows = NET.sample(3000, seed=0)
    rng = np.random.default_rng(0)
    concepts = [v for v in NET.names if v != "dysp"]
    onehot = np.concatenate([np.eye(CARDS[c])[rows[c]] for c in concepts], axis=1)
    x = onehot @ rng.normal(size=(onehot.shape[1], 12)) + rng.normal(size=(len(rows), 12))
    feats = pd.DataFrame(x.astype(np.float32), columns=[f"x{i}" for i in range(12)])
    clients = []
    for k, chosen in enumerate(SETS):
        keep = [v for v in NET.graph.names if v in chosen]
        part = slice(k * 600, (k + 1) * 600)
        frame = pd.concat([feats.iloc[part], rows[keep].iloc[part]], axis=1)
        clients.append(
            ClientData(f"c{k}", frame.reset_index(drop=True), keep, graph=NET.graph.restrict(keep))
        )
    test = pd.concat([feats, rows], axis=1).iloc[2400:]
    return clients, test


def fcm(**kw):
    return FCM(task="dysp", cardinalities=CARDS, **{"rounds": 6, "patience": 50, **kw})


def test_graph_naming_an_unsupervised_concept_is_refused(asia):
    clients, _ = asia
    c = clients[0]
    with pytest.raises(UnknownVariableError, match=r"c0.*\['smoke'\]"):
        ClientData(c.name, c.rows, c.supervised, graph=NET.graph.restrict([*c.supervised, "smoke"]))


def test_client_without_any_label_is_refused_by_name(asia):
    clients, _ = asia
    rows = clients[2].rows.copy()
    rows[["smoke", "bronc", "dysp"]] = -1
    empty = ClientData("empty-site", rows, ("smoke", "bronc", "dysp"))
    with pytest.raises(DataError, match="'empty-site' has neither concept nor task labels"):
        fcm().fit([clients[0], empty])
    bad = rows.assign(smoke=5)
    with pytest.raises(DataError, match="'smoke' has label 5"):
        fcm().fit([ClientData("bad", bad, ("smoke", "bronc", "dysp"))])
    with pytest.raises(UnknownVariableError, match="'mystery'"):
        fcm().fit([ClientData("x", rows.assign(mystery=0), ("mystery",))])


def test_a_cyclic_client_graph_is_resolved_not_refused(asia):
    clients, _ = asia
    c = clients[1]
    cyclic = Graph.from_edges(c.supervised, [("smoke", "lung"), ("lung", "either"),
                                             ("either", "smoke")])  # fmt: skip
    model = fcm(rounds=1, model="cgm").fit([ClientData(c.name, c.rows, c.supervised, graph=cyclic)])
    assert model.graph_.is_dag() and model.graph_.n_edges == 2


def test_replies_carry_the_encoder_and_trained_modules_only(asia):
    clients, _ = asia
    config = FCMConfig(model="c2bm", local_epochs=1)
    client = FCMClient(clients[2], task="dysp", cardinalities=CARDS, config=config, seed=0)
    described = client.handle(Message(DESCRIBE, config={"round": 1}))
    assert described.config["concepts"] == ["smoke", "bronc"] and described.metrics["has_task"] == 1
    assert Graph(described.config["graph_names"], described.arrays["graph"]) == clients[2].graph
    assert described.n_entries() == client.describe_bound  # the audit's bound is tight
    spec = ModelSpec.build(config, "dysp", ("smoke", "bronc", "xray"), CARDS, 12, NET.graph)
    params = adapt({}, None, spec, 0)
    reply = client.handle(
        Message(TRAIN, arrays=params, config={"round": 1, "spec": spec.to_json()})
    )
    assert {node_of(k) for k in reply.arrays} == {None, "smoke", "bronc", "dysp"}
    assert reply.metrics["n"] == 525  # 600 rows, 12.5% held out


def test_module_wise_average_uses_only_the_clients_that_sent_a_module():
    current = {"encoder.w": np.zeros(2), "nodes.a.w": np.full(2, 5.0), "nodes.b.w": np.ones(2)}
    replies = [
        (1.0, {"encoder.w": np.array([1.0, 1.0]), "nodes.a.w": np.array([2.0, 2.0])}),
        (3.0, {"encoder.w": np.array([3.0, 5.0])}),
    ]
    out = module_wise_average(current, replies)
    np.testing.assert_allclose(out["encoder.w"], [2.5, 4.0])  # (1*1 + 3*3)/4, (1 + 15)/4
    np.testing.assert_allclose(out["nodes.a.w"], [2.0, 2.0])  # only the first client
    np.testing.assert_allclose(out["nodes.b.w"], [1.0, 1.0])  # nobody: unchanged


def test_graph_aggregation_votes_only_among_clients_observing_both_nodes():
    """§4.2.1: a -> b by two light clients against b -> a by a heavy one; c is seen by one."""
    g1 = Graph.from_edges(["a", "b"], [("a", "b")])
    g2 = Graph.from_edges(["a", "b", "c"], [("a", "b"), ("b", "c")])
    g3 = Graph.from_edges(["a", "b"], [("b", "a")])
    graph = aggregate_graphs({"1": (g1, 1.0), "2": (g2, 1.0), "3": (g3, 3.0)}, ["a", "b", "c"], 0)
    assert set(graph.edges()) == set(
        Graph.from_edges(["a", "b", "c"], [("b", "a"), ("b", "c")]).edges()
    )
    graph = aggregate_graphs({"1": (g1, 2.0), "2": (g2, 2.0), "3": (g3, 3.0)}, ["a", "b", "c"], 0)
    assert set(graph.edges()) == set(
        Graph.from_edges(["a", "b", "c"], [("a", "b"), ("b", "c")]).edges()
    )


def late_cohort(clients):
    """c2 and c3 (which bring 'bronc' and 'xray') join at round 3."""
    return Participation(schedule=Schedule.arrivals([c.name for c in clients], 2, 3))


@pytest.mark.parametrize("arch", ["cbm", "c2bm"])
def test_concept_space_grows_when_new_clients_join(asia, arch):
    clients, test = asia
    model = fcm(model=arch, rounds=12, participation=late_cohort(clients)).fit(clients)
    counts = [h["concepts"] for h in model.history_]
    assert counts == [5, 5] + [7] * 10  # asia, tub, either, smoke, lung; then bronc, xray
    assert set(model.concepts_) == set(NET.names) - {"dysp"}
    change = model.parameter_change_
    assert 0 < change["params_growth"] < change["params_changed_fraction"] <= 1
    scores = model.evaluate(test, truth=NET.graph)
    assert scores["concept_coverage"] == 1.0
    # 0.74 (cbm) and 0.84-0.85 (c2bm) on AMD EPYC; cbm was above 0.75 on Intel Xeon:
    # a bound from the data, 10 points above always answering dysp's majority class.
    majority = float(test["dysp"].value_counts(normalize=True).max())  # 0.56
    assert scores["task_accuracy"] > majority + 0.10


def test_static_baseline_keeps_the_first_concept_set(asia):
    clients, test = asia
    static = fcm(model="cbm", regime="sfcm", participation=late_cohort(clients)).fit(clients)
    assert [h["concepts"] for h in static.history_] == [5] * 6
    assert static.parameter_change_ == {"params_growth": 0.0, "params_changed_fraction": 0.0}
    # bronc is task-relevant (bronc -> dysp) but never predicted: coverage 5/6.
    assert static.evaluate(test, truth=NET.graph)["concept_coverage"] == pytest.approx(5 / 6)
    reinit = fcm(model="cbm", regime="sfcm-reinit", participation=late_cohort(clients))
    change = reinit.fit(clients).parameter_change_
    assert change["params_changed_fraction"] == pytest.approx(1.0)


def test_runs_are_deterministic_and_early_stopping_returns_the_best_round(asia):
    clients, _ = asia
    a = fcm(model="cem", rounds=8, patience=2, learning_rate=0.05).fit(clients)
    b = fcm(model="cem", rounds=8, patience=2, learning_rate=0.05).fit(clients)
    assert [h["val_loss"] for h in a.history_] == [h["val_loss"] for h in b.history_]
    for k, v in a.model_.state_arrays().items():
        np.testing.assert_array_equal(v, b.model_.state_arrays()[k])
    losses = [h["val_loss"] for h in a.history_]
    assert a.best_round_ == 1 + int(np.argmin(losses))
    assert len(losses) == a.best_round_ + 2 or len(losses) == 8


def test_localized_model_predicts_only_its_supervision(asia):
    clients, test = asia
    fit = fit_standalone(clients[3], task="dysp", cardinalities=CARDS,
                         config=FCMConfig(model="cbm"), max_epochs=30)  # fmt: skip
    assert fit.predicted == ("either", "lung", "xray") or set(fit.predicted) == {
        "lung",
        "either",
        "xray",
    }
    from fedstruct.methods.fcm import accuracy_metrics

    x = test[[f"x{i}" for i in range(12)]].to_numpy(np.float32)
    scores = accuracy_metrics(fit.model, x, test, NET.graph, CARDS, fit.predicted)
    assert scores["task_accuracy"] == 0.5  # no task labels: a random guess over 2 states
    assert scores["concept_coverage"] == pytest.approx(2 / 6)  # lung, either of 6 ancestors


def test_dp_budget_is_accounted_across_rounds_and_never_exceeded(asia):
    """App. E.4 with ε over the whole run: a client planning 2 rounds stops after 2."""
    clients, _ = asia
    model = fcm(model="cbm", rounds=4, clients_per_round=4, dp_epsilon=1.0,
                dp_rounds=2).fit(clients)  # fmt: skip
    spent = [h["epsilon_max"] for h in model.history_]
    assert spent[0] < spent[1] <= 1.0  # composed over rounds
    assert spent[2] == spent[1] and spent[3] == spent[1]  # nobody trains a third time
    assert [h["clients_out_of_budget"] for h in model.history_] == [0, 0, 4, 4]
    # The last two rounds change nothing: the parameters after round 2 are final.
    assert model.history_[2]["val_loss"] == model.history_[3]["val_loss"]


def test_score_and_predict_need_no_true_graph(asia):
    clients, test = asia
    model = fcm(rounds=3).fit(clients)
    with_truth = model.evaluate(test, truth=NET.graph)
    without = model.evaluate(test)  # a user's data: no true graph
    assert set(without) == {"task_accuracy", "concept_accuracy"}
    assert without["task_accuracy"] == with_truth["task_accuracy"]
    assert model.score(test) == without["task_accuracy"]
    # without the truth, concept accuracy averages over the concepts the test rows hold:
    # here every concept of asia, as with the truth
    assert without["concept_accuracy"] == pytest.approx(with_truth["concept_accuracy"])
    predicted = model.predict(test)
    assert predicted.shape == (len(test),)
    assert np.mean(predicted == test["dysp"].to_numpy()) == with_truth["task_accuracy"]
    states = model.prediction(test).states
    assert list(states.columns) == list(model.spec_.nodes)
    only_inputs = test[list(model.features_)]  # concepts are predicted from the inputs alone
    assert model.prediction(only_inputs).states.equals(states)


def test_a_given_graph_replaces_the_aggregated_one(asia, tmp_path):
    from fedstruct.graphs.io import write_graph
    from fedstruct.graphs.pag import dag_to_pag

    def arcs(graph):
        rows, cols = np.nonzero(graph.directed())
        return {(graph.names[i], graph.names[j]) for i, j in zip(rows, cols, strict=True)}

    def pairs(graph):
        return {frozenset(pair) for pair in arcs(graph)}

    clients, _ = asia
    bare = [ClientData(c.name, c.rows, c.supervised) for c in clients]  # no own graphs
    assert fcm(rounds=1).fit(bare).graph_.n_edges == 0
    write_graph(NET.graph, tmp_path / "truth.json")
    for given in (NET.graph, tmp_path / "truth.json", str(tmp_path)):
        if given == str(tmp_path):
            (tmp_path / "truth.json").rename(tmp_path / "graph.json")  # a run folder
        model = fcm(rounds=1, graph=given).fit(bare)
        assert arcs(model.graph_) == arcs(NET.graph)
    pag = fcm(rounds=1, graph=dag_to_pag(NET.graph)).fit(bare).graph_
    assert pag.is_dag() and pairs(pag) == pairs(NET.graph)
    confounded = Graph.from_edges(NET.graph.names, [  # smoke hidden: lung <-> bronc
        "asia --> tub", "tub --> either", "lung --> either", "either --> xray",
        "either --> dysp", "bronc --> dysp", "lung <-> bronc",
    ])  # fmt: skip
    dropped = fcm(rounds=1, graph=confounded).fit(bare).graph_
    oriented = fcm(rounds=1, graph=confounded, bidirected="orient").fit(bare).graph_
    assert not dropped.is_adjacent("lung", "bronc") and oriented.is_adjacent("lung", "bronc")


def test_a_given_graph_against_the_knowledge_is_refused_with_its_edges():
    from fedstruct.discovery import Knowledge
    from fedstruct.errors import KnowledgeError

    graph = Graph.from_edges(["smoke", "lung", "dysp"], ["lung --> smoke", "lung --> dysp"])
    tiers = Knowledge(tiers=[["smoke"], ["lung"]])
    with pytest.raises(KnowledgeError, match=r"concept graph \(given\) contradicts .*: "
                       r"lung -> smoke \(tier 2 into the earlier tier 1\); fix"):  # fmt: skip
        fcm(graph=graph, knowledge=tiers).prepare().make_server()
    assert fcm(graph=graph).prepare().make_server() is not None  # without knowledge: taken
    fcm(graph=graph, knowledge=Knowledge(tiers=[["lung"], ["smoke"]])).prepare().make_server()


def test_the_aggregated_graph_keeps_to_the_knowledge(asia):
    from fedstruct.discovery import Knowledge
    from fedstruct.discovery.knowledge import violations

    clients, _ = asia
    plain = fcm(rounds=1).fit(clients).graph_
    assert plain.is_adjacent("tub", "either") and not plain.is_adjacent("asia", "smoke")
    knowledge = Knowledge(forbidden=[("tub", "either")], required=[("asia", "smoke")])
    learned = fcm(rounds=1, knowledge=knowledge).fit(clients).graph_
    assert not learned.is_adjacent("tub", "either")  # every site holding both has it
    assert str(learned.edge("asia", "smoke")) == "asia --> smoke"  # no site holds both
    assert violations(learned, knowledge) == []
