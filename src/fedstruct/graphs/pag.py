"""From a DAG with latent variables to its MAG and to the PAG of the MAG's class.

No selection bias is assumed, so MAGs have ``->`` and ``<->`` edges only.

- :func:`dag_to_mag`: Richardson & Spirtes (2002), "Ancestral graph Markov models",
  Ann. Statist. 30(4), Section 4.2: over the observed variables ``O``, ``x`` and
  ``y`` are adjacent iff there is an inducing path between them relative to the
  latent variables, which holds iff they are d-connected given
  ``(An({x, y}) ∩ O) \\ {x, y}`` (their Sections 3.7 and 4.2; Spirtes,
  Glymour & Scheines 2000, Chapter 6); ``x -> y`` if ``x`` is an ancestor of ``y``
  in the DAG, ``x <-> y`` if neither is an ancestor of the other.
- :func:`mag_to_pag`: the output of FCI with a perfect oracle (Zhang 2008, AIJ 172):
  the skeleton with circle marks, R0 and R4 decided by the separating set
  ``An_MAG({x, y}) \\ {x, y}`` of every non-adjacent pair (Richardson & Spirtes 2002,
  Section 3.7; Zhang 2008, Section 2), then rules R1-R4 and R8-R10
  (:mod:`fedstruct.graphs.orientation`).
- :func:`pag_to_mag`: back from a PAG to one MAG of its class (Zhang 2008, AIJ 172,
  Theorem 2), and :func:`dag_member`, a DAG for models that need one.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, GraphError, UnknownVariableError, unknown_choice_message
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph, find_cycle
from fedstruct.graphs.orientation import apply_rules, orient_colliders
from fedstruct.graphs.projection import project_to_dag
from fedstruct.graphs.separation import SeparationOracle, ancestor_matrix

__all__ = [
    "BIDIRECTED_RULES",
    "dag_member",
    "dag_to_mag",
    "dag_to_pag",
    "is_ancestral",
    "is_maximal",
    "mag_to_pag",
    "pag_to_mag",
    "require_mag",
]

#: What :func:`dag_member` does with a bidirected edge ``x <-> y`` (a latent common
#: cause, neither an ancestor of the other): ``drop`` it, or ``orient`` it along one
#: topological order of the rest (keeps the dependence, invents a direction).
BIDIRECTED_RULES = ("drop", "orient")


def _mixed_only(graph: Graph) -> tuple[int, int] | None:
    """First pair whose edge is not ``->`` or ``<->``, or ``None``."""
    m = graph.marks
    bad = (m == CIRCLE) | ((m == TAIL) & (m.T == TAIL))
    if bad.any():
        i, j = sorted(int(v) for v in np.argwhere(bad)[0])
        return i, j
    return None


def _ancestral_violation(graph: Graph) -> str | None:
    """Why ``graph`` is not ancestral (without selection bias), or ``None`` if it is.

    Richardson & Spirtes (2002), Section 3.1: no directed cycle and no almost
    directed cycle (``x <-> y`` with ``x`` an ancestor of ``y``); undirected and circle
    edges are not allowed here.
    """
    bad = _mixed_only(graph)
    if bad is not None:
        edge = graph.edge(graph.names[bad[0]], graph.names[bad[1]])
        return f"has the edge '{edge}'; only '-->' and '<->' edges are allowed"
    cycle = find_cycle(graph.directed())
    if cycle is not None:
        path = " -> ".join(graph.names[i] for i in [*cycle, cycle[0]])
        return f"has the directed cycle {path}"
    anc = ancestor_matrix(graph)
    almost = graph.bidirected() & anc
    if almost.any():
        i, j = (graph.names[int(v)] for v in np.argwhere(almost)[0])
        return f"has {i} <-> {j} although {i} is an ancestor of {j} (an almost directed cycle)"
    return None


def is_ancestral(graph: Graph) -> bool:
    """Whether ``graph`` is an ancestral graph with ``->`` and ``<->`` edges only.

    Richardson & Spirtes (2002), Section 3.1 (no directed or almost directed
    cycle; no undirected edges since there is no selection bias).
    """
    return _ancestral_violation(graph) is None


def _maximality_violation(graph: Graph) -> tuple[str, str] | None:
    """A non-adjacent pair not m-separated by ``An({x, y}) \\ {x, y}``, or ``None``."""
    anc = ancestor_matrix(graph)
    oracle = SeparationOracle(graph)
    adj = graph.adjacency()
    n = graph.n_nodes
    for i in range(n):
        for j in range(i + 1, n):
            if adj[i, j]:
                continue
            z = np.flatnonzero(anc[:, i] | anc[:, j])
            z = z[(z != i) & (z != j)].tolist()
            if not oracle.separated(i, j, z):
                return graph.names[i], graph.names[j]
    return None


def is_maximal(graph: Graph) -> bool:
    """Whether an ancestral graph is maximal: every non-adjacent pair is m-separable.

    Richardson & Spirtes (2002), Section 3.7: in an ancestral
    graph, a non-adjacent pair is m-separated by some set iff it is m-separated by
    ``An({x, y}) \\ {x, y}``, so one query per pair decides.

    Raises
    ------
    GraphError
        If ``graph`` is not ancestral (the criterion needs it).
    """
    why = _ancestral_violation(graph)
    if why is not None:
        raise GraphError(f"maximality is checked for ancestral graphs only, but the graph {why}")
    return _maximality_violation(graph) is None


def require_mag(graph: Graph, what: str = "graph") -> Graph:
    """Return ``graph`` if it is a maximal ancestral graph, else raise a clear error.

    Raises
    ------
    GraphError
        Naming the offending edge or pair.
    """
    why = _ancestral_violation(graph)
    if why is not None:
        raise GraphError(f"{what} must be a MAG but {why}")
    pair = _maximality_violation(graph)
    if pair is not None:
        raise GraphError(
            f"{what} must be a MAG but is not maximal: {pair[0]} and {pair[1]} are not "
            "adjacent yet no set m-separates them; add an edge between them"
        )
    return graph


def _observed_names(dag: Graph, latent: Iterable[str]) -> tuple[list[str], list[int]]:
    hidden = [latent] if isinstance(latent, str) else list(latent)
    for name in hidden:
        if name not in dag:
            raise UnknownVariableError(
                f"latent variable {name!r} is not in the DAG; its variables are {list(dag.names)}"
            )
    hidden_set = set(hidden)
    observed = [n for n in dag.names if n not in hidden_set]
    return observed, dag.indices(observed)


def dag_to_mag(dag: Graph, latent: Iterable[str]) -> Graph:
    """The MAG over the observed variables of a DAG with latent variables.

    Richardson & Spirtes (2002), Section 4.2, without selection variables: ``x`` and
    ``y`` are adjacent iff they are d-connected in the DAG given
    ``(An({x, y}) ∩ O) \\ {x, y}`` (equivalently, there is an inducing path relative
    to the latents), one query per pair; the edge is ``x -> y`` if ``x`` is an
    ancestor of ``y``, ``y -> x`` if ``y`` is one of ``x``, else ``x <-> y``.

    Parameters
    ----------
    dag
        A DAG over observed and latent variables.
    latent
        Names of the latent variables (a name or an iterable of names).

    Returns
    -------
    Graph
        The MAG over the other variables, in the DAG's order.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    UnknownVariableError
        If a latent name is not in the DAG.
    """
    dag.require_dag("graph given to dag_to_mag")
    observed, obs = _observed_names(dag, latent)
    anc = ancestor_matrix(dag)
    oracle = SeparationOracle(dag)
    obs_arr = np.asarray(obs, dtype=np.intp)
    anc_obs = anc[np.ix_(obs_arr, obs_arr)]  # [u, v]: observed u is an ancestor of observed v
    k = len(obs)
    marks = np.zeros((k, k), dtype=np.int8)
    for a in range(k):
        for b in range(a + 1, k):
            z_local = np.flatnonzero(anc_obs[:, a] | anc_obs[:, b])
            z = obs_arr[z_local[(z_local != a) & (z_local != b)]].tolist()
            if oracle.separated(obs[a], obs[b], z):
                continue
            if anc_obs[a, b]:
                marks[a, b], marks[b, a] = ARROW, TAIL
            elif anc_obs[b, a]:
                marks[a, b], marks[b, a] = TAIL, ARROW
            else:
                marks[a, b] = marks[b, a] = ARROW
    return Graph(observed, marks)


def mag_to_pag(mag: Graph, *, validate: bool = True) -> Graph:
    """The PAG of a MAG's Markov equivalence class (what FCI outputs with a perfect oracle).

    The skeleton of ``mag`` with circle marks; R0 and R4 use
    ``sepset_contains(x, y, z) = z ∈ An_MAG({x, y})``, since ``An({x, y}) \\ {x, y}``
    m-separates every non-adjacent pair of a MAG (Richardson & Spirtes 2002, Section
    3.7); then R1-R4 and R8-R10 (Zhang 2008; :func:`~fedstruct.graphs.orientation.apply_rules`).

    Parameters
    ----------
    mag
        A maximal ancestral graph with ``->`` and ``<->`` edges.
    validate
        Check that ``mag`` is ancestral and maximal first (one m-separation query per
        non-adjacent pair); :func:`dag_to_pag` skips it since its MAG is valid by
        construction.

    Returns
    -------
    Graph
        The PAG: arrowheads and tails shared by every Markov-equivalent MAG, circles
        elsewhere.

    Raises
    ------
    GraphError
        If ``validate`` and ``mag`` is not a MAG without selection bias.
    """
    if validate:
        require_mag(mag, "graph given to mag_to_pag")
    anc = ancestor_matrix(mag)

    def sepset_contains(x: int, y: int, z: int) -> bool:
        return bool(anc[z, x] or anc[z, y])

    marks = np.where(mag.marks != NONE, CIRCLE, NONE).astype(np.int8)
    orient_colliders(marks, sepset_contains)
    apply_rules(marks, sepset_contains)
    return mag.with_marks(marks)


def dag_to_pag(dag: Graph, latent: Iterable[str] = ()) -> Graph:
    """The PAG over the observed variables of a DAG with latent variables.

    ``mag_to_pag(dag_to_mag(dag, latent))``: the ground truth FCI targets.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    UnknownVariableError
        If a latent name is not in the DAG.
    """
    return mag_to_pag(dag_to_mag(dag, latent), validate=False)


def _mcs_order(adjacent: NDArray[np.bool_]) -> list[int]:
    """A maximum cardinality search order of an undirected graph (Tarjan & Yannakakis
    1984): each step takes the unvisited vertex with most visited neighbours (ties
    by position). On a chordal graph, orienting every edge from the earlier vertex
    to the later one gives a DAG without unshielded colliders."""
    n = len(adjacent)
    weight = np.zeros(n, dtype=np.int64)
    visited = np.zeros(n, dtype=bool)
    order = []
    for _ in range(n):
        candidates = np.where(visited, -1, weight)
        v = int(np.argmax(candidates))
        order.append(v)
        visited[v] = True
        weight += adjacent[v]
    return order


def _zhang_orientation(pag: Graph) -> NDArray[np.int8]:
    """The marks of Zhang's construction (see :func:`pag_to_mag`), unchecked."""
    m = pag.marks.copy()
    partial = (m == ARROW) & (m.T == CIRCLE)  # [i, j]: i o-> j
    m[partial.T] = TAIL
    tail_circle = (m == CIRCLE) & (m.T == TAIL)  # [i, j]: i -o j
    m[tail_circle] = ARROW
    component = ((m == CIRCLE) & (m.T == CIRCLE)) | ((m == TAIL) & (m.T == TAIL))
    rank = np.empty(len(m), dtype=np.int64)
    rank[_mcs_order(component)] = np.arange(len(m))
    forward = component & (rank[:, None] < rank[None, :])
    m[forward] = ARROW
    m[forward.T] = TAIL
    return m


