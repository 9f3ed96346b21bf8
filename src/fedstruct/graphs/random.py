"""Random and structured DAGs: the graph families of ENCO (Lippe et al., 2021).

ENCO's synthetic benchmarks (Lippe et al., "Efficient Neural Causal Discovery without
Acyclicity Constraints", ICLR 2022; definitions as in its generator,
``causal_graphs/graph_generation.py`` of the ENCO repository), also used by FED-CD
(FED-CD paper, Section 6.1, Appendix 9.6 and "Experiments on Structured Graphs"),
draw the structure from six families:

``random``
    Erdős–Rényi: each pair ``i < j`` (in the hidden causal order) gets ``i -> j``
    independently with probability ``p``. FED-CD's "ER-n" has ``n`` expected edges
    per node, i.e. ``m = n d`` expected edges over the ``d (d - 1) / 2`` pairs, so
    ``p = 2 n / (d - 1)``.
``chain``
    ``X1 -> X2 -> ... -> Xd``.
``bidiag``
    A chain plus the edges ``i -> i + 2``.
``collider``
    Every other node is a parent of the last node.
``jungle``
    A binary tree (node ``i`` has children ``2i + 1`` and ``2i + 2``, 0-based) in
    which each node also points to its descendants up to ``num_levels`` levels down.
``full``
    Every pair ``i < j`` has ``i -> j`` (Erdős–Rényi with ``p = 1``).

The families are defined over positions ``0..d-1`` of a causal order. Without
shuffling, position ``k`` is the ``k``-th name (``X1 .. Xd`` by default), so the
matrix order is a topological order. With ``shuffle=True`` the names are assigned
to positions by a random permutation drawn from the seed, as ENCO does, so the
matrix order reveals nothing about the causal order. Every function is
deterministic in its seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.graphs.graph import Graph

__all__ = [
    "GRAPH_KINDS",
    "bidiag_dag",
    "chain_dag",
    "collider_dag",
    "default_names",
    "erdos_renyi_dag",
    "full_dag",
    "jungle_dag",
    "random_dag",
]

GRAPH_KINDS: tuple[str, ...] = ("random", "chain", "bidiag", "collider", "jungle", "full")

Seed = int | np.random.Generator | None


def default_names(n_nodes: int) -> tuple[str, ...]:
    """``("X1", ..., "Xd")``."""
    return tuple(f"X{k + 1}" for k in range(n_nodes))


def _names(n_nodes: int, names: Sequence[str] | None) -> tuple[str, ...]:
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int | np.integer) or n_nodes < 1:
        raise ConfigError(f"number of nodes is {n_nodes!r}; give a positive integer")
    if names is None:
        return default_names(int(n_nodes))
    names = tuple(names)
    if len(names) != n_nodes:
        raise ConfigError(f"got {len(names)} names for {n_nodes} nodes; give one name per node")
    return names


def _rng(seed: Seed, what: str) -> np.random.Generator:
    if seed is None:
        raise ConfigError(f"{what} needs a seed; pass seed=<int> so the graph is reproducible")
    return np.random.default_rng(seed)


def _finish(adj: NDArray[np.bool_], names: tuple[str, ...], perm: NDArray[np.intp] | None) -> Graph:
    """Wrap a position-ordered upper-triangular adjacency into a Graph over ``names``.

    With a permutation, position ``p`` gets the name ``names[perm[p]]``.
    """
    if perm is None:
        return Graph.from_dag_matrix(names, adj)
    out = np.zeros_like(adj)
    out[np.ix_(perm, perm)] = adj
    return Graph.from_dag_matrix(names, out)


def _perm(n: int, shuffle: bool, rng: np.random.Generator | None) -> NDArray[np.intp] | None:
    if not shuffle:
        return None
    assert rng is not None
    return rng.permutation(n)


def _structured(
    adj: NDArray[np.bool_],
    names: tuple[str, ...],
    shuffle: bool,
    seed: Seed,
    kind: str,
) -> Graph:
    rng = _rng(seed, f"shuffling the {kind} graph") if shuffle else None
    return _finish(adj, names, _perm(len(names), shuffle, rng))


# ------------------------------------------------------------------ families
def erdos_renyi_dag(
    n_nodes: int,
    *,
    seed: Seed,
    edges_per_node: float | None = None,
    edge_prob: float | None = None,
    names: Sequence[str] | None = None,
    shuffle: bool = False,
    connect_isolated: bool = False,
    max_parents: int | None = None,
) -> Graph:
    """Erdős–Rényi DAG ("random" in ENCO, "ER-n" in FED-CD).

    Each pair ``i < j`` of causal positions gets ``i -> j`` with probability ``p``,
    given either directly (``edge_prob``) or as ``edges_per_node`` ``n`` with
    ``p = 2 n / (d - 1)`` so that ``n d`` edges are expected (FED-CD paper,
    Section 6.1 and Appendix 9.6).

    Parameters
    ----------
    n_nodes
        Number of variables ``d``.
    seed
        Seed (or generator) of every draw.
    edges_per_node, edge_prob
        Exactly one of them: the expected number of edges per node, or ``p``.
    names
        Variable names (default ``X1..Xd``).
    shuffle
        Assign names to causal positions at random (ENCO always does).
    connect_isolated
        ENCO's post-processing: every node left without any edge (visited in
        position order) gets one edge to a uniformly drawn other node, directed from
        the earlier to the later position. Off by default (plain Erdős–Rényi).
    max_parents
        ENCO's optional cap: a node with more parents loses a random subset of them.

    Raises
    ------
    ConfigError
        If neither or both of ``edges_per_node`` and ``edge_prob`` are given, or
        ``p`` falls outside ``[0, 1]``.
    """
    out_names = _names(n_nodes, names)
    d = len(out_names)
    if (edges_per_node is None) == (edge_prob is None):
        raise ConfigError("give exactly one of edges_per_node (ER-n) and edge_prob")
    if edge_prob is None:
        assert edges_per_node is not None
        if edges_per_node < 0:
            raise ConfigError(f"edges_per_node is {edges_per_node}; it must be >= 0")
        p = 0.0 if d == 1 else 2.0 * edges_per_node / (d - 1)
        if p > 1.0:
            raise ConfigError(
                f"ER-{edges_per_node} on {d} nodes needs edge probability {p:.3g} > 1; "
                f"use at most {(d - 1) / 2:g} edges per node"
            )
    else:
        p = float(edge_prob)
        if not 0.0 <= p <= 1.0:
            raise ConfigError(f"edge_prob is {edge_prob}; it must lie in [0, 1]")
    if max_parents is not None and max_parents < 1:
        raise ConfigError(f"max_parents is {max_parents}; give a positive integer or None")
    rng = _rng(seed, "an Erdős–Rényi graph")
    perm = _perm(d, shuffle, rng)
    adj = np.triu(rng.random((d, d)) < p, 1)
    if connect_isolated and d > 1:
        for v in range(d):
            if not (adj[v].any() or adj[:, v].any()):
                other = int(rng.integers(d - 1))
                other += other >= v
                adj[min(v, other), max(v, other)] = True
    if max_parents is not None:
        for v in range(d):
            parents = np.flatnonzero(adj[:, v])
            excess = parents.size - max_parents
            if excess > 0:
                adj[rng.permutation(parents)[:excess], v] = False
    return _finish(adj, out_names, perm)


def full_dag(
    n_nodes: int, *, names: Sequence[str] | None = None, shuffle: bool = False, seed: Seed = None
) -> Graph:
    """Complete DAG: ``i -> j`` for every pair of positions ``i < j``."""
    out_names = _names(n_nodes, names)
    d = len(out_names)
    adj = np.triu(np.ones((d, d), dtype=bool), 1)
    return _structured(adj, out_names, shuffle, seed, "full")


def chain_dag(
    n_nodes: int, *, names: Sequence[str] | None = None, shuffle: bool = False, seed: Seed = None
) -> Graph:
    """Chain ``0 -> 1 -> ... -> d-1`` over causal positions."""
    out_names = _names(n_nodes, names)
    d = len(out_names)
    adj = np.eye(d, k=1, dtype=bool)
    return _structured(adj, out_names, shuffle, seed, "chain")


def bidiag_dag(
    n_nodes: int, *, names: Sequence[str] | None = None, shuffle: bool = False, seed: Seed = None
) -> Graph:
    """Chain plus skip edges: ``i -> i + 1`` and ``i -> i + 2`` over causal positions."""
    out_names = _names(n_nodes, names)
    d = len(out_names)
    adj = np.eye(d, k=1, dtype=bool) | np.eye(d, k=2, dtype=bool)
    return _structured(adj, out_names, shuffle, seed, "bidiag")


def collider_dag(
    n_nodes: int, *, names: Sequence[str] | None = None, shuffle: bool = False, seed: Seed = None
) -> Graph:
    """Every position ``0..d-2`` is a parent of the last position ``d-1``."""
    out_names = _names(n_nodes, names)
    d = len(out_names)
    adj = np.zeros((d, d), dtype=bool)
    adj[:-1, -1] = True
    return _structured(adj, out_names, shuffle, seed, "collider")


def jungle_dag(
    n_nodes: int,
    *,
    num_levels: int = 2,
    names: Sequence[str] | None = None,
    shuffle: bool = False,
    seed: Seed = None,
) -> Graph:
    """Binary tree with extra edges to deeper descendants (ENCO's "jungle").

    Positions form a binary tree in breadth-first order: position ``i`` sits at
    depth ``l = floor(log2(i + 1))`` with offset ``o = i + 1 - 2**l`` in its level.
    For each ``k = 1..num_levels`` it points to all ``2**k`` of its tree descendants
    ``k`` levels down, i.e. positions ``2**k o + 2**(l + k) - 1 + t`` for
    ``t = 0..2**k - 1`` (those below ``d``). ``num_levels=1`` is a plain binary tree.
    """
    if num_levels < 1:
        raise ConfigError(f"num_levels is {num_levels}; give a positive integer")
    out_names = _names(n_nodes, names)
    d = len(out_names)
    adj = np.zeros((d, d), dtype=bool)
    for i in range(d):
        depth = (i + 1).bit_length() - 1
        offset = i + 1 - 2**depth
        for k in range(1, num_levels + 1):
            first = 2**k * offset + 2 ** (depth + k) - 1
            targets = np.arange(first, min(first + 2**k, d))
            adj[i, targets] = True
    return _structured(adj, out_names, shuffle, seed, "jungle")


def random_dag(
    kind: str,
    n_nodes: int,
    *,
    seed: Seed = None,
    names: Sequence[str] | None = None,
    shuffle: bool = False,
    **options: float | int | bool | None,
) -> Graph:
    """A DAG of one of the :data:`GRAPH_KINDS` families.

    ``options`` go to the family's function: ``edges_per_node``, ``edge_prob``,
    ``connect_isolated``, ``max_parents`` for ``"random"``; ``num_levels`` for
    ``"jungle"``.

    Raises
    ------
    ConfigError
        If ``kind`` is unknown or an option does not belong to the family.
    """
    allowed = {
        "random": {"edges_per_node", "edge_prob", "connect_isolated", "max_parents"},
        "jungle": {"num_levels"},
    }
    if kind not in GRAPH_KINDS:
        raise ConfigError(unknown_choice_message("graph kind", kind, GRAPH_KINDS))
    extra = sorted(set(options) - allowed.get(kind, set()))
    if extra:
        valid = sorted(allowed.get(kind, set())) or ["none"]
        raise ConfigError(
            f"option(s) {extra} do not apply to {kind!r} graphs; valid options: {valid}"
        )
    common = {"names": names, "shuffle": shuffle, "seed": seed}
    if kind == "random":
        return erdos_renyi_dag(n_nodes, **common, **options)  # type: ignore[arg-type]
    if kind == "jungle":
        return jungle_dag(n_nodes, **common, **options)  # type: ignore[arg-type]
    family = {"chain": chain_dag, "bidiag": bidiag_dag, "collider": collider_dag, "full": full_dag}
    return family[kind](n_nodes, **common)  # type: ignore[arg-type]
