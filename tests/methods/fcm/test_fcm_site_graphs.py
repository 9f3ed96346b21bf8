"""F-CMs on a user's concept table without graph files (issue 31, item 5): each site
learns its concept graph from its rows, or the flat graph; an empty graph is never
silent."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

from fedstruct.data import ClientData
from fedstruct.errors import ConfigError, FedstructWarning
from fedstruct.graphs import Graph, write_graph
from fedstruct.methods.fcm import FCM, FCMRun
from fedstruct.methods.fcm.run import warn_if_task_has_no_parent
from fedstruct.methods.fcm.sources import flat_graph, labelled_rows, own_fci_graph
from fedstruct.runs.contract import build_estimator, execute, runnable

CONCEPTS = ["c0", "c1", "c2"]


def task_caused(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """A task that causes three concepts (each a noisy copy of it): the concepts are
    independent given the task, so FCI finds no collider at the task."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame({c: y ^ (rng.random(n) < 0.15) for c in CONCEPTS}).astype(np.int64)
    frame["y"] = y
    return frame


def concept_sites(folder, n_sites=3, rows=200, seed=0, graphs=None):
    """Sites of a concept table: inputs are noisy views of the concepts and noise,
    the task ``y = (c0 and c1) or c2``; a manifest without graph files (or with
    ``graphs``: site index -> graph file)."""
    rng = np.random.default_rng(seed)
    n = n_sites * rows
    c = rng.integers(0, 2, size=(n, 3))
    x = np.concatenate([c + rng.normal(scale=0.5, size=c.shape), rng.normal(size=(n, 4))], 1)
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(x.shape[1])])
    frame[CONCEPTS] = c
    frame["y"] = np.where((c[:, 0] & c[:, 1]) | c[:, 2], "yes", "no")
    sites = []
    for k, part in enumerate(np.array_split(np.arange(n), n_sites)):
        frame.iloc[part].to_csv(folder / f"s{k}.csv", index=False)
        site = {"name": f"s{k}", "path": f"s{k}.csv"}
        if graphs and k in graphs:
            site["graph"] = graphs[k]
        sites.append(site)
    manifest = folder / "federation.yaml"
    manifest.write_text(yaml.safe_dump({"task": "y", "concepts": CONCEPTS, "sites": sites}))
    return manifest


def test_a_learned_site_graph_makes_the_task_a_sink():
    client = ClientData("a", task_caused(), supervised=(*CONCEPTS, "y"))
    as_learned = own_fci_graph(client)
    assert as_learned.children("y")  # as the data say: the task explains concepts
    sunk = own_fci_graph(client, "y")
    assert set(sunk.parents("y")) == set(CONCEPTS) and not sunk.children("y")
    assert sunk.is_acyclic()


def test_rows_missing_a_label_are_left_out_of_the_learning_only():
    rows = task_caused(200)
    rows.loc[:9, "c1"] = -1
    client = ClientData("a", rows, supervised=(*CONCEPTS, "y"))
    assert len(labelled_rows(client)) == 190
    assert len(client.rows) == 200


def test_sites_without_graph_files_learn_their_graphs_by_default(tmp_path):
    manifest = concept_sites(tmp_path)
    source = runnable("fcm").resolve(FCMRun(manifest=str(manifest)))
    clients = source.clients()
    assert all(c.graph is not None and c.graph.parents("y") for c in clients)
    graphs = source.site_graphs
    assert {g.how for g in graphs.values()} == {"learned"} and graphs["s0"].rows == 200
    assert graphs["s0"].edges == clients[0].graph.n_edges > 0


def test_a_site_with_a_file_proposes_it_and_given_learns_none(tmp_path):
    hand = Graph.from_edges([*CONCEPTS, "y"], [("c0", "y"), ("c2", "y")])
    write_graph(hand, tmp_path / "hand.json")
    manifest = concept_sites(tmp_path, graphs={0: "hand.json"})
    auto = runnable("fcm").resolve(FCMRun(manifest=str(manifest)))
    graphs = auto.site_graphs
    assert graphs["s0"].how == "given" and graphs["s0"].edges == 2
    assert graphs["s1"].how == graphs["s2"].how == "learned"
    given = runnable("fcm").resolve(FCMRun(manifest=str(manifest), client_graphs="given"))
    assert [c.graph is None for c in given.clients()] == [False, True, True]
    assert {g.how for g in given.site_graphs.values()} == {"given", "none"}
    fci = runnable("fcm").resolve(FCMRun(manifest=str(manifest), client_graphs="fci"))
    assert fci.site_graphs["s0"].how == "learned"


def test_flat_builds_the_model_on_every_concept_feeding_the_task(tmp_path):
    manifest = concept_sites(tmp_path)
    s = FCMRun(manifest=str(manifest), client_graphs="flat")
    source = runnable("fcm").resolve(s)
    assert all(c.graph is None for c in source.clients())
    assert {g.how for g in source.site_graphs.values()} == {"none"}
    model = build_estimator(s, source)
    assert set(model.graph.parents("y")) == set(CONCEPTS) and model.graph.n_edges == 3
    assert flat_graph(["a", "b"], "t").parents("t") == ("a", "b")
    with pytest.raises(ConfigError, match="--graph and client_graphs = flat"):
        FCMRun(manifest=str(manifest), client_graphs="flat", graph="g.json")


