"""Combine graphs (or edge-belief matrices) learned by clients over different variable sets.

Every function here takes per-client graphs over possibly *different* variable names
and an optional output order ``names``. By default the output variables are the union
of the clients' names in order of first appearance (client 0's names first, then the
names client 1 adds, ...). A given ``names`` must contain every client's variables; it
may add variables no client has (they stay isolated / get the ``fill`` value).

A client only speaks about the pairs it *observes* (both endpoints among its
variables): it cannot say "no edge" about a pair it never saw together.

Functions
---------
union
    FedCDnv's integrated graph G0: adjacencies and arrowheads of all graphs.
strength_vote
    The F-CMs three-way (i->j, j->i, none) strength rule with random tie-breaking,
    weighted (e.g. by sample sizes) over the clients that observe each pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import ConfigError, GraphError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph

__all__ = [
    "BeliefMatrix",
    "StrengthVote",
    "strength_vote",
    "union",
    "union_names",
    "vote_from_sums",
    "vote_terms",
]

#: Relative tolerance under which two weighted sums count as a tie.
TIE_RTOL = 1e-9


class BeliefMatrix(NamedTuple):
    """A square matrix over named variables, e.g. edge probabilities ``values[i, j]`` of i->j.

    ``values`` may be probabilities, confidences or logits: :func:`average_beliefs`
    only averages them.
    """

    names: tuple[str, ...]
    values: NDArray[np.float64]


# ----------------------------------------------------------------- name handling
def union_names(items: Sequence[Graph | BeliefMatrix]) -> tuple[str, ...]:
    """The union of the items' variable names, in order of first appearance."""
    seen: dict[str, None] = {}
    for item in items:
        for name in item.names:
            seen.setdefault(name, None)
    return tuple(seen)


def _output_names(
    items: Sequence[Graph | BeliefMatrix], names: Sequence[str] | None
) -> tuple[tuple[str, ...], list[NDArray[np.intp]]]:
    """Resolve the output names and each item's positions in them."""
    if names is None:
        out = union_names(items)
    else:
        out = tuple(names)
        if len(set(out)) != len(out):
            dupes = sorted({n for n in out if out.count(n) > 1})
            raise GraphError(f"output names repeat {dupes}; give each variable once")
    pos = {n: i for i, n in enumerate(out)}
    positions = []
    for k, item in enumerate(items):
        missing = [n for n in item.names if n not in pos]
        if missing:
            raise UnknownVariableError(
                f"graph {k} has variables {missing} that are not in the output names; "
                "add them to `names` or leave `names` unset to use the union"
            )
        positions.append(np.array([pos[n] for n in item.names], dtype=np.intp))
    return out, positions


def _weights(weights: ArrayLike | None, count: int) -> NDArray[np.float64]:
    """Validate one non-negative, finite weight per client (default: all 1)."""
    if weights is None:
        return np.ones(count)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (count,):
        raise ConfigError(f"got {w.size} weights for {count} graphs; give one weight per graph")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        k = int(bad[0])
        raise ConfigError(f"weight of graph {k} is {w[k]}; weights must be finite and >= 0")
    return w


def _expand(marks: NDArray, pos: NDArray[np.intp], n: int, dtype: type = np.int8) -> NDArray:
    """Place a client's matrix into the ``n x n`` output frame (zeros elsewhere)."""
    out = np.zeros((n, n), dtype=dtype)
    out[np.ix_(pos, pos)] = marks
    return out


def _observed(pos: NDArray[np.intp], n: int) -> NDArray[np.bool_]:
    """Pairs (i != j) that a client with variables at ``pos`` observes."""
    mask = np.zeros(n, dtype=bool)
    mask[pos] = True
    obs = np.outer(mask, mask)
    np.fill_diagonal(obs, False)
    return obs


