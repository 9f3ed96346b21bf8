"""Server-side aggregation of the clients' PAGs into FedG (Algorithm 3) and the baselines.

For each pair observed together by some clients, the clients that hold it adjacent
(group ``A``) and those that do not (group ``N``) are compared. Where they agree, the
pair follows them. Where they disagree:

- ``"tpss"`` (FedCDnv, §3.2): the first level asks whether the disagreement comes
  from the non-identical variable sets — Condition 3.6 for a ``<->`` edge in an
  ``A`` client (a node ``Y`` that client does not observe, seen as ``Xi <-o Y o-> Xj``
  by an ``N`` client) and Condition 3.7 for a circle edge (``o-o``, ``o->``, ``<-o``):
  every ``N`` client's separating set is contained in no ``A`` client's variables. If
  every ``A`` client's edge is explained so, the pair is not adjacent. Otherwise the
  second level computes ``val = sum_k w_tau_k * w_k`` (eq. 1) with ``w_tau_k`` the
  client's share of the observers' samples and ``w_k = ±1`` for a stable relationship,
  ``±w`` of eq. (3) for a non-stable one (+ adjacent, − not), and keeps the edge iff
  ``val > 0``.
- ``"vote"`` (FedCDnv-vote): the second level with every client weighing ±1: a
  sample-size-weighted majority.
- ``"largest"`` (FCI-base): the observer with the most samples decides.

Marks: only arrowheads are transferred (Algorithm 3, line 17): at each end of a kept
edge, an arrowhead if some client's graph has one there, a circle otherwise.

Stability (Definitions 3.4, 3.5): a client's relationship is stable if it is
definite — adjacent with ``stat = 2`` or non-adjacent with ``stat = -2`` — and its
p-value lies outside ``[alpha - theta1, alpha + theta2]``. A relationship whose
deciding test was skipped by the small-sample rule (NaN p-value) is non-stable with
``p_hat = 0``: it carries no evidence either way.

Eq. (3)'s numerator multiplies by the size of the set the text after it defines as
the clients that identify the relationship as non-stable: ``weight_count =
"non_stable"`` (default) counts those; ``"observers"`` counts every client observing
the pair (the earlier default; see docs/fedcdnv.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.graphs import ARROW, CIRCLE, NONE, TAIL, Graph, union
from fedstruct.methods.fedcdnv.pvalues import read_scaled
from fedstruct.methods.fedcdnv.theory import DEFINITE_CAUSAL

__all__ = ["STRATEGIES", "WEIGHT_COUNTS", "Aggregation", "ClientReport", "aggregate", "pair_key"]

STRATEGIES = ("tpss", "vote", "largest")
#: The count in eq. (3)'s numerator: the non-stable clients (as written) or every observer.
WEIGHT_COUNTS = ("non_stable", "observers")


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The key of an unordered pair of variable names (sorted)."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class ClientReport:
    """What the server knows of one client after the exchange.

    Attributes
    ----------
    name
        The client's name.
    pag
        Its graph over its variables (``PAG_u``, or ``PAG_0`` for FCI-base).
    n
        Its sample size.
    scaled
        Its scaled p-values (:func:`~fedstruct.methods.fedcdnv.pvalues.scale_pvalues`)
        over its variables, or ``None``.
    sepsets
        Its separating set of every non-adjacent pair (names, keyed by
        :func:`pair_key`).
    """

    name: str
    pag: Graph
    n: int
    scaled: NDArray[np.float64] | None = None
    sepsets: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def variables(self) -> frozenset[str]:
        """The client's observed variables ``O_k``."""
        return frozenset(self.pag.names)


@dataclass(frozen=True)
class Aggregation:
    """The aggregated graph and how each disagreement was decided.

    ``decisions[(a, b)]`` is ``"level 1"`` (explained by the variable sets) or the
    value ``val`` of eq. (1) for pairs decided at the second level.
    """

    graph: Graph
    decisions: dict[tuple[str, str], str | float]


