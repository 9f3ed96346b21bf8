"""Perturbed graphs: what a faulty or adversarial client may send instead of its own.

:func:`perturb_graph` makes ``round(rate · edges)`` modifications (at least one when
``rate > 0`` and the graph has an edge), each on a pair not modified before, of a
kind drawn uniformly: **reverse** an edge whose two marks differ (swap them: ``a -> b``
becomes ``b -> a``, ``a o-> b`` becomes ``a <-o b``), **remove** an edge, or **add**
one between a non-adjacent pair in the graph's own style (``o-o`` in a graph with
circle marks, ``---`` in an undirected graph, a random direction otherwise). A kind
with no candidate pair left is drawn again. Any graph kind is accepted (DAG, PAG,
undirected), so every aggregator of the library meets the same adversary; unlike
F-CMs' App. E.6 perturbation of a DAG
(:func:`~fedstruct.methods.fcm.sources.perturb_dag`) the result need not be
acyclic: a client that lies need not send a DAG.
"""

from __future__ import annotations

import numpy as np

from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph

__all__ = ["perturb_graph"]


def perturb_graph(graph: Graph, rate: float, rng: np.random.Generator) -> Graph:
    """``graph`` with ``round(rate · edges)`` edges reversed, removed or added
    (module docstring).

    Raises
    ------
    ConfigError
        If ``rate`` is outside ``[0, 1]``.
    """
    if not 0 <= rate <= 1:
        raise ConfigError(f"perturbation rate must lie in [0, 1], got {rate}")
    m = graph.marks.copy()
    n_edges = graph.n_edges
    wanted = max(1, round(rate * n_edges)) if rate > 0 and n_edges else 0
    touched = np.eye(len(m), dtype=bool)
    style = _added_marks(m)
    for _ in range(wanted):
        candidates = _candidates(m, touched)
        kinds = [k for k, pairs in candidates.items() if len(pairs)]
        if not kinds:
            break
        kind = kinds[int(rng.integers(len(kinds)))]
        i, j = (int(v) for v in candidates[kind][rng.integers(len(candidates[kind]))])
        if kind == "reverse":
            m[i, j], m[j, i] = m[j, i], m[i, j]
        elif kind == "remove":
            m[i, j] = m[j, i] = NONE
        else:
            a, b = style
            if a != b and rng.integers(2):
                i, j = j, i
            m[i, j], m[j, i] = a, b
        touched[i, j] = touched[j, i] = True
    return Graph(graph.names, m)


def _candidates(m: np.ndarray, touched: np.ndarray) -> dict[str, np.ndarray]:
    """Pairs ``(i, j)``, ``i < j``, open to each kind of modification."""
    free = np.triu(~touched, 1)
    adjacent = m != NONE
    return {
        "reverse": np.argwhere(free & adjacent & (m != m.T)),
        "remove": np.argwhere(free & adjacent),
        "add": np.argwhere(free & ~adjacent),
    }


def _added_marks(m: np.ndarray) -> tuple[int, int]:
    """The marks ``(at j, at i)`` of an added edge ``i ? j`` in the graph's style."""
    if (m == CIRCLE).any():
        return CIRCLE, CIRCLE
    edges = m != NONE
    if edges.any() and (m[edges] == TAIL).all():
        return TAIL, TAIL
    return ARROW, TAIL
