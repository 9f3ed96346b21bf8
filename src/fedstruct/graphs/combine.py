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
edge_votes, vote
    Weighted (e.g. sample-size) votes on adjacencies and endpoint marks.
strength_vote
    The F-CMs three-way (i->j, j->i, none) strength rule with random tie-breaking.
average_beliefs
    FED-CD's weighted average of edge-belief matrices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from fedstruct.errors import ConfigError, GraphError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph

__all__ = [
    "BeliefMatrix",
    "EdgeVotes",
    "StrengthVote",
    "average_beliefs",
    "edge_votes",
    "strength_vote",
    "union",
    "union_names",
    "vote",
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


# ------------------------------------------------------------------------ votes
@dataclass(frozen=True)
class EdgeVotes:
    """Weighted votes per ordered pair, only from clients that observe the pair.

    All arrays are ``n x n`` over :attr:`names` with a zero diagonal.

    Attributes
    ----------
    names
        The output variables.
    observed
        Symmetric: total weight of the clients that observe both ``i`` and ``j``.
    adjacent
        Symmetric: weight of the observers whose graph has an edge ``i``–``j``.
    mark
        Shape ``(4, n, n)``: ``mark[m, i, j]`` is the weight of the observers whose
        mark at ``j`` on the pair ``i``–``j`` is ``m`` (``m = NONE`` counts the
        observers without the edge), so ``mark.sum(0) == observed``.
    directed
        ``directed[i, j]``: weight of the observers with exactly ``i -> j``.
    """

    names: tuple[str, ...]
    observed: NDArray[np.float64]
    adjacent: NDArray[np.float64]
    mark: NDArray[np.float64]
    directed: NDArray[np.float64]

    @property
    def forward(self) -> NDArray[np.float64]:
        """``[i, j]``: weight behind ``i -> j`` (same as :attr:`directed`)."""
        return self.directed

    @property
    def backward(self) -> NDArray[np.float64]:
        """``[i, j]``: weight behind ``j -> i``."""
        return self.directed.T

    @property
    def absent(self) -> NDArray[np.float64]:
        """``[i, j]``: weight of the observers with no edge between ``i`` and ``j``."""
        return self.mark[NONE]


def edge_votes(
    graphs: Sequence[Graph],
    weights: ArrayLike | None = None,
    names: Sequence[str] | None = None,
) -> EdgeVotes:
    """Tally each client's weight per pair and per endpoint mark.

    The weight of a client counts only for the pairs it observes (both variables in
    its graph), as in the sample-size-based strategies of the FedCDnv-vote and
    FCI-base baselines (FedCDnv paper, Section 4.1 and Appendix D.1) and the F-CMs
    strength matrix (F-CMs paper, Section 4.2.1).

    Parameters
    ----------
    graphs
        Client graphs over possibly different variables.
    weights
        One non-negative weight per graph (e.g. sample sizes); default all 1.
    names
        Output variable order; default the union in order of first appearance.

    Raises
    ------
    ConfigError
        If the weights do not match the graphs or are negative / not finite.
    UnknownVariableError
        If a graph has a variable missing from ``names``.
    """
    w = _weights(weights, len(graphs))
    out, positions = _output_names(graphs, names)
    n = len(out)
    observed = np.zeros((n, n))
    mark = np.zeros((4, n, n))
    directed = np.zeros((n, n))
    for g, pos, wk in zip(graphs, positions, w, strict=True):
        obs = _observed(pos, n)
        m = _expand(g.marks, pos, n)
        observed += wk * obs
        for code in (TAIL, ARROW, CIRCLE):
            mark[code] += wk * (m == code)
        mark[NONE] += wk * (obs & (m == NONE))
        directed += wk * ((m == ARROW) & (m.T == TAIL))
    adjacent = observed - mark[NONE]
    return EdgeVotes(out, observed, adjacent, mark, directed)


def vote(
    graphs: Sequence[Graph],
    weights: ArrayLike | None = None,
    threshold: float = 0.5,
    names: Sequence[str] | None = None,
    marks: Literal["majority", "arrowheads"] = "majority",
) -> Graph:
    """Weighted vote on adjacencies, then on each endpoint mark.

    A sample-size-weighted vote is the strategy of the FedCDnv-vote and FCI-base
    baselines (FedCDnv paper, Section 4.1 and Appendix D.1; the paper does not give
    their exact rule, this is ours).
    A pair ``i``–``j`` is adjacent iff ``adjacent / observed > threshold`` among the
    clients that observe it (strictly greater; pairs nobody observes stay
    non-adjacent). The mark at each end of an adjacent pair is then decided among
    the voters that *have* the edge:

    - ``marks="majority"``: the mark (tail, arrow or circle) with the largest
      weight at that end; a tie between the top marks gives ``CIRCLE``
      ("undetermined"). Each end is voted separately, so with DAG inputs an equal
      split between ``i -> j`` and ``j -> i`` gives ``i o-o j``.
    - ``marks="arrowheads"``: ``ARROW`` if any voter with positive weight has an
      arrowhead there, otherwise ``CIRCLE`` — FedCDnv's rule of transferring only
      identified arrowheads (FedCDnv paper, Section 3.3.1).

    Parameters
    ----------
    graphs
        Client graphs over possibly different variables.
    weights
        One non-negative weight per graph (e.g. sample sizes); default all 1. A
        client with weight 0 has no say.
    threshold
        Share of the observing weight that must report the adjacency, in ``[0, 1)``.
    names
        Output variable order; default the union in order of first appearance.
    marks
        How endpoint marks are chosen (see above).

    Raises
    ------
    ConfigError
        If ``threshold`` is outside ``[0, 1)``, ``marks`` is unknown, or the weights
        are invalid.
    UnknownVariableError
        If a graph has a variable missing from ``names``.
    """
    if not 0.0 <= threshold < 1.0:
        raise ConfigError(f"vote threshold is {threshold}; use a share in [0, 1), e.g. 0.5")
    if marks not in ("majority", "arrowheads"):
        raise ConfigError(f"unknown mark rule {marks!r}; valid mark rules: arrowheads, majority")
    votes = edge_votes(graphs, weights, names)
    share = np.divide(
        votes.adjacent,
        votes.observed,
        out=np.zeros_like(votes.adjacent),
        where=votes.observed > 0,
    )
    adjacent = (votes.observed > 0) & (share > threshold)
    if marks == "arrowheads":
        chosen = np.where(votes.mark[ARROW] > 0, ARROW, CIRCLE)
    else:
        chosen = _majority_mark(votes.mark)
    out = np.where(adjacent, chosen, NONE).astype(np.int8)
    return Graph(votes.names, out)


def _majority_mark(mark: NDArray[np.float64]) -> NDArray[np.int8]:
    """Per end, the non-NONE mark of largest weight; ties between the top marks -> CIRCLE."""
    codes = np.array([TAIL, ARROW, CIRCLE])
    stacked = mark[codes]
    best = stacked.max(axis=0)
    top = _is_tie(stacked, best[None])
    winner = codes[np.argmax(top, axis=0)]
    return np.where(top.sum(axis=0) > 1, CIRCLE, winner).astype(np.int8)


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
        s = _expand(_edge_probabilities(item, k), pos, n, np.float64)
        obs = _observed(pos, n)
        forward += wk * s
        absent += wk * obs * (1.0 - s - s.T)
        observed += wk * obs
    absent = np.where(observed > 0, np.maximum(absent, 0.0), 0.0)

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


# ------------------------------------------------------------ belief averaging
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


def average_beliefs(
    beliefs: Sequence[BeliefMatrix | tuple[Sequence[str], ArrayLike]],
    weights: Sequence[float | ArrayLike] | None = None,
    names: Sequence[str] | None = None,
    fill: float = 0.0,
) -> BeliefMatrix:
    """Weighted average of per-client belief matrices over different variable sets.

    FED-CD's voting aggregation (FED-CD paper, Section 5.1):
    ``sigma_ij = sum_k w_k sigma_k,ij`` with weights renormalised *per entry* over
    the clients that observe both ``i`` and ``j`` (entry ``(i, i)`` over the clients
    observing ``i``). Entries no client observes — or only clients whose weight
    there is 0 — get ``fill``. Values may be probabilities or logits; ``+-inf`` is
    allowed (e.g. ENCO's ``gamma`` diagonal) and a zero weight never multiplies it.

    Parameters
    ----------
    beliefs
        Per client, ``(names, matrix)`` with ``matrix[i, j]`` the value for ``i -> j``.
    weights
        Per client either a non-negative scalar (e.g. the data share) or a
        non-negative matrix over that client's names (per-entry weights, e.g.
        FED-CD's proximity weights, Section 5.2). Default: all 1.
    names
        Output variable order; default the union in order of first appearance.
    fill
        Value of entries that no client observes.

    Returns
    -------
    BeliefMatrix
        The averaged matrix over the output names.

    Raises
    ------
    GraphError
        If a matrix does not match its names.
    NonFiniteDataError
        If a matrix holds NaN.
    ConfigError
        If a weight is negative, not finite or of the wrong shape.
    UnknownVariableError
        If a client has a variable missing from ``names``.
    """
    items = [BeliefMatrix(tuple(b[0]), _check_belief(b, k)) for k, b in enumerate(beliefs)]
    if weights is not None and len(weights) != len(items):
        raise ConfigError(
            f"got {len(weights)} weights for {len(items)} clients; give one weight per client"
        )
    out, positions = _output_names(items, names)
    n = len(out)
    total_w = np.zeros((n, n))
    total = np.zeros((n, n))
    for k, (item, pos) in enumerate(zip(items, positions, strict=True)):
        nk = len(item.names)
        wk = np.ones((nk, nk)) if weights is None else np.asarray(weights[k], dtype=np.float64)
        if wk.ndim == 0:
            wk = np.full((nk, nk), float(wk))
        if wk.shape != (nk, nk):
            raise ConfigError(
                f"weight of client {k} has shape {wk.shape}; give a scalar or a {nk}x{nk} matrix"
            )
        if np.any(~np.isfinite(wk) | (wk < 0)):
            raise ConfigError(f"weights of client {k} must be finite and >= 0")
        contrib = np.zeros((nk, nk))
        np.multiply(wk, item.values, out=contrib, where=wk > 0)
        total[np.ix_(pos, pos)] += contrib
        total_w[np.ix_(pos, pos)] += wk
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = np.where(total_w > 0, total / np.where(total_w > 0, total_w, 1.0), fill)
    return BeliefMatrix(out, avg)