def aggregate(
    reports: Sequence[ClientReport],
    names: Sequence[str],
    strategy: str = "tpss",
    *,
    stat: NDArray[np.int8] | None = None,
    weight_count: str = "non_stable",
) -> Aggregation:
    """Aggregate client graphs over ``names`` with ``strategy`` (module docstring).

    Raises
    ------
    ConfigError
        For an unknown strategy or weight count, or TPSS without a status matrix or
        scaled p-values.
    """
    if strategy not in STRATEGIES:
        raise ConfigError(unknown_choice_message("aggregation strategy", strategy, STRATEGIES))
    if weight_count not in WEIGHT_COUNTS:
        raise ConfigError(unknown_choice_message("weight count", weight_count, WEIGHT_COUNTS))
    if strategy == "tpss" and (stat is None or any(r.scaled is None for r in reports)):
        raise ConfigError("TPSS needs the status matrix and every client's scaled p-values")
    names = tuple(names)
    local = [{v: k for k, v in enumerate(r.pag.names)} for r in reports]
    adjacent = np.zeros((len(names), len(names)), dtype=bool)
    decisions: dict[tuple[str, str], str | float] = {}
    for i, j in zip(*np.triu_indices(len(names), 1), strict=True):
        a, b = names[i], names[j]
        observers = [k for k, pos in enumerate(local) if a in pos and b in pos]
        if not observers:
            continue
        says = {k: reports[k].pag.is_adjacent(a, b) for k in observers}
        if all(says.values()) or not any(says.values()):
            adjacent[i, j] = all(says.values())
            continue
        if strategy == "largest":
            best = max(observers, key=lambda k: (reports[k].n, -k))
            adjacent[i, j] = says[best]
            continue
        if strategy == "tpss" and _level_one(reports, observers, says, a, b):
            decisions[(a, b)] = "level 1"
            continue
        val = _level_two(
            reports,
            local,
            observers,
            says,
            a,
            b,
            stat[i, j] if stat is not None else 0,
            strategy,
            weight_count,
        )
        decisions[(a, b)] = val
        adjacent[i, j] = val > 0
    adjacent |= adjacent.T
    merged = union([r.pag for r in reports], names)
    marks = np.where(adjacent, merged.marks, NONE).astype(np.int8)
    return Aggregation(Graph(names, marks), decisions)


def _level_one(
    reports: Sequence[ClientReport],
    observers: list[int],
    says: dict[int, bool],
    a: str,
    b: str,
) -> bool:
    """Conditions 3.6 / 3.7: is every adjacent client's edge explained by a variable it
    does not observe?"""
    adj = [k for k in observers if says[k]]
    non = [k for k in observers if not says[k]]
    # Condition 3.7 (global over the pair): no adjacent client observes all of any
    # non-adjacent client's separating set; an empty set is observed by everyone.
    key = pair_key(a, b)
    cond37 = all(
        not set(reports[n].sepsets.get(key, ())) <= reports[k].variables for n in non for k in adj
    )
    for k in adj:
        edge = reports[k].pag.edge(a, b)
        assert edge is not None
        marks = (edge.mark_a, edge.mark_b)
        if marks == (ARROW, ARROW):
            if not any(_confounds(reports[n].pag, a, b, reports[k].variables) for n in non):
                return False
        elif CIRCLE in marks and TAIL not in marks:  # o-o, o->, <-o
            if not cond37:
                return False
        else:
            return False
    return True


def _confounds(pag: Graph, a: str, b: str, seen_by_other: frozenset[str]) -> bool:
    """Condition 3.6: ``a <-o Y o-> b`` in ``pag`` with ``Y`` outside ``seen_by_other``."""
    ia, ib = pag.index(a), pag.index(b)
    m = pag.marks
    for y in range(pag.n_nodes):
        if pag.names[y] in seen_by_other or y in (ia, ib):
            continue
        if m[y, ia] == ARROW and m[ia, y] == CIRCLE and m[y, ib] == ARROW and m[ib, y] == CIRCLE:
            return True
    return False


def _level_two(
    reports: Sequence[ClientReport],
    local: list[dict[str, int]],
    observers: list[int],
    says: dict[int, bool],
    a: str,
    b: str,
    stat_ab: int,
    strategy: str,
    weight_count: str,
) -> float:
    """``val`` of eq. (1): sample-share-weighted, signed importance of each observer."""
    total = sum(reports[k].n for k in observers)
    signs = {k: 1.0 if says[k] else -1.0 for k in observers}
    if strategy == "vote":
        return float(sum(reports[k].n / total * signs[k] for k in observers))
    stable: dict[int, bool] = {}
    p_hat: dict[int, float] = {}
    for k in observers:
        scaled = reports[k].scaled
        assert scaled is not None
        inside, value = read_scaled(scaled[local[k][a], local[k][b]])
        # Category II (§3.1): an overlapping pair's relationships start definite and
        # Lemmas 3.2-3.3 demote causal ones only, so a client's non-adjacency is
        # definite and its adjacency is definite iff stat = 2.
        definite = stat_ab == DEFINITE_CAUSAL if says[k] else True
        if np.isnan(value):  # the deciding test was skipped (small-sample rule)
            stable[k], p_hat[k] = False, 0.0
            continue
        stable[k] = bool(definite and not inside)
        p_hat[k] = float(value)
    non_stable = [k for k in observers if not stable[k]]
    denom = sum(p_hat[k] for k in non_stable) + sum(stable.values())
    count = len(observers) if weight_count == "observers" else len(non_stable)
    val = 0.0
    for k in observers:
        w = 1.0 if stable[k] else (p_hat[k] * count / denom if denom > 0 else 0.0)
        val += reports[k].n / total * signs[k] * w
    return val
