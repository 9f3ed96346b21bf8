"""Compare a predicted graph with the true one: SHD, precision / recall / F1, FDR.

Both graphs must have the same variable *set*; the prediction is aligned to the
truth's order by name. Every score is defined for every input (no NaN), with the
0/0 conventions below; docs/graphs.md gives worked examples.

Precision / recall convention (all scores here)
    ``precision = correct / predicted`` and ``recall = correct / true``. When a
    denominator is 0: the score is 1 if *both* counts are 0 (an empty answer to an
    empty question is perfect), else 0. ``F1 = 2 P R / (P + R)``, and 0 when
    ``P + R = 0``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph, reachable

__all__ = [
    "EDGE_TYPES",
    "ORIENTATION_CONVENTIONS",
    "RelationFDR",
    "Scores",
    "align",
    "ancestral_pairs",
    "edge_scores",
    "edge_site_votes",
    "edge_type_counts",
    "fdr",
    "graph_metrics",
    "orientation_scores",
    "pair_disagreement",
    "relation_fdr",
    "shd",
    "site_agreement",
]

ORIENTATION_CONVENTIONS: tuple[str, ...] = ("edge", "arrowhead", "tail")


@dataclass(frozen=True)
class Scores:
    """Precision, recall and F1 with the counts behind them.

    Attributes
    ----------
    n_true, n_pred, n_correct
        Items in the truth, in the prediction, and in both.
    """

    n_true: int
    n_pred: int
    n_correct: int

    @property
    def precision(self) -> float:
        """``n_correct / n_pred``; 1 if nothing is predicted and nothing is true, else 0."""
        return _ratio(self.n_correct, self.n_pred, self.n_true)

    @property
    def recall(self) -> float:
        """``n_correct / n_true``; 1 if nothing is true and nothing is predicted, else 0."""
        return _ratio(self.n_correct, self.n_true, self.n_pred)

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall; 0 when both are 0."""
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    def as_dict(self, suffix: str) -> dict[str, float]:
        """``{"precision_<suffix>": ..., "recall_<suffix>": ..., "f1_<suffix>": ...}``."""
        return {
            f"precision_{suffix}": self.precision,
            f"recall_{suffix}": self.recall,
            f"f1_{suffix}": self.f1,
        }


def _ratio(num: int, den: int, other: int) -> float:
    if den > 0:
        return num / den
    return 1.0 if other == 0 else 0.0


# -------------------------------------------------------------------- alignment
def align(truth: Graph, pred: Graph) -> tuple[Graph, Graph]:
    """Return ``(truth, pred)`` with ``pred`` reordered to ``truth.names``.

    Raises
    ------
    UnknownVariableError
        If the two graphs do not have the same variable set; the message lists the
        variables found in only one of them.
    """
    if truth.names == pred.names:
        return truth, pred
    t, p = set(truth.names), set(pred.names)
    if t != p:
        only_t = sorted(t - p)
        only_p = sorted(p - t)
        raise UnknownVariableError(
            f"true and predicted graphs have different variables (only in truth: {only_t}, "
            f"only in prediction: {only_p}); restrict both to the same variables with "
            "Graph.restrict or Graph.expand"
        )
    return truth, pred.restrict(truth.names)