def test_a_task_without_a_parent_is_warned_naming_the_concepts():
    model = FCM(task="y", cardinalities=dict.fromkeys([*CONCEPTS, "y"], 2)).prepare()
    model.graph_ = Graph.empty([*CONCEPTS, "y"])
    with pytest.warns(FedstructWarning, match=r"task 'y' no parent among the concepts \['c0'"):
        warn_if_task_has_no_parent(model)
    model.graph_ = flat_graph(CONCEPTS, "y")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_task_has_no_parent(model)
    bipartite = FCM(task="y", cardinalities=dict.fromkeys([*CONCEPTS, "y"], 2), model="cbm")
    bipartite.prepare()
    bipartite.graph_ = Graph.empty([*CONCEPTS, "y"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a bipartite model feeds every concept anyway
        warn_if_task_has_no_parent(bipartite)


def raw_scale_sites(folder, n_sites=4, rows=150, seed=0):
    """Sites whose 20 inputs mix three concepts at raw scales from 1 to 1000 (as a
    clinic's measurements, unstandardised), the task ``y = (c0 and c1) or c2``; no
    graph file."""
    rng = np.random.default_rng(seed)
    n = n_sites * rows
    c = rng.integers(0, 2, size=(n, 3))
    scale = np.exp(rng.uniform(0, np.log(1000), 20))
    x = (c @ rng.normal(size=(3, 20)) + rng.normal(size=(n, 20))) * scale
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(20)])
    frame[CONCEPTS] = c
    frame["y"] = np.where((c[:, 0] & c[:, 1]) | c[:, 2], "yes", "no")
    sites = []
    for k, part in enumerate(np.array_split(np.arange(n), n_sites)):
        frame.iloc[part].to_csv(folder / f"s{k}.csv", index=False)
        sites.append({"name": f"s{k}", "path": f"s{k}.csv"})
    manifest = folder / "federation.yaml"
    manifest.write_text(yaml.safe_dump({"task": "y", "concepts": CONCEPTS, "sites": sites}))
    return manifest


@pytest.mark.slow
def test_without_graph_files_the_learned_graphs_beat_the_empty_one(tmp_path):
    manifest = raw_scale_sites(tmp_path)

    # the graph's effect shows on raw inputs (input_scaling=none), where the encoder
    # alone is weak; the default standardises them (checked last)
    def run(mode, scaling="none"):
        layer = {"manifest": str(manifest), "client_graphs": mode, "rounds": 30,
                 "clients_per_round": 4, "input_scaling": scaling}  # fmt: skip
        out = tmp_path / f"{mode}-{scaling}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            execute("fcm", [layer], out)
        said = [str(w.message) for w in caught if issubclass(w.category, FedstructWarning)]
        return json.loads((out / "metrics.json").read_text()), said

    empty, said = run("given")
    assert empty["task_parents"] == 0 and any("no parent among the concepts" in s for s in said)
    assert empty["graph_sites_proposed"] == 0 and empty["graph_flat"] == 0
    learned, said = run("auto")
    assert learned["graph_sites_proposed"] == 4 and learned["task_parents"] >= 2
    assert all(learned[f"graph_edges_s{k}"] >= 2 for k in range(4))
    assert not any("no parent" in s for s in said)
    flat, _ = run("flat")
    assert flat["graph_flat"] == 1 and flat["task_parents"] == 3
    # measured: empty 0.829, learned 0.947, flat 0.947 (majority ~0.63)
    assert learned["val_task_accuracy"] > empty["val_task_accuracy"] + 0.05
    # issue 31, item 7: standardised with federated statistics (the files' default),
    # even the empty graph's model reads the inputs well (measured 0.987 against 0.829)
    scaled, _ = run("given", "auto")
    assert scaled["val_task_accuracy"] > empty["val_task_accuracy"] + 0.1
    assert flat["val_task_accuracy"] > empty["val_task_accuracy"] + 0.05


def test_a_site_graph_file_against_the_knowledge_is_refused_naming_the_site(tmp_path):
    from fedstruct.errors import KnowledgeError

    hand = Graph.from_edges([*CONCEPTS, "y"], [("y", "c0"), ("c2", "y")])
    write_graph(hand, tmp_path / "hand.json")
    manifest = concept_sites(tmp_path, graphs={0: "hand.json"})
    (tmp_path / "k.json").write_text('{"tiers": [["c0", "c1", "c2"], ["y"]]}')
    told = FCMRun(manifest=str(manifest), client_graphs="given", knowledge=str(tmp_path / "k.json"))
    with pytest.raises(KnowledgeError, match=r"graph file .*hand.json of site 's0' contradicts .*: "
                       r"y -> c0 \(tier 2 into the earlier tier 1\); fix"):  # fmt: skip
        runnable("fcm").resolve(told).clients()
    plain = FCMRun(manifest=str(manifest), client_graphs="given")
    assert runnable("fcm").resolve(plain).site_graphs["s0"].edges == 2