def pag_to_mag(pag: Graph) -> Graph:
    """One MAG of the PAG's Markov equivalence class (Zhang 2008, AIJ 172, Theorem 2).

    Zhang's construction: every partially directed edge ``x o-> y`` becomes
    ``x -> y``, and the circle component (the ``o-o`` edges; it is chordal in a PAG)
    is oriented into a DAG without unshielded colliders, here along a maximum
    cardinality search order. Also accepted: ``x -o y`` (a tail at ``x``) becomes
    ``x -> y``, and undirected ``x --- y`` edges (a CPDAG's) join the circle
    component; directed and bidirected edges are kept. A DAG comes back unchanged.

    Raises
    ------
    GraphError
        If the result is not ancestral (the graph is not a PAG: e.g. a directed
        cycle, or ``x <-> y`` with ``x`` an ancestor of ``y``).
    """
    mag = Graph(pag.names, _zhang_orientation(pag))
    problem = _ancestral_violation(mag)
    if problem is not None:
        raise GraphError(f"the graph has no MAG of its class: {problem}; give a PAG")
    return mag


def dag_member(graph: Graph, bidirected: str = "drop") -> Graph:
    """A DAG for a model that needs one, from a DAG, CPDAG, PAG or merged graph.

    Zhang's orientation (:func:`pag_to_mag`: no new unshielded colliders); a
    bidirected edge ``x <-> y`` is then dropped or oriented (:data:`BIDIRECTED_RULES`),
    the latter along one topological order of the directed edges. A graph that is
    not a valid PAG, such as one merged from several clients' PAGs (FedCDnv's FedG
    takes each mark from some client), can leave a directed cycle: each is broken
    at one edge (:func:`~fedstruct.graphs.projection.project_to_dag`, equal
    strengths: its tie-break by position decides), before the bidirected edges are
    oriented. For a valid PAG the result is a DAG of its class (bidirected edges
    aside).

    Raises
    ------
    ConfigError
        For an unknown ``bidirected`` rule.
    """
    if bidirected not in BIDIRECTED_RULES:
        raise ConfigError(unknown_choice_message("bidirected", bidirected, BIDIRECTED_RULES))
    m = _zhang_orientation(graph)
    both = (m == ARROW) & (m.T == ARROW)
    m[both] = NONE
    directed = Graph(graph.names, m)
    if not directed.is_acyclic():
        directed = project_to_dag(directed, np.ones(m.shape))
    if bidirected == "drop":
        return directed
    m = directed.marks.copy()
    rank = np.empty(len(m), dtype=np.int64)
    rank[directed.indices(directed.topological_order())] = np.arange(len(m))
    later = both & (rank[:, None] < rank[None, :])
    m[later] = ARROW
    m[later.T] = TAIL
    return Graph(graph.names, m)