def _is_tie(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether weighted sums ``a`` and ``b`` are equal up to :data:`TIE_RTOL`."""
    scale = np.maximum(np.abs(a), np.abs(b))
    return np.abs(a - b) <= TIE_RTOL * scale


# ----------------------------------------------------------------------- union
def union(graphs: Sequence[Graph], names: Sequence[str] | None = None) -> Graph:
    """Union of adjacencies and arrowheads: FedCDnv's integrated graph ``G0``.

    A pair is adjacent if any graph has an edge between them. At each end of an
    adjacent pair the mark is ``ARROW`` if any graph that has the edge has an
    arrowhead there, and ``CIRCLE`` otherwise: tails and circles are not
    transferred, only identified arrowheads (FedCDnv paper, Section 3.3.1 and
    Algorithm 1 line 8: "X o-o Y, X o-> Y and X -> Y give X o-> Y"). A single
    ``X -> Y`` therefore becomes ``X o-> Y``.

    Parameters
    ----------
    graphs
        Client graphs (PAGs, CPDAGs or DAGs) over possibly different variables.
    names
        Output variable order; default the union in order of first appearance.

    Returns
    -------
    Graph
        Every edge is ``o-o``, ``o->`` or ``<->``.

    Raises
    ------
    UnknownVariableError
        If a graph has a variable missing from ``names``.
    """
    out, positions = _output_names(graphs, names)
    n = len(out)
    adjacent = np.zeros((n, n), dtype=bool)
    arrow = np.zeros((n, n), dtype=bool)
    for g, pos in zip(graphs, positions, strict=True):
        m = _expand(g.marks, pos, n)
        adjacent |= m != NONE
        arrow |= m == ARROW
    marks = np.where(adjacent, np.where(arrow, ARROW, CIRCLE), NONE).astype(np.int8)
    return Graph(out, marks)


# ---------------------------------------------------------- three-way strength
@dataclass(frozen=True)
class StrengthVote:
    """Result of :func:`strength_vote`.

    Attributes
    ----------
    graph
        The directed candidate graph (possibly cyclic; project it with
        :func:`fedstruct.graphs.projection.project_to_dag`).
    strength
        ``strength[i, j]``: the aggregated support behind the chosen edge ``i -> j``
        (0 where no edge was chosen). Pass it to the DAG projection.
    forward
        ``forward[i, j]``: the aggregated support for ``i -> j`` (chosen or not),
        ``sum_k alpha_k S^(k)_ij`` over the clients observing both.
    absent
        Symmetric: the aggregated support for "no edge".
    observed
        Symmetric: total weight of the clients observing the pair.
    tied
        Symmetric boolean: pairs whose winner was drawn at random among tied options.
    """

    graph: Graph
    strength: NDArray[np.float64]
    forward: NDArray[np.float64]
    absent: NDArray[np.float64]
    observed: NDArray[np.float64]
    tied: NDArray[np.bool_]


def _check_belief(item: BeliefMatrix | tuple, k: int) -> NDArray[np.float64]:
    """Validate a client's belief matrix (square, matching names, no NaN)."""
    names, values = item
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (len(names), len(names)):
        raise GraphError(
            f"belief matrix of client {k} has shape {v.shape} but {len(names)} names; "
            "give one row and column per variable"
        )
    if np.isnan(v).any():
        i, j = (int(x) for x in np.argwhere(np.isnan(v))[0])
        raise NonFiniteDataError(
            f"belief matrix of client {k} has NaN at ({names[i]!r}, {names[j]!r}); "
            "replace it by a number"
        )
    return v


def _edge_probabilities(item: Graph | BeliefMatrix, k: int) -> NDArray[np.float64]:
    """A client's ``S^(k)``: edge probabilities from a belief matrix or a directed graph."""
    if isinstance(item, Graph):
        if not item.is_directed():
            bad = next(e for e in item.edges() if (e.mark_a, e.mark_b) != (TAIL, ARROW))
            raise GraphError(
                f"graph {k} has the non-directed edge '{bad}'; the strength vote needs "
                "directed graphs or edge-probability matrices"
            )
        return item.directed().astype(np.float64)
    s = _check_belief(item, k).copy()
    np.fill_diagonal(s, 0.0)
    tol = 1e-9
    if np.any(~np.isfinite(s)) or s.min(initial=0.0) < -tol or s.max(initial=0.0) > 1 + tol:
        raise GraphError(f"edge probabilities of graph {k} must lie in [0, 1]")
    both = s + s.T
    if both.max(initial=0.0) > 1 + tol:
        i, j = np.unravel_index(int(np.argmax(both)), both.shape)
        raise GraphError(
            f"graph {k}: P({item.names[i]}->{item.names[j]}) + P({item.names[j]}->"
            f"{item.names[i]}) exceeds 1; the two directions must leave room for 'no edge'"
        )
    return np.clip(s, 0.0, 1.0)


def strength_vote(
    sources: Sequence[Graph | BeliefMatrix | tuple[Sequence[str], ArrayLike]],
    weights: ArrayLike | None = None,
    names: Sequence[str] | None = None,
    seed: int | np.random.Generator = 0,
) -> StrengthVote:
    """The F-CMs three-way strength rule over clients with different variable sets.

    F-CMs paper, Section 4.2.1 ("graph aggregation"): client ``k`` gives a probability
    ``S^(k)_ij`` for each directed edge ``i -> j`` over its variables (a directed
    graph gives ``S^(k) = A^(k)``, its 0/1 adjacency), and
    ``S^(k)(none)_ij = 1 - S^(k)_ij - S^(k)_ji``. For each unordered pair, only the
    clients observing both nodes contribute, with weight ``alpha_k``:
    ``Sbar_ij = sum_k alpha_k S^(k)_ij`` and likewise for "none". The option among
    ``{i -> j, j -> i, none}`` with the largest support wins.

    Ties (supports equal up to a relative :data:`TIE_RTOL`) are broken uniformly at
    random: one uniform number is drawn per unordered pair (row-major over
    ``i < j``) from ``np.random.default_rng(seed)``, whatever the tie pattern, and
    picks among the tied options in the order (i->j, j->i, none). Pairs that no
    client observes (or only clients of weight 0) get no edge and no random choice.

    Parameters
    ----------
    sources
        Per client, a directed :class:`Graph` or a :class:`BeliefMatrix` (or a
        ``(names, matrix)`` pair) of edge probabilities ``values[i, j] = P(i -> j)``;
        the diagonal is ignored.
    weights
        ``alpha_k``, e.g. client sample counts; default all 1.
    names
        Output variable order; default the union in order of first appearance.
    seed
        Seed (or generator) for the tie-breaking draws.

    Returns
    -------
    StrengthVote
        The (possibly cyclic) directed graph and the per-edge strength matrix.

    Raises
    ------
    GraphError
        If a graph has a non-directed edge or a probability matrix is invalid.
    ConfigError
        If the weights are invalid.
    UnknownVariableError
        If a client has a variable missing from ``names``.
    """
    sources = [
        s if isinstance(s, Graph) else BeliefMatrix(tuple(s[0]), _check_belief(s, k))
        for k, s in enumerate(sources)
    ]
    w = _weights(weights, len(sources))
    out, positions = _output_names(sources, names)
    n = len(out)
    forward = np.zeros((n, n))
    absent = np.zeros((n, n))
    observed = np.zeros((n, n))
    for k, (item, pos, wk) in enumerate(zip(sources, positions, w, strict=True)):
        s, obs = vote_terms(item, pos, n, k)
        forward += wk * s
        absent += wk * obs * (1.0 - s - s.T)
        observed += wk * obs
    return vote_from_sums(out, forward, absent, observed, seed)


def vote_terms(
    item: Graph | BeliefMatrix, pos: NDArray[np.intp], n: int, k: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """One client's ``S^(k)`` and observed pairs in the ``n x n`` output frame (its
    variables at ``pos``): :func:`strength_vote` adds ``alpha_k S``, ``alpha_k obs (1 -
    S - S^T)`` and ``alpha_k obs``, which a client can also send for a secure sum."""
    return _expand(_edge_probabilities(item, k), pos, n, np.float64), _observed(pos, n)


def vote_from_sums(
    out: Sequence[str],
    forward: NDArray[np.float64],
    absent: NDArray[np.float64],
    observed: NDArray[np.float64],
    seed: int | np.random.Generator = 0,
) -> StrengthVote:
    """:func:`strength_vote`'s decision from the three weighted sums over the clients
    (``forward``, ``absent``, ``observed`` as :class:`StrengthVote` describes them)."""
    out = tuple(out)
    n = len(out)
    forward = np.asarray(forward, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    absent = np.where(observed > 0, np.maximum(np.asarray(absent, dtype=np.float64), 0.0), 0.0)

    rows, cols = np.triu_indices(n, 1)
    options = np.stack([forward[rows, cols], forward[cols, rows], absent[rows, cols]])
    best = options.max(axis=0)
    top = _is_tie(options, best[None])
    n_top = top.sum(axis=0)
    rng = np.random.default_rng(seed)
    u = rng.random(rows.size)
    # Index, among the tied options, of the one drawn for each pair.
    pick = np.minimum((u * n_top).astype(int), n_top - 1)
    rank = np.cumsum(top, axis=0) - 1
    choice = np.argmax(top & (rank == pick[None]), axis=0)
    seen = observed[rows, cols] > 0
    choice = np.where(seen, choice, 2)

    chosen = np.zeros((n, n), dtype=bool)
    fwd = choice == 0
    bwd = choice == 1
    chosen[rows[fwd], cols[fwd]] = True
    chosen[cols[bwd], rows[bwd]] = True
    tied = np.zeros((n, n), dtype=bool)
    tied[rows, cols] = seen & (n_top > 1)
    tied |= tied.T
    graph = Graph.from_dag_matrix(out, chosen)
    strength = np.where(chosen, forward, 0.0)
    return StrengthVote(graph, strength, forward, absent, observed, tied)
