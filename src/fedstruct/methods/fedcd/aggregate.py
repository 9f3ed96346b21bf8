"""FED-CD's belief aggregation: data-share voting and proximity to interventions.

papers/fedcd-interventional-causal-discovery.txt:

* §5.1 voting: ``σ̃_ij = Σ_k w_k σ_k,ij`` with ``w_k = |D_k| / |D|``.
* §5.2 proximity (Algorithm 1): client ``k``'s reliability for the edge ``X_i → X_j``
  of the current aggregated graph is ``r_k,ij = m_k α^(S-1)``, ``S`` the number of
  steps from ``k``'s nearest intervened variable to the edge along directed edges
  (``S = 1`` for an edge leaving an intervened variable); eq. (1) turns reliabilities
  into weights with a softmax of temperature ``β`` over the clients, and eq. (2)
  averages the beliefs with them.

Choices (docs/fedcd.md): ``distance`` says which edges an intervention reaches
(``"outgoing"``: along the arrows, only edges leaving a reached node, as the authors'
code; ``"undirected"``: every edge touching a reached node, either direction, §5.2's
"edges immediately connected to the intervened variable"); a pair ``{i, j}`` gets
one reliability, that of whichever direction the reference graph holds, so θ stays
antisymmetric; pairs that are not edges of the reference graph, and clients whose
interventions cannot reach the edge, get the floor ``min_mass`` (as in the reference
code, so voting is the special case ``α = 1``, equal masses); beliefs are averaged
as probabilities (eq. 2) or as logits (the reference code), ``belief_space``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError
from fedstruct.methods.fedcd.learner import NO_SELF_LOOP, Beliefs

__all__ = [
    "BELIEF_SPACES",
    "DISTANCES",
    "WEIGHTINGS",
    "aggregate_beliefs",
    "averaged_values",
    "beliefs_from_average",
    "distances_from",
    "edge_entropy",
    "edge_entropy_of_shares",
    "proximity_factor",
    "proximity_scores",
    "proximity_weights",
    "vote_weights",
]

BELIEF_SPACES = ("probability", "logit")
DISTANCES = ("outgoing", "undirected")
WEIGHTINGS = ("softmax", "normalize")
_CLIP = 1e-6


def vote_weights(n_rows: Sequence[float]) -> NDArray[np.float64]:
    """§5.1: each client's share of the data, ``|D_k| / |D|``."""
    n = np.asarray(n_rows, dtype=np.float64)
    if n.ndim != 1 or n.size == 0 or (n <= 0).any():
        raise ConfigError(f"vote weights need positive row counts, got {n.tolist()}")
    return n / n.sum()


def distances_from(adjacency: NDArray[np.bool_], sources: Sequence[int]) -> NDArray[np.float64]:
    """Directed steps from the nearest source to every node (``inf`` if unreachable)."""
    d = adjacency.shape[0]
    dist = np.full(d, np.inf)
    queue = deque(int(s) for s in sources)
    for s in queue:
        dist[s] = 0.0
    while queue:
        u = queue.popleft()
        for v in np.flatnonzero(adjacency[u]):
            if dist[v] == np.inf:
                dist[v] = dist[u] + 1.0
                queue.append(int(v))
    return dist


def _edge_steps(
    adjacency: NDArray[np.bool_], sources: Sequence[int], distance: str
) -> NDArray[np.float64]:
    """``S - 1`` for every edge ``src -> dst`` of ``adjacency`` (in ``np.nonzero`` order).

    ``"outgoing"``: the directed steps from the nearest source to ``src`` (an edge into
    an intervened variable is not reached from it); ``"undirected"``: the steps on the
    skeleton to the edge's nearer end, so every edge touching a source has ``S = 1``.
    """
    src, dst = np.nonzero(adjacency)
    if distance == "outgoing":
        return distances_from(adjacency, sources)[src]
    if distance == "undirected":
        dist = distances_from(adjacency | adjacency.T, sources)
        return np.minimum(dist[src], dist[dst])
    raise ConfigError(f"unknown distance {distance!r}; choose one of {list(DISTANCES)}")


def proximity_scores(
    reference: NDArray[np.bool_],
    targets: Sequence[Sequence[int]],
    mass: float | Sequence[float],
    discount: float,
    min_mass: float,
    distance: str = "outgoing",
) -> NDArray[np.float64]:
    """Reliabilities ``r_k,ij = max(m_k α^(S-1), min_mass)`` (§5.2, Algorithm 1).

    Parameters
    ----------
    reference
        ``(d, d)`` adjacency of the current aggregated graph (``i -> j``).
    targets
        Per client, the indices of its intervened variables.
    mass
        ``m_k``, one for all clients or one per client.
    discount
        ``α`` in (0, 1].
    min_mass
        The floor for non-edges and unreachable edges.
    distance
        How ``S`` is counted (:data:`DISTANCES`): ``"outgoing"`` along the arrows from
        the edge's source (the authors' code), ``"undirected"`` on the skeleton to the
        edge's nearer end (§5.2: "edges immediately connected to the intervened
        variable" get ``m``).

    Returns
    -------
    numpy.ndarray
        ``(K, d, d)``, symmetric in ``(i, j)``.
    """
    k, d = len(targets), reference.shape[0]
    masses = np.broadcast_to(np.asarray(mass, dtype=np.float64), (k,))
    adj = np.asarray(reference, dtype=bool)
    src, dst = np.nonzero(adj)
    scores = np.full((k, d, d), float(min_mass))
    for c in range(k):
        if not len(targets[c]):
            continue
        steps = _edge_steps(adj, targets[c], distance)  # S - 1 for the edge src -> dst
        reach = np.isfinite(steps)
        r = np.full(len(steps), float(min_mass))
        r[reach] = np.maximum(masses[c] * discount ** steps[reach], min_mass)
        scores[c, src, dst] = r
        scores[c, dst, src] = r
    return scores


