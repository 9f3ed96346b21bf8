"""A graph given to F-CMs or FedNGM is checked against background knowledge."""

import pytest

from fedstruct.discovery import Knowledge
from fedstruct.discovery.knowledge import check_graph, violations
from fedstruct.errors import KnowledgeError
from fedstruct.graphs import Graph
from fedstruct.graphs.pag import dag_to_pag

NAMES = list("ABCDE")
KNOWLEDGE = Knowledge(
    tiers=[["A"], ["B"]],
    forbidden=[("C", "E")],
    required=[("A", "E"), ("E", "B")],
    forbidden_adjacent=[("A", "C")],
)


def test_each_kind_of_violation_is_named():
    graph = Graph.from_edges(NAMES, ["B --> A", "C --> D", "D --> E", "A o-o C", "E <-> B"])
    assert violations(graph, KNOWLEDGE) == [
        "B -> A (tier 2 into the earlier tier 1)",
        "C -> ... -> E, a directed path (forbidden)",
        "A - C (forbidden_adjacent)",
        "A -> E missing (required)",
        "E <-> B against the required E -> B",
    ]
    with pytest.raises(KnowledgeError, match=r"^graph g.json contradicts the background know"):
        check_graph(graph, KNOWLEDGE, "graph g.json")


def test_a_graph_that_respects_it_passes_and_circles_assert_nothing():
    dag = Graph.from_edges(NAMES, ["A --> E", "E --> B", "C --> D", "E --> D"])
    assert check_graph(dag, KNOWLEDGE, "g") is dag
    assert violations(dag_to_pag(dag), KNOWLEDGE) == []  # circles: no ancestry asserted
    assert check_graph(Graph.from_edges(NAMES, ["B --> A"]), None, "g").n_edges == 1


def test_statements_about_variables_outside_the_graph_are_left_out():
    graph = Graph.from_edges(["A", "B", "D"], ["A --> B", "B --> D"])
    assert violations(graph, KNOWLEDGE) == []
