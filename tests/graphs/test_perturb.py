"""A perturbed graph: how many edges change, in which style, on any graph kind."""

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import CIRCLE, TAIL, Graph
from fedstruct.graphs.pag import dag_to_pag
from fedstruct.graphs.perturb import perturb_graph
from fedstruct.graphs.undirected import moral_graph


def changed_pairs(a: Graph, b: Graph) -> int:
    differ = (a.marks != b.marks) | (a.marks.T != b.marks.T)
    return int(np.triu(differ, 1).sum())


@pytest.mark.parametrize("kind", ["dag", "pag", "undirected"])
def test_rate_sets_the_number_of_changed_pairs(kind):
    dag = load_network("alarm").graph
    graph = {"dag": dag, "pag": dag_to_pag(dag), "undirected": moral_graph(dag)}[kind]
    for rate in (0.1, 0.3):
        lied = perturb_graph(graph, rate, np.random.default_rng(0))
        assert changed_pairs(graph, lied) == round(rate * graph.n_edges)
        new = lied.adjacency() & ~graph.adjacency()
        if kind == "pag" and new.any():
            assert (lied.marks[new] == CIRCLE).all()  # added in the graph's own style
        if kind == "undirected":
            assert (lied.marks[lied.adjacency()] == TAIL).all()
    assert perturb_graph(graph, 0.0, np.random.default_rng(0)).marks.tolist() == (
        graph.marks.tolist()
    )


def test_a_bad_rate_is_refused():
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        perturb_graph(Graph.empty(["a", "b"]), 1.5, np.random.default_rng(0))
