"""What a FED-CD client learns from, what it learns, and the local-learner interface.

FED-CD (papers/fedcd-interventional-causal-discovery.txt, §4-§5.3) needs a local
learning method (LLM) that (i) learns from observational plus interventional
categorical data, (ii) starts from a prior belief over the edges, and (iii) returns
a belief over the edges. :class:`LocalLearner` is that contract; ENCO
(:mod:`fedstruct.methods.fedcd.enco`) is the learner the paper uses, and any other
differentiable learner that keeps it (e.g. SDI, §9.3) plugs in unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from fedstruct.data.client import OBSERVATIONAL, ClientData
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.projection import break_cycles

__all__ = ["Beliefs", "InterventionalData", "LocalLearner", "final_graph"]

#: Logit written on the diagonal of γ: no self-loops (σ(γ_ii) = 0 to float precision).
NO_SELF_LOOP = -1e4


@dataclass(frozen=True)
class Beliefs:
    """ENCO's graph parameters (Lippe et al. 2021, §3.1), shared by FED-CD.

    Attributes
    ----------
    gamma
        ``(d, d)`` edge-existence logits: ``σ(γ_ij)`` is the belief that ``i`` and ``j``
        are adjacent with ``i`` a parent of ``j``.
    theta
        ``(d, d)`` orientation logits, antisymmetric (``θ_ij = -θ_ji``).

    ``σ(γ_ij) σ(θ_ij)`` is the probability of the edge ``i -> j`` (FED-CD's belief
    matrix σ̃, §4).
    """

    gamma: NDArray[np.float64]
    theta: NDArray[np.float64]

    @classmethod
    def uniform(cls, d: int) -> Beliefs:
        """The round-1 prior (FED-CD §5, step 1): every edge at probability 1/4."""
        gamma = np.zeros((d, d))
        np.fill_diagonal(gamma, NO_SELF_LOOP)
        return cls(gamma, np.zeros((d, d)))

    @property
    def edge_probability(self) -> NDArray[np.float64]:
        """``σ(γ) σ(θ)`` with a zero diagonal."""
        p = _sigmoid(self.gamma) * _sigmoid(self.theta)
        np.fill_diagonal(p, 0.0)
        return p

    def adjacency(self) -> NDArray[np.bool_]:
        """ENCO's final graph (§3.4): ``i -> j`` iff ``σ(γ_ij) > 0.5`` and ``σ(θ_ij) > 0.5``."""
        a = (self.gamma > 0) & (self.theta > 0)
        np.fill_diagonal(a, False)
        return a


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