def _upper(n: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    return np.triu_indices(n, 1)


# --------------------------------------------------------------------- distances
def shd(truth: Graph, pred: Graph) -> int:
    """Structural Hamming distance: the number of pairs whose edge differs.

    Each unordered pair costs 1 if its pair of endpoint marks differs between the two
    graphs: a missing edge, an extra edge, a reversed edge, or (CPDAGs, PAGs) any
    other mark difference such as ``o->`` vs ``->``. A reversed edge costs 1, not 2
    (Tsamardinos, Brown & Aliferis (2006), "The max-min hill-climbing Bayesian
    network structure learning algorithm", SHD between PDAGs: one operation per
    added, deleted or re-oriented edge).
    """
    t, p = align(truth, pred)
    a, b = t.marks, p.marks
    rows, cols = _upper(t.n_nodes)
    differs = (a[rows, cols] != b[rows, cols]) | (a[cols, rows] != b[cols, rows])
    return int(np.count_nonzero(differs))


def pair_disagreement(a: Graph, b: Graph) -> int:
    """Number of unordered pairs whose state (``i -> j``, ``j -> i``, none) differs.

    F-CMs paper, Appendix E.6 ("DiffPairs"). Both graphs must be directed (every
    edge ``->``); on directed graphs it equals :func:`shd`.

    Raises
    ------
    GraphError
        If a graph has a non-directed edge.
    """
    a.require_directed("the first graph of a pair disagreement")
    b.require_directed("the second graph of a pair disagreement")
    return shd(a, b)


# --------------------------------------------------------- precision and recall
def edge_scores(truth: Graph, pred: Graph) -> Scores:
    """Adjacency (skeleton) precision / recall / F1 over unordered pairs."""
    t, p = align(truth, pred)
    rows, cols = _upper(t.n_nodes)
    at = t.adjacency()[rows, cols]
    ap = p.adjacency()[rows, cols]
    return Scores(int(at.sum()), int(ap.sum()), int((at & ap).sum()))


def orientation_scores(
    truth: Graph, pred: Graph, convention: Literal["edge", "arrowhead", "tail"] = "edge"
) -> Scores:
    """Orientation precision / recall / F1 (FedCDnv paper, Section 4.1 "Metrics").

    Conventions (docs/graphs.md has worked examples):

    ``"edge"``
        Items are *oriented edges*: edges with at least one arrowhead
        (``->``, ``o->``, ``<->``; not ``o-o`` nor an undirected ``---``). A
        predicted oriented edge is correct iff the true graph has the same pair with
        exactly the same two marks.
    ``"arrowhead"``
        Items are arrowheads: each ``(pair, end)`` with an ``ARROW`` mark. A
        predicted arrowhead is correct iff the true graph has an arrowhead at the
        same end of the same pair.
    ``"tail"``
        As ``"arrowhead"`` with ``TAIL`` marks (definite "is an ancestor" ends).

    Predicted items on pairs that are not adjacent in the truth count as wrong.

    Raises
    ------
    ConfigError
        If ``convention`` is unknown.
    """
    if convention not in ORIENTATION_CONVENTIONS:
        raise ConfigError(
            f"unknown orientation convention {convention!r}; valid conventions: "
            + ", ".join(ORIENTATION_CONVENTIONS)
        )
    t, p = align(truth, pred)
    a, b = t.marks, p.marks
    if convention in ("arrowhead", "tail"):
        code = ARROW if convention == "arrowhead" else TAIL
        mt, mp = a == code, b == code
        return Scores(int(mt.sum()), int(mp.sum()), int((mt & mp).sum()))
    rows, cols = _upper(t.n_nodes)
    ot = (a[rows, cols] == ARROW) | (a[cols, rows] == ARROW)
    op = (b[rows, cols] == ARROW) | (b[cols, rows] == ARROW)
    same = (a[rows, cols] == b[rows, cols]) & (a[cols, rows] == b[cols, rows])
    return Scores(int(ot.sum()), int(op.sum()), int((ot & op & same).sum()))


# ------------------------------------------------------------------------- FDR
def fdr(predicted: Iterable[Hashable], true: Iterable[Hashable]) -> float:
    """False discovery rate ``|pred \\ true| / |pred|``; 0 when nothing is predicted."""
    pred = set(predicted)
    if not pred:
        return 0.0
    return len(pred - set(true)) / len(pred)


@dataclass(frozen=True)
class RelationFDR:
    """FDR of predicted causal (adjacent) and non-causal (non-adjacent) pairs.

    Attributes
    ----------
    fdr_causal
        Share of the predicted adjacent pairs that are not adjacent in the truth.
    fdr_noncausal
        Share of the predicted non-adjacent pairs that are adjacent in the truth.
    n_causal, n_noncausal
        Number of predicted adjacent / non-adjacent pairs evaluated.
    """

    fdr_causal: float
    fdr_noncausal: float
    n_causal: int
    n_noncausal: int

    def as_dict(self, suffix: str = "") -> dict[str, float]:
        """``{"fdr_causal<suffix>": ..., "fdr_noncausal<suffix>": ...}``."""
        return {
            f"fdr_causal{suffix}": self.fdr_causal,
            f"fdr_noncausal{suffix}": self.fdr_noncausal,
        }


def relation_fdr(
    truth: Graph, pred: Graph, pairs: Iterable[tuple[str, str]] | None = None
) -> RelationFDR:
    """FDR of causal and non-causal relations (FedCDnv paper, Section 4.3, Table 2).

    In FedCDnv a *causal relationship* between ``X`` and ``Y`` means that they are
    adjacent (its status matrix, Section 3.3.1: ``stat = 2`` "adjacent in both G and
    M", ``-2`` "not adjacent in either"); a non-causal one means non-adjacent.
    FDR-C / FDR-nC evaluate all pairs of the returned graph FedG; FDR-dC / FDR-dnC
    only the pairs FedCDnv declares definite: pass those as ``pairs``.

    Parameters
    ----------
    truth, pred
        True and predicted graphs over the same variables.
    pairs
        Unordered pairs ``(a, b)`` to evaluate; default every pair.

    Raises
    ------
    UnknownVariableError
        If the variable sets differ or a pair names an unknown variable.
    """
    t, p = align(truth, pred)
    at, ap = t.adjacency(), p.adjacency()
    if pairs is None:
        rows, cols = _upper(t.n_nodes)
    else:
        idx = [(t.index(x), t.index(y)) for x, y in pairs]
        if any(i == j for i, j in idx):
            raise UnknownVariableError("a pair names the same variable twice; give two variables")
        unique = sorted({(min(i, j), max(i, j)) for i, j in idx})
        rows = np.array([i for i, _ in unique], dtype=np.intp)
        cols = np.array([j for _, j in unique], dtype=np.intp)
    true_adj = at[rows, cols]
    pred_adj = ap[rows, cols]
    n_c = int(pred_adj.sum())
    n_nc = int((~pred_adj).sum())
    fdr_c = float((pred_adj & ~true_adj).sum() / n_c) if n_c else 0.0
    fdr_nc = float((~pred_adj & true_adj).sum() / n_nc) if n_nc else 0.0
    return RelationFDR(fdr_c, fdr_nc, n_c, n_nc)


def ancestral_pairs(graph: Graph) -> set[tuple[str, str]]:
    """Ordered pairs ``(x, y)``, ``x != y``, with a directed path ``x -> ... -> y``.

    Only ``->`` edges are followed. Use with :func:`fdr` to score predicted ancestral
    ("x causes y") relations, e.g. ``fdr(ancestral_pairs(pred), ancestral_pairs(truth))``.
    """
    adj = graph.directed()
    names = graph.names
    out: set[tuple[str, str]] = set()
    for i in range(graph.n_nodes):
        for j in np.flatnonzero(reachable(adj, [i])):
            if j != i:
                out.add((names[i], names[int(j)]))
    return out


# -------------------------------------------------------------------- summary
def graph_metrics(truth: Graph, pred: Graph) -> dict[str, float]:
    """Every graph metric as a flat ``name -> number`` dict for ``metrics.json``.

    Keys: ``shd``, ``n_edges_true``, ``n_edges_pred``, ``precision_edge``,
    ``recall_edge``, ``f1_edge``, and ``precision_/recall_/f1_`` followed by
    ``orientation`` (per-edge convention), ``arrowhead`` and ``tail``.
    """
    t, p = align(truth, pred)
    edges = edge_scores(t, p)
    out: dict[str, float] = {
        "shd": float(shd(t, p)),
        "n_edges_true": float(edges.n_true),
        "n_edges_pred": float(edges.n_pred),
    }
    out.update(edges.as_dict("edge"))
    out.update(orientation_scores(t, p, "edge").as_dict("orientation"))
    out.update(orientation_scores(t, p, "arrowhead").as_dict("arrowhead"))
    out.update(orientation_scores(t, p, "tail").as_dict("tail"))
    return out


#: Edge types by their pair of end marks (Zhang 2008's PAG edges and the DAG/CPDAG ones).
EDGE_TYPES: dict[frozenset[int], str] = {
    frozenset({TAIL, ARROW}): "directed",
    frozenset({ARROW}): "bidirected",
    frozenset({CIRCLE, ARROW}): "partially_directed",
    frozenset({CIRCLE}): "nondirected",
    frozenset({TAIL}): "undirected",
    frozenset({CIRCLE, TAIL}): "partially_undirected",
}


def edge_type_counts(graph: Graph) -> dict[str, float]:
    """How many edges of each type a graph has (what a run reports without a truth).

    ``edges`` is the total; ``directed`` (``-->``), ``bidirected`` (``<->``),
    ``partially_directed`` (``o->``), ``nondirected`` (``o-o``), ``undirected``
    (``---``) and ``partially_undirected`` (``o--``) count the edges by their marks.
    """
    marks = graph.marks
    rows, cols = _upper(len(graph.names))
    present = marks[rows, cols] != NONE
    counts = dict.fromkeys(EDGE_TYPES.values(), 0.0)
    for i, j in zip(rows[present], cols[present], strict=True):
        counts[EDGE_TYPES[frozenset({int(marks[i, j]), int(marks[j, i])})]] += 1.0
    return {"edges": float(present.sum()), **counts}


def site_agreement(graph: Graph, local: Iterable[Graph]) -> float:
    """Mean share of the sites that could see an edge of ``graph`` and have it too.

    For each adjacency of ``graph``, the sites whose local graph holds both end
    variables vote on it; the score is the mean over those adjacencies of the share
    of voting sites whose local graph is adjacent there too (1: every site that
    could see an edge found it). An adjacency no site could see is left out; with
    none left the score is 1. A stability measure for runs without a ground truth.
    """
    shares = [agree / voters for agree, voters in edge_site_votes(graph, local).values() if voters]
    return float(np.mean(shares)) if shares else 1.0


def edge_site_votes(graph: Graph, local: Iterable[Graph]) -> dict[tuple[str, str], tuple[int, int]]:
    """Each edge's site vote: ``(a, b) -> (agree, voters)``, keyed as :meth:`Graph.edges`
    writes the pair; ``voters`` are the sites whose local graph holds both ``a`` and ``b``,
    ``agree`` those of them whose local graph is adjacent there too (marks not compared).
    :func:`site_agreement` is the mean of ``agree / voters`` over the edges with voters.
    """
    local = list(local)
    votes = {}
    for edge in graph.edges():
        voters = [g for g in local if edge.a in g and edge.b in g]
        agree = sum(g.is_adjacent(edge.a, edge.b) for g in voters)
        votes[(edge.a, edge.b)] = (int(agree), len(voters))
    return votes