def proximity_weights(scores: NDArray[np.float64], temperature: float, weighting: str) -> NDArray:
    """Eq. (1): ``r̂_k,ij = exp(β r_k,ij) / Σ_k' exp(β r_k',ij)`` (or ``r / Σ r``;
    equal weights where every client's reliability is 0)."""
    if weighting == "softmax":
        z = temperature * scores
        z = np.exp(z - z.max(axis=0, keepdims=True))
        return z / z.sum(axis=0, keepdims=True)
    if weighting == "normalize":
        total = scores.sum(axis=0, keepdims=True)
        equal = np.full_like(scores, 1.0 / scores.shape[0])
        return np.divide(scores, total, out=equal, where=total > 0)
    raise ConfigError(f"unknown weighting {weighting!r}; choose one of {list(WEIGHTINGS)}")


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    p = np.clip(p, _CLIP, 1.0 - _CLIP)
    return np.log(p) - np.log1p(-p)


def aggregate_beliefs(
    beliefs: Sequence[Beliefs], weights: NDArray[np.float64], space: str = "probability"
) -> Beliefs:
    """Eq. (2): the weighted average of the clients' beliefs, θ kept antisymmetric.

    Parameters
    ----------
    beliefs
        One :class:`Beliefs` per client.
    weights
        ``(K,)`` or ``(K, d, d)``, summing to one over the clients.
    space
        ``"probability"`` averages ``σ(γ)`` and ``σ(θ)`` (the paper's belief matrices)
        and maps back to logits; ``"logit"`` averages ``γ`` and ``θ`` themselves.
    """
    if space not in BELIEF_SPACES:
        raise ConfigError(f"unknown belief space {space!r}; choose one of {list(BELIEF_SPACES)}")
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w[:, None, None]
    gammas = np.stack([b.gamma for b in beliefs])
    thetas = np.stack([b.theta for b in beliefs])
    if space == "probability":
        gammas, thetas = _sigmoid(gammas), _sigmoid(thetas)
    return beliefs_from_average((w * gammas).sum(axis=0), (w * thetas).sum(axis=0), space)


def averaged_values(
    beliefs: Beliefs, space: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """What eq. (2) averages of one client's beliefs: ``σ(γ), σ(θ)`` (``"probability"``)
    or ``γ, θ`` (``"logit"``); a client sends them weighted for a secure sum."""
    if space == "probability":
        return _sigmoid(beliefs.gamma), _sigmoid(beliefs.theta)
    return np.asarray(beliefs.gamma, dtype=np.float64), np.asarray(beliefs.theta, dtype=np.float64)


def beliefs_from_average(
    gamma: NDArray[np.float64], theta: NDArray[np.float64], space: str
) -> Beliefs:
    """Eq. (2)'s averages back to beliefs: logits of the averaged probabilities (or the
    averaged logits), θ made antisymmetric, no self-loops."""
    if space == "probability":
        gamma, theta = _logit(gamma), _logit(theta)
    theta = 0.5 * (theta - theta.T)
    gamma = np.array(gamma, dtype=np.float64)
    np.fill_diagonal(gamma, NO_SELF_LOOP)
    return Beliefs(gamma, theta)


def proximity_factor(
    reference: NDArray[np.bool_],
    targets: Sequence[int],
    mass: float,
    discount: float,
    min_mass: float,
    temperature: float,
    weighting: str,
    distance: str = "outgoing",
) -> NDArray[np.float64]:
    """One client's unnormalised weight of eq. (1), ``(d, d)``, from its own
    intervention targets: ``exp(β (r_ij - min_mass))`` (softmax; shifting every
    client's exponent by the same public constant leaves the softmax unchanged and
    keeps the factor at least 1) or ``r_ij`` (normalize), with ``r_ij`` its
    reliability of :func:`proximity_scores` for ``distance``. Eq. (1)-(2) are then the
    ratio of two sums over the clients, ``Σ_k f_k σ_k / Σ_k f_k``, which secure
    aggregation computes without the server seeing one client's targets: ``r_ij``
    depends only on the client's own targets and the public reference graph, whatever
    ``distance`` counts."""
    scores = proximity_scores(reference, [targets], mass, discount, min_mass, distance)[0]
    if weighting == "softmax":
        return np.exp(temperature * (scores - min_mass))
    if weighting == "normalize":
        return scores
    raise ConfigError(f"unknown weighting {weighting!r}; choose one of {list(WEIGHTINGS)}")


def edge_entropy(adjacencies: Sequence[NDArray[np.bool_]]) -> float:
    """Average edge entropy across clients (§9.4, Figure 7), in bits.

    For every ordered pair, ``q`` is the share of clients whose graph has the edge;
    the result is the mean of ``H(q)`` over the ``d(d-1)`` pairs: 0 when all agree.
    """
    q = np.mean(np.stack([np.asarray(a, dtype=np.float64) for a in adjacencies]), axis=0)
    return edge_entropy_of_shares(q)


def edge_entropy_of_shares(q: NDArray[np.float64]) -> float:
    """:func:`edge_entropy` from ``q``, the share of clients holding each edge."""
    d = q.shape[0]
    off = ~np.eye(d, dtype=bool)
    q = q[off]
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(q * np.log2(q) + (1 - q) * np.log2(1 - q))
    return float(np.nan_to_num(h).mean())
