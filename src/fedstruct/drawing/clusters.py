"""A large graph cut into clusters of closely linked variables, to draw and read it by parts.

A node-link picture of hundreds of variables is a hairball. Both readers of a large
graph — the PNG (:mod:`fedstruct.drawing.picture`) and the HTML page
(:mod:`fedstruct.results.graph_page`) — show it as clusters instead: groups of
variables with many edges inside and few between, each drawn on its own, and a map
of the clusters whose links count the edges between them. Both use this one
clustering, so the clusters ``C1``, ``C2``, ... are the same in the picture and on
the page.

Clusters are the communities of the graph's skeleton found by the Louvain method
(Blondel, Guillaume, Lambiotte & Lefebvre 2008, *Fast unfolding of communities in
large networks*, J. Stat. Mech. P10008; networkx's implementation, seeded, so the
same graph gives the same clusters), a community larger than ``max_size`` split
again the same way. Connected components smaller than ``min_size`` variables are
pooled into one cluster of their own (no edge leaves them); variables without edges
are in none.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from fedstruct.graphs import Graph

__all__ = ["CLUSTER_FROM", "Cluster", "Clustering", "graph_clusters"]

#: Graphs with more variables than this are drawn and shown as clusters.
CLUSTER_FROM = 80

#: The Louvain method's seed: the clusters of a graph never change.
_SEED = 0


@dataclass(frozen=True)
class Cluster:
    """One cluster: its label (``C1`` is the largest), its variables in the graph's
    order, its hub (the variable with the most edges in the whole graph), and whether
    it pools small connected components rather than being one community."""

    label: str
    names: tuple[str, ...]
    hub: str
    pooled: bool = False

    @property
    def title(self) -> str:
        """``"C1 · 57 variables, hub X"`` (pooled: ``"C9 · 12 variables in small parts"``)."""
        if self.pooled:
            return f"{self.label} · {len(self.names)} variables in small parts"
        return f"{self.label} · {len(self.names)} variables, hub {self.hub}"


@dataclass(frozen=True)
class Clustering:
    """A graph's clusters, its variables without edges, and the edges between clusters.

    Attributes
    ----------
    clusters
        Largest first (ties: the first variable's position in the graph).
    isolated
        The variables without edges, in the graph's order.
    links
        ``(i, j) -> count`` for ``i < j``: how many edges join cluster ``i`` and ``j``.
    inside
        Edges within each cluster.
    """

    clusters: tuple[Cluster, ...]
    isolated: tuple[str, ...]
    links: dict[tuple[int, int], int]
    inside: tuple[int, ...]

    def cluster_of(self) -> dict[str, int]:
        """Variable -> the position of its cluster (variables without edges: none)."""
        return {name: k for k, c in enumerate(self.clusters) for name in c.names}

    def linked(self, k: int) -> list[tuple[int, int]]:
        """The clusters cluster ``k`` shares edges with, with the counts, most first."""
        pairs = [(j if i == k else i, n) for (i, j), n in self.links.items() if k in (i, j)]
        return sorted(pairs, key=lambda p: (-p[1], p[0]))


def graph_clusters(
    graph: Graph, *, max_size: int = 60, min_size: int = 4, seed: int = _SEED
) -> Clustering:
    """Cut ``graph`` into clusters (see the module notes).

    Parameters
    ----------
    graph
        Any graph (its marks are not read: the skeleton is clustered).
    max_size
        A community with more variables is split again (while the split divides it).
    min_size
        Connected components with fewer variables are pooled into one cluster.
    seed
        The Louvain method's seed.
    """
    # The skeleton over positions, not names: sets of ints iterate in the same order in
    # every process (names' hashes change with PYTHONHASHSEED, and so would the clusters).
    names = graph.names
    skeleton = nx.Graph()
    skeleton.add_nodes_from(range(len(names)))
    edges = [(graph.index(e.a), graph.index(e.b)) for e in graph.edges()]
    skeleton.add_edges_from(edges)
    groups: list[list[int]] = []
    small: list[int] = []
    for component in nx.connected_components(skeleton):
        if len(component) == 1:
            continue
        if len(component) < min_size:
            small.extend(component)
            continue
        groups.extend(sorted(g) for g in _communities(skeleton.subgraph(component), max_size, seed))
    groups.sort(key=lambda g: (-len(g), g[0]))
    degree = dict(skeleton.degree())
    clusters = [
        Cluster(f"C{k + 1}", tuple(names[i] for i in g), names[_hub(g, degree)])
        for k, g in enumerate(groups)
    ]
    if small:
        pooled = sorted(small)
        clusters.append(
            Cluster(
                f"C{len(clusters) + 1}",
                tuple(names[i] for i in pooled),
                names[_hub(pooled, degree)],
                pooled=True,
            )
        )
    where = {i: k for k, g in enumerate([*groups, sorted(small)]) for i in g}
    links: dict[tuple[int, int], int] = {}
    inside = [0] * len(clusters)
    for a, b in edges:
        i, j = sorted((where[a], where[b]))
        if i == j:
            inside[i] += 1
        else:
            links[(i, j)] = links.get((i, j), 0) + 1
    isolated = tuple(names[i] for i in range(len(names)) if degree[i] == 0)
    return Clustering(tuple(clusters), isolated, dict(sorted(links.items())), tuple(inside))


def _communities(part: nx.Graph, max_size: int, seed: int) -> list[set[int]]:
    """Louvain communities of a connected ``part``, those above ``max_size`` split again."""
    if part.number_of_nodes() <= max_size:
        return [set(part.nodes)]
    found = nx.community.louvain_communities(part, seed=seed)
    if len(found) == 1:  # the method will not divide it: keep it whole
        return [set(part.nodes)]
    out: list[set[int]] = []
    for community in sorted(found, key=min):
        sub = part.subgraph(community)
        for piece in sorted(nx.connected_components(sub), key=min):
            out.extend(_communities(sub.subgraph(piece), max_size, seed))
    return out


def _hub(positions: list[int], degree: dict[int, int]) -> int:
    """The most connected of ``positions`` (the first of them on a tie)."""
    return max(positions, key=lambda i: (degree[i], -i))
