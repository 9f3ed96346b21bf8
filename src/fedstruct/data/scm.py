"""Synthetic generators on a given DAG: categorical random-MLP SCMs and Dirichlet-random
discrete networks.

Every generator has a ``graph``, ``names`` and
``sample(n, *, seed, interventions=None) -> pandas.DataFrame`` like
:class:`~fedstruct.data.discrete.DiscreteNetwork`, with the same perfect-intervention
semantics (Pearl 2009, *Causality*, eq. 3.10: incoming edges cut, the target set to a
value) and the same common-random-numbers property: a seed draws one uniform (or
normal) number per row and variable, so columns of non-descendants of the intervened
variables are identical across interventions.

Parameters of variable ``j`` come from their own random stream (spawned from the seed
for position ``j`` in ``graph.names``), so they do not change when other variables
gain or lose parents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng, softmax
from fedstruct.data.discrete import (
    DiscreteNetwork,
    inverse_cdf,
    mixed_radix_strides,
    resolve_categorical_interventions,
)
from fedstruct.errors import DataError
from fedstruct.graphs.graph import Graph

#: CategoricalSCM tabulates a conditional once (cached) when it has at most this many
#: parent configurations; larger ones are evaluated per row.
TABULATE_LIMIT = 10_000

__all__ = [
    "CategoricalSCM",
    "orthogonal_matrix",
    "random_discrete_network",
]


def _cardinalities(graph: Graph, value: int | Sequence[int] | Mapping[str, int]) -> list[int]:
    """Per-variable number of categories (≥ 2) from an int, a sequence or a mapping."""
    if isinstance(value, Mapping):
        missing = [v for v in graph.names if v not in value]
        if missing:
            raise DataError(f"cardinality mapping lacks variables {missing}")
        cards = [value[v] for v in graph.names]
    elif isinstance(value, int | np.integer):
        cards = [int(value)] * graph.n_nodes
    else:
        cards = list(value)
        if len(cards) != graph.n_nodes:
            raise DataError(
                f"got {len(cards)} cardinalities for {graph.n_nodes} variables; "
                "give one per variable"
            )
    for v, k in zip(graph.names, cards, strict=True):
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
            raise DataError(f"variable {v!r} needs an integer number of categories >= 2, got {k!r}")
    return [int(k) for k in cards]


def orthogonal_matrix(rows: int, cols: int, gain: float, rng: np.random.Generator) -> NDArray:
    """A random (semi-)orthogonal ``rows × cols`` matrix times ``gain``.

    QR decomposition of a standard normal matrix with the signs of ``R``'s diagonal
    folded into ``Q`` (Mezzadri 2007, *How to generate random matrices from the
    classical compact groups*), as in the orthogonal initialisation of Saxe, McClelland
    & Ganguli (2014). Rows are orthonormal if ``rows <= cols``, else columns.
    """
    tall = rows >= cols
    a = rng.standard_normal((rows, cols) if tall else (cols, rows))
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.where(np.diagonal(r) == 0, 1.0, np.diagonal(r)))
    return gain * (q if tall else q.T)


class CategoricalSCM:
    """ENCO's categorical generator: each conditional is a random neural network.

    Lippe, Cohen & Gavves (2021), *Efficient Neural Causal Discovery without Acyclicity
    Constraints* (ICLR), App. C.1, after Ke et al. (2019): every variable has
    ``n_categories`` categories. A root's marginal is ``softmax(g)`` with
    ``g ~ N(0, root_scale²)`` per category. A variable with parents ``p_1..p_m`` has

    * an embedding table ``E ~ N(0, 1)`` with one ``embed_dim`` vector per parent value,
    * ``h = LeakyReLU_0.1(concat_i E[p_i] · W1 + b1)`` with ``W1`` orthogonal × ``gain``
      (``embed_dim·m × hidden``) and ``b1 ~ U(-0.5, 0.5)``,
    * ``P(x | parents) = softmax(h · W2)`` with ``W2`` orthogonal × ``gain``
      (``hidden × n_categories``), no bias, temperature 1.

    Defaults are ENCO's: 10 categories, ``embed_dim`` 4, ``hidden`` 48, gain 2.5,
    ``root_scale`` 1. A perfect intervention with value ``"uniform"`` draws the target
    uniformly over its categories, as ENCO's interventional data sets do.

    Parameters
    ----------
    graph
        A DAG.
    seed
        Seed of the random parameters.
    n_categories
        Categories per variable: one int, a sequence in ``graph.names`` order, or a mapping.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``graph`` is not a DAG.
    DataError
        If a number of categories is below 2 or the network sizes are not positive.
    """

    def __init__(
        self,
        graph: Graph,
        *,
        seed: SeedLike,
        n_categories: int | Sequence[int] | Mapping[str, int] = 10,
        embed_dim: int = 4,
        hidden: int = 48,
        gain: float = 2.5,
        negative_slope: float = 0.1,
        root_scale: float = 1.0,
    ) -> None:
        graph.require_dag("the CategoricalSCM's graph")
        if embed_dim < 1 or hidden < 1:
            raise DataError(f"embed_dim and hidden must be >= 1, got {embed_dim} and {hidden}")
        cards = _cardinalities(graph, n_categories)
        self._graph = graph
        self._names = graph.names
        self._cards = dict(zip(self._names, cards, strict=True))
        self._states = {v: tuple(str(s) for s in range(k)) for v, k in self._cards.items()}
        self._slope = float(negative_slope)
        index = {v: i for i, v in enumerate(self._names)}
        self._parents = {v: tuple(graph.parents(v)) for v in self._names}
        self._parent_idx = [
            np.array([index[p] for p in self._parents[v]], dtype=np.int64) for v in self._names
        ]
        self._order = [index[v] for v in graph.topological_order()]
        streams = make_rng(seed).spawn(len(self._names))
        self._tables: dict[int, tuple[NDArray[np.float64], NDArray[np.int64]]] = {}
        self._root: dict[int, NDArray[np.float64]] = {}
        self._net: dict[int, tuple[NDArray, NDArray, NDArray, NDArray, NDArray]] = {}
        for j, v in enumerate(self._names):
            rng, k = streams[j], cards[j]
            pc = [self._cards[p] for p in self._parents[v]]
            if not pc:
                self._root[j] = softmax(rng.normal(0.0, root_scale, size=k))
                continue
            embed = rng.standard_normal((sum(pc), embed_dim))
            offsets = np.concatenate([[0], np.cumsum(pc)[:-1]]).astype(np.int64)
            w1 = orthogonal_matrix(embed_dim * len(pc), hidden, gain, rng)
            b1 = rng.uniform(-0.5, 0.5, size=hidden)
            w2 = orthogonal_matrix(hidden, k, gain, rng)
            self._net[j] = (embed, offsets, w1, b1, w2)

    @property
    def graph(self) -> Graph:
        """The DAG."""
        return self._graph

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in column order."""
        return self._names

    @property
    def cardinalities(self) -> Mapping[str, int]:
        """Variable name -> number of categories."""
        return dict(self._cards)

    @property
    def states(self) -> Mapping[str, tuple[str, ...]]:
        """Variable name -> state names ``("0", "1", ...)``."""
        return dict(self._states)

    def parents(self, variable: str) -> tuple[str, ...]:
        """The parents of ``variable``, in the order their embeddings are concatenated."""
        self._graph.index(variable)
        return self._parents[variable]

    def conditional(self, variable: str, parent_codes: ArrayLike | None = None) -> NDArray:
        """``P(variable | parents)`` for rows of parent codes.

        Parameters
        ----------
        variable
            The variable.
        parent_codes
            ``(n, m)`` integer codes of its :meth:`parents` (ignored for a root).

        Returns
        -------
        ndarray
            ``(n, k)`` probabilities (``(k,)`` for a root).

        Raises
        ------
        UnknownVariableError
            If the variable is unknown.
        DataError
            If the codes have the wrong shape or range.
        """
        j = self._graph.index(variable)
        if j in self._root:
            return self._root[j].copy()
        codes = np.asarray(parent_codes, dtype=np.int64)
        pc = np.array([self._cards[p] for p in self._parents[variable]])
        if codes.ndim != 2 or codes.shape[1] != pc.size:
            raise DataError(
                f"parent codes of {variable!r} must have shape (n, {pc.size}), got {codes.shape}"
            )
        if codes.size and ((codes < 0).any() or (codes >= pc).any()):
            raise DataError(f"parent codes of {variable!r} lie outside 0..k-1")
        return self._probabilities(j, codes)

    def _probabilities(self, j: int, codes: NDArray[np.int64]) -> NDArray[np.float64]:
        embed, offsets, w1, b1, w2 = self._net[j]
        x = embed[codes + offsets].reshape(codes.shape[0], -1)
        h = x @ w1 + b1
        h = np.where(h > 0, h, self._slope * h)
        return softmax(h @ w2)

    def _cumulative(self, j: int, parent_codes: NDArray[np.int64]) -> NDArray[np.float64]:
        """Row-wise cumulative conditionals, from a cached table when it is small."""
        pc = tuple(self._cards[p] for p in self._parents[self._names[j]])
        n_cfg = math.prod(pc)
        if n_cfg > TABULATE_LIMIT:
            return np.cumsum(self._probabilities(j, parent_codes), axis=1)
        if j not in self._tables:
            grid = np.stack(np.unravel_index(np.arange(n_cfg), pc), axis=1)
            table = np.cumsum(self._probabilities(j, grid), axis=1)
            self._tables[j] = (table, mixed_radix_strides(pc))
        table, strides = self._tables[j]
        return table[parent_codes @ strides]

    def sample(
        self,
        n: int,
        *,
        seed: SeedLike,
        interventions: Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """Draw ``n`` rows by ancestral sampling, optionally under perfect interventions.

        Parameters and errors are those of
        :meth:`fedstruct.data.discrete.DiscreteNetwork.sample`; values are category
        codes, a state name ``"0".."k-1"``, or ``"uniform"``.
        """
        n = check_sample_size(n)
        targets = resolve_categorical_interventions(
            interventions, self._names, self._states, "the CategoricalSCM"
        )
        u = make_rng(seed).random((n, len(self._names)))
        codes = np.empty((n, len(self._names)), dtype=np.int64)
        for j in self._order:
            k = self._cards[self._names[j]]
            if j in targets:
                code = targets[j]
                probs = np.full(k, 1.0 / k) if code < 0 else np.eye(k)[code]
                cum = np.broadcast_to(np.cumsum(probs), (n, k)).copy()
            elif j in self._root:
                cum = np.broadcast_to(np.cumsum(self._root[j]), (n, k)).copy()
            else:
                cum = self._cumulative(j, codes[:, self._parent_idx[j]])
            cum[:, -1] = 1.0
            codes[:, j] = inverse_cdf(cum, u[:, j])
        return pd.DataFrame(codes, columns=list(self._names))

    def to_network(self, max_configurations: int = 100_000) -> DiscreteNetwork:
        """The same distribution as a :class:`DiscreteNetwork` (CPTs tabulated).

        Raises
        ------
        DataError
            If some variable has more than ``max_configurations`` parent configurations.
        """
        tables: dict[str, NDArray[np.float64]] = {}
        for j, v in enumerate(self._names):
            pc = tuple(self._cards[p] for p in self._parents[v])
            if not pc:
                tables[v] = self._root[j]
                continue
            n_cfg = math.prod(pc)
            if n_cfg > max_configurations:
                raise DataError(
                    f"{v!r} has {n_cfg} parent configurations (> {max_configurations}); "
                    "raise max_configurations or keep sampling from the SCM"
                )
            grid = np.stack(np.unravel_index(np.arange(n_cfg), pc), axis=1)
            tables[v] = self._probabilities(j, grid).reshape((*pc, self._cards[v]))
        return DiscreteNetwork(
            self._names, self._states, self._parents, tables, name="categorical-scm"
        )


def random_discrete_network(
    dag: Graph,
    *,
    seed: SeedLike,
    cardinality: int | Sequence[int] | Mapping[str, int] = 2,
    alpha: float = 1.0,
    name: str = "random",
) -> DiscreteNetwork:
    """A discrete network on ``dag`` whose CPT rows are drawn from Dirichlet(α, ..., α).

    Each row ``P(X | parents = c)`` is an independent symmetric Dirichlet draw
    (the BDeu-style prior of Heckerman, Geiger & Chickering 1995); small ``alpha``
    gives near-deterministic rows (strong dependencies), ``alpha = 1`` uniform over the
    simplex. States are named ``"0".."k-1"``; parents follow the graph's order.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    DataError
        If ``alpha`` is not positive or a cardinality is below 2.
    """
    dag.require_dag("the random network's graph")
    if not alpha > 0:
        raise DataError(f"alpha must be positive, got {alpha}")
    cards = dict(zip(dag.names, _cardinalities(dag, cardinality), strict=True))
    streams = make_rng(seed).spawn(dag.n_nodes)
    parents = {v: dag.parents(v) for v in dag.names}
    tables = {}
    for j, v in enumerate(dag.names):
        pc = tuple(cards[p] for p in parents[v])
        rows = streams[j].dirichlet(np.full(cards[v], float(alpha)), size=int(np.prod(pc)))
        tables[v] = rows.reshape((*pc, cards[v]))
    states = {v: tuple(str(s) for s in range(k)) for v, k in cards.items()}
    return DiscreteNetwork(dag.names, states, parents, tables, name=name)
