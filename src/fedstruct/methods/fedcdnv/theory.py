"""Definite and non-definite relationships: the status matrix of FedCDnv (§3.1, §3.3).

``stat[i, j]`` takes four values (§3.3.1):

====  ==============================================================================
 2    definite causal: adjacent in the integrated graph and in the truth
 1    non-definite causal: adjacent in the integrated graph, truth unknown
-1    non-definite non-causal: not adjacent in the integrated graph, truth unknown
-2    definite non-causal: adjacent in neither
====  ==============================================================================

Pairs fall in two categories (§3.1): a *non-overlapping* pair is never observed
together by any client (Category I), an *overlapping* pair is (Category II).

- Category I starts non-definite non-causal (-1); Theorem 3.1 makes it definite (-2)
  when ``A_X ∩ A_Y = ∅``, both are non-empty, every ``Y' ∈ A_Y`` forms an overlapping
  pair with ``X`` and every ``X' ∈ A_X`` one with ``Y`` (``A_V``: the variables
  adjacent to ``V`` in the integrated graph).
- Category II starts definite (2 if adjacent, -2 if not). Lemma 3.2 makes the causal
  relationship of an adjacent pair non-definite (1) when ``X`` or ``Y`` belongs to a
  non-overlapping pair that stayed non-definite (``stat = -1``); Lemma 3.3 does so
  when some non-overlapping pair ``<A, B>`` has ``{A, B} ⊆ A_X ∪ A_Y``.

Both lemmas speak of the *causal* relationship of an overlapping pair, so they apply
to its adjacent pairs only (a choice, documented in docs/fedcdnv.md).

FeddG (Algorithm 1, line 17) reads FedG's relationships "according to obtained stat":
:func:`definite_relations` keeps a pair as definite causal where the status is 2 and
FedG holds the edge, definite non-causal where it is -2 and FedG does not. With the
status matrix of G0 (the default) a pair G0 holds and TPSS removed is neither; with
the status matrix of FedG itself the masks are exactly ``stat == 2`` and ``stat == -2``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.graphs import Graph

__all__ = [
    "DEFINITE_CAUSAL",
    "DEFINITE_NONCAUSAL",
    "NONDEFINITE_CAUSAL",
    "NONDEFINITE_NONCAUSAL",
    "definite_pairs",
    "definite_relations",
    "observed_together",
    "status_matrix",
]

DEFINITE_CAUSAL = 2
NONDEFINITE_CAUSAL = 1
NONDEFINITE_NONCAUSAL = -1
DEFINITE_NONCAUSAL = -2


def observed_together(
    names: Sequence[str], variable_sets: Sequence[Collection[str]]
) -> NDArray[np.bool_]:
    """``[i, j]``: some client observes both ``names[i]`` and ``names[j]`` (i ≠ j).

    ``False`` marks the non-overlapping pairs of §2 (Category I).
    """
    index = {v: k for k, v in enumerate(names)}
    member = np.zeros((len(variable_sets), len(names)), dtype=bool)
    for row, variables in enumerate(variable_sets):
        member[row, [index[v] for v in variables]] = True
    together = (member.T.astype(np.int64) @ member.astype(np.int64)) > 0
    np.fill_diagonal(together, False)
    return together


def status_matrix(graph: Graph, together: NDArray[np.bool_]) -> NDArray[np.int8]:
    """The status matrix of ``graph`` (Theorem 3.1, then Lemmas 3.2 and 3.3).

    Parameters
    ----------
    graph
        The integrated graph over ``O``: ``G0`` during the protocol (Algorithm 1,
        line 9), ``FedG`` when extracting ``FeddG`` (§3.3.2).
    together
        :func:`observed_together` over the same variables.

    Returns
    -------
    numpy.ndarray
        Symmetric ``int8`` matrix with values in ``{-2, -1, 1, 2}`` off the diagonal.
    """
    adj = graph.adjacency()
    n = graph.n_nodes
    apart = ~together
    np.fill_diagonal(apart, False)
    stat = np.where(adj, DEFINITE_CAUSAL, DEFINITE_NONCAUSAL).astype(np.int8)
    stat[apart] = NONDEFINITE_NONCAUSAL

    # Theorem 3.1: non-overlapping pairs that are definitely non-causal.
    has_nbrs = adj.any(axis=1)
    common = (adj.astype(np.int64) @ adj.astype(np.int64).T) > 0  # A_X ∩ A_Y ≠ ∅
    # every neighbour Y' of Y forms an overlapping pair with X:  no Y' ∈ A_Y with apart[X, Y']
    bad_x = (apart.astype(np.int64) @ adj.astype(np.int64).T) > 0  # [X, Y]: ∃Y'∈A_Y apart from X
    theorem = apart & ~common & has_nbrs[:, None] & has_nbrs[None, :] & ~bad_x & ~bad_x.T
    stat[theorem] = DEFINITE_NONCAUSAL

    # Lemma 3.2: variables in a non-definite non-overlapping pair taint their edges.
    tainted = (stat == NONDEFINITE_NONCAUSAL).any(axis=1)
    lemma32 = adj & (tainted[:, None] | tainted[None, :])

    # Lemma 3.3: a non-overlapping pair inside A_X ∪ A_Y taints the edge X - Y.
    lemma33 = np.zeros((n, n), dtype=bool)
    apart_i = apart.astype(np.int64)
    for x, y in zip(*np.nonzero(np.triu(adj, 1)), strict=True):
        u = (adj[x] | adj[y]).astype(np.int64)
        if u @ apart_i @ u > 0:
            lemma33[x, y] = lemma33[y, x] = True
    stat[lemma32 | lemma33] = NONDEFINITE_CAUSAL
    np.fill_diagonal(stat, 0)
    return stat


def definite_relations(
    graph: Graph, stat: NDArray[np.int8]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """The definite causal and definite non-causal relationships of ``graph`` (FeddG).

    Parameters
    ----------
    graph
        FedG.
    stat
        A status matrix over ``graph``'s variables: G0's (Algorithm 1, line 9) or
        ``graph``'s own.

    Returns
    -------
    tuple of numpy.ndarray
        Symmetric boolean masks: ``stat = 2`` where ``graph`` is adjacent, and
        ``stat = -2`` where it is not (module docstring).
    """
    adj = graph.adjacency()
    return (stat == DEFINITE_CAUSAL) & adj, (stat == DEFINITE_NONCAUSAL) & ~adj


def definite_pairs(
    stat: NDArray[np.int8], names: Sequence[str], graph: Graph | None = None
) -> tuple[list, list]:
    """The definite causal and definite non-causal pairs.

    Parameters
    ----------
    stat
        The status matrix.
    names
        Its variables.
    graph
        FedG: keep only its relationships the status calls definite
        (:func:`definite_relations`); ``None``: every pair with ``stat = 2`` and
        ``stat = -2`` (``stat`` is FedG's own).

    Returns
    -------
    tuple
        Two lists of name pairs ``(a, b)`` with ``a`` before ``b`` in ``names``.
    """
    if graph is None:
        causal, noncausal = stat == DEFINITE_CAUSAL, stat == DEFINITE_NONCAUSAL
    else:
        causal, noncausal = definite_relations(graph, stat)
    rows, cols = np.triu_indices(len(names), 1)
    pairs = list(zip(rows.tolist(), cols.tolist(), strict=True))
    return (
        [(names[i], names[j]) for i, j in pairs if causal[i, j]],
        [(names[i], names[j]) for i, j in pairs if noncausal[i, j]],
    )
