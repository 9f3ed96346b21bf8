"""Knowledge in the graphs F-CMs and FedNGM learn (their own FCI, the server's merge)."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.discovery import Knowledge
from fedstruct.discovery.background import knowledge_dag
from fedstruct.discovery.knowledge import violations
from fedstruct.errors import KnowledgeError
from fedstruct.graphs import Graph
from fedstruct.methods.fcm import aggregate_graphs
from fedstruct.methods.fcm.sources import own_fci_graph
from fedstruct.methods.fedngm import FedNGM
from fedstruct.methods.fedngm.structure import merge_graphs

NAMES = list("ABCD")


def _dag(knowledge, edges, strength=None):
    graph = Graph.from_edges(NAMES, edges)
    support = np.ones((4, 4)) if strength is None else np.asarray(strength, dtype=float)
    rules = knowledge.within(NAMES).resolve(NAMES)
    return Graph.from_dag_matrix(NAMES, knowledge_dag(graph.directed(), support, rules))


def test_denied_edges_go_and_required_edges_come_in_and_stay():
    knowledge = Knowledge(
        tiers=[["A"], ["B"]], required=[("C", "D")], forbidden_adjacent=[("A", "C")]
    )
    dag = _dag(knowledge, ["B --> A", "A --> C", "D --> C", "C --> B"])
    assert sorted(dag.edges()) == sorted(Graph.from_edges(NAMES, ["C --> D", "C --> B"]).edges())
    # A cycle C -> D -> C is impossible; C -> D -> B -> C is broken elsewhere though
    # C -> D has the least support.
    strength = np.full((4, 4), 5.0)
    strength[2, 3] = 0.1
    cyclic = _dag(Knowledge(required=[("C", "D")]), ["C --> D", "D --> B", "B --> C"], strength)
    assert cyclic.is_acyclic() and cyclic.is_adjacent("C", "D") and cyclic.n_edges == 2


def test_a_forbidden_directed_path_is_cut_at_its_weakest_edge_not_required():
    strength = np.full((4, 4), 5.0)
    strength[1, 2], strength[2, 3] = 0.5, 1.0  # B -> C, then C -> D, the weakest
    knowledge = Knowledge(forbidden=[("A", "D")], required=[("B", "C")])
    dag = _dag(knowledge, ["A --> B", "B --> C", "C --> D"], strength)
    assert violations(dag, knowledge) == []
    assert str(dag.edge("A", "B")) == "A --> B" and str(dag.edge("B", "C")) == "B --> C"
    assert not dag.is_adjacent("C", "D")


# ----------------------------------------------------------------- F-CMs' server
def test_the_fcm_vote_keeps_to_the_knowledge():
    g1 = Graph.from_edges(list("ABC"), ["A --> B", "B --> C"])
    g2 = Graph.from_edges(list("ABD"), ["A --> B", "B --> D"])
    reports = {"s1": (g1, 100.0), "s2": (g2, 100.0)}
    plain = aggregate_graphs(reports, NAMES, seed=0)
    assert plain.is_adjacent("A", "B") and not plain.is_adjacent("C", "D")
    knowledge = Knowledge(forbidden=[("A", "B")], required=[("C", "D")])
    learned = aggregate_graphs(reports, NAMES, seed=0, knowledge=knowledge)
    assert not learned.is_adjacent("A", "B")  # won the vote, forbidden
    assert str(learned.edge("C", "D")) == "C --> D"  # no site holds both: required
    assert violations(learned, knowledge) == []
    unrelated = Knowledge(tiers=[["X"], ["Y"]])  # nothing among the nodes: as without
    assert aggregate_graphs(reports, NAMES, seed=0, knowledge=unrelated) == plain


# ------------------------------------------------------------ F-CMs' own FCI graph
@pytest.fixture(scope="module")
def site():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 600)
    t = np.where(rng.random(600) < 0.9, a, 1 - a)  # the task follows A
    b = rng.integers(0, 2, 600)  # B independent of both
    rows = pd.DataFrame({"A": a, "B": b, "T": t})
    return ClientData("s", rows, ("A", "B", "T"))


def test_a_site_s_own_graph_uses_the_knowledge(site):
    assert own_fci_graph(site, "T").edges() == Graph.from_edges(list("ABT"), ["A --> T"]).edges()
    denied = own_fci_graph(site, "T", Knowledge(forbidden=[("A", "T")]))
    assert denied.n_edges == 0  # FCI's A - T, made A -> T by the sink: A may not cause T
    required = own_fci_graph(site, "T", Knowledge(required=[("B", "T")]))
    assert str(required.edge("B", "T")) == "B --> T" and required.is_adjacent("A", "T")


# ------------------------------------------------------------------ FedNGM's merge
def test_fedngm_s_merge_holds_the_required_pairs():
    g1 = Graph.from_edges(list("abc"), ["a --- b"])
    g2 = Graph.from_edges(list("abcd"), ["b --- c"])
    merged = merge_graphs([g1, g2], required=[("a", "c"), ("a", "d")])  # d: not common
    assert merged.names == ("a", "b", "c") and merged.is_adjacent("a", "c")
    assert merged.n_edges == 3 and merge_graphs([g1, g2]).n_edges == 2


def test_fedngm_refuses_forbidden_adjacent_for_the_graph_it_learns():
    kinds = {"a": "real", "b": "real"}
    with pytest.raises(KnowledgeError, match=r"^knowledge: forbidden_adjacent \[a, b\] cannot"):
        FedNGM(
            kinds=kinds, knowledge=Knowledge(forbidden_adjacent=[("a", "b")])
        ).prepare().make_server()
    FedNGM(kinds=kinds, knowledge=Knowledge(required=[("a", "b")])).prepare().make_server()
    given = Graph.from_edges(["a", "b"], [])  # a given graph is checked instead
    FedNGM(
        kinds=kinds, graph=given, knowledge=Knowledge(forbidden_adjacent=[("a", "b")])
    ).prepare().make_server()