@dataclass(frozen=True)
class InterventionalData:
    """One client's categorical rows, split by regime, ready for a learner.

    Attributes
    ----------
    names
        Variable names (the federation's order).
    cardinalities
        Number of categories per variable (codes are ``0..k-1``).
    observational
        ``(n_obs, d)`` int64 codes sampled without intervention.
    interventional
        Variable index -> ``(n_i, d)`` codes sampled under a perfect intervention on it.
    """

    names: tuple[str, ...]
    cardinalities: tuple[int, ...]
    observational: NDArray[np.int64]
    interventional: dict[int, NDArray[np.int64]]

    @property
    def targets(self) -> tuple[int, ...]:
        """Indices of the intervened variables, ascending."""
        return tuple(sorted(self.interventional))

    @property
    def n_rows(self) -> int:
        """All rows, observational and interventional."""
        return len(self.observational) + sum(len(v) for v in self.interventional.values())

    @classmethod
    def from_client(
        cls,
        data: ClientData,
        names: Sequence[str] | None = None,
        cardinalities: Sequence[int] | None = None,
    ) -> InterventionalData:
        """Validate a client's data for FED-CD and split it by regime.

        Parameters
        ----------
        data
            The client's rows with :attr:`ClientData.intervention` codes.
        names
            The federation's variables, in the learner's order (default: the client's
            columns). FED-CD assumes every client observes all of them (§5.2).
        cardinalities
            Categories per variable (default: ``max code + 1`` in this client's rows).

        Raises
        ------
        UnknownVariableError
            If the client lacks one of ``names``, or intervened on a variable outside them.
        DataError
            If a value is missing (NaN or code ``-1``), a column is not integer codes
            ``0..k-1``, a variable has fewer than 2 categories, the client has no
            interventional or no observational rows.
        """
        names = tuple(data.variables if names is None else names)
        where = f"client {data.name!r}"
        missing = [v for v in names if v not in data.variables]
        if missing:
            raise UnknownVariableError(
                f"{where} lacks variables {missing}; FED-CD needs every client to observe "
                "all variables (use a vertical split of the interventions, not of the columns)"
            )
        targets = data.intervention_targets
        stray = [t for t in targets if t not in names]
        if stray:
            raise UnknownVariableError(
                f"{where} has interventional rows on {stray}, which are not variables of the "
                f"federation {list(names)}; drop those rows or add the variables"
            )
        frame = data.rows.loc[:, list(names)]
        values = frame.to_numpy()
        holes = np.isnan(values) if values.dtype.kind == "f" else values == -1
        if holes.any():
            j = int(np.flatnonzero(holes.any(axis=0))[0])
            raise DataError(
                f"{where}: variable {names[j]!r} misses values in {int(holes.any(axis=1).sum())} "
                "rows; ENCO's likelihood of a row needs every variable: drop the rows that "
                "miss a value first (on site files, missing=drop-rows, FED-CD's default)"
            )
        if values.dtype.kind == "f" and not np.all(values == np.round(values)):
            raise DataError(
                f"{where}: ENCO learns categorical variables; discretise the continuous "
                "columns into integer codes 0..k-1 first"
            )
        codes = values.astype(np.int64)
        if codes.size and codes.min() < 0:
            j = int(np.flatnonzero((codes < 0).any(axis=0))[0])
            raise DataError(f"{where}: variable {names[j]!r} has negative codes; use 0..k-1")
        observed = codes.max(axis=0) + 1
        if cardinalities is None:
            cards = tuple(int(k) for k in observed)
        else:
            cards = tuple(int(k) for k in cardinalities)
            over = [names[j] for j in range(len(names)) if observed[j] > cards[j]]
            if over:
                raise DataError(f"{where}: variables {over} have codes beyond their categories")
        few = [names[j] for j, k in enumerate(cards) if k < 2]
        if few:
            raise DataError(
                f"{where}: variable(s) {few} have fewer than 2 categories; a constant "
                "variable carries no causal information, drop it from the federation"
            )
        regimes = data.regimes()
        if not targets:
            raise DataError(
                f"{where} has only observational rows; ENCO needs interventions on some "
                "variables to orient edges (give the client interventional rows, with "
                "ClientData.intervention codes)"
            )
        obs = codes[regimes == OBSERVATIONAL]
        if len(obs) == 0:
            raise DataError(
                f"{where} has no observational rows; ENCO fits the conditionals on them"
            )
        inter = {names.index(t): codes[regimes == data.variables.index(t)] for t in targets}
        return cls(names, cards, obs, inter)


class LocalLearner(Protocol):
    """A differentiable causal-discovery method FED-CD can federate (§5.3)."""

    def fit(self, data: InterventionalData, prior: Beliefs, epochs: int, seed: int) -> Beliefs:
        """Learn for ``epochs`` from ``prior`` on ``data``; return the new beliefs."""
        ...


def final_graph(names: Sequence[str], beliefs: Beliefs, acyclic: bool = True) -> Graph:
    """ENCO's graph of ``beliefs`` (``σ(γ), σ(θ) > 0.5``), cycles broken if ``acyclic``.

    θ is antisymmetric, so the graph has no two-cycles; longer cycles are broken at
    their least probable edge (``σ(γ) σ(θ)``).
    """
    adjacency = beliefs.adjacency()
    edges = [(names[i], names[j]) for i, j in zip(*np.nonzero(adjacency), strict=True)]
    graph = Graph.from_edges(names, edges)
    return break_cycles(graph, beliefs.edge_probability).dag if acyclic else graph
