"""A large graph's clusters, which its PNG and its HTML page both show (issue 51)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fedstruct.data import load_network
from fedstruct.drawing.clusters import graph_clusters
from fedstruct.graphs import Graph


def _two_blocks() -> Graph:
    """Two 6-cliques joined by one edge, a 3-variable path, a pair, one isolated variable."""
    left = [f"a{i}" for i in range(6)]
    right = [f"b{i}" for i in range(6)]
    edges = [f"{x} o-o {y}" for block in (left, right) for i, x in enumerate(block)
             for y in block[i + 1:]]  # fmt: skip
    edges += ["a0 --> b0", "p0 --> p1", "p1 --> p2", "q0 <-> q1"]
    return Graph.from_edges([*left, *right, "p0", "p1", "p2", "q0", "q1", "z"], edges)


def test_dense_blocks_are_clusters_small_parts_pooled_and_links_counted():
    clustering = graph_clusters(_two_blocks(), max_size=8)
    sizes = [(c.label, len(c.names), c.pooled) for c in clustering.clusters]
    assert sizes == [("C1", 6, False), ("C2", 6, False), ("C3", 5, True)]
    assert set(clustering.clusters[0].names) == {f"a{i}" for i in range(6)}
    assert clustering.clusters[2].names == ("p0", "p1", "p2", "q0", "q1")
    assert clustering.clusters[0].hub == "a0"  # 6 edges: the clique and the link
    assert clustering.links == {(0, 1): 1}
    assert clustering.inside == (15, 15, 3)
    assert clustering.isolated == ("z",)
    assert clustering.linked(1) == [(0, 1)]
    assert clustering.clusters[2].title == "C3 · 5 variables in small parts"


def test_every_variable_with_edges_is_in_one_cluster_and_every_edge_counted_once():
    graph = load_network("pigs").graph
    clustering = graph_clusters(graph, max_size=60)
    members = [n for c in clustering.clusters for n in c.names]
    assert len(members) == len(set(members))
    assert set(members) | set(clustering.isolated) == set(graph.names)
    assert sum(clustering.inside) + sum(clustering.links.values()) == graph.n_edges
    assert max(len(c.names) for c in clustering.clusters) <= 60
    assert [len(c.names) for c in clustering.clusters] == sorted(
        (len(c.names) for c in clustering.clusters), reverse=True
    )


#: Three random DAGs side by side: each component is less than half the graph, where
#: networkx iterates a subgraph's nodes in the order of a set of their names (hash order).
_CLUSTERS = """
import json
from fedstruct.drawing.clusters import graph_clusters
from fedstruct.graphs import Graph, random_dag
names, edges = [], []
for k, (n, seed) in enumerate([(90, 0), (70, 1), (60, 2)]):
    dag = random_dag("random", n, seed=seed, edges_per_node=1.5)
    names += [f"{k}_{v}" for v in dag.names]
    edges += [f"{k}_{e.a} --> {k}_{e.b}" for e in dag.edges()]
c = graph_clusters(Graph.from_edges(names, edges), max_size=30)
print(json.dumps([[x.label, list(x.names), x.hub] for x in c.clusters]))
"""


def test_the_clusters_are_the_same_in_every_process():
    """The PNG and the page are made in different processes: string hashing, which
    changes with PYTHONHASHSEED, must not change the clusters."""
    outs = []
    for seed in ("1", "2", "4"):  # names clustered by their hash order: 21, 24, 25 clusters
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _CLUSTERS], capture_output=True, text=True, env=env,
            timeout=120, check=True,
        )  # fmt: skip
        outs.append(json.loads(done.stdout))
    assert outs[0] == outs[1] == outs[2]
    assert len(outs[0]) > 5
