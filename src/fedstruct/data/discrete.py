"""Discrete Bayesian networks and the sampling helpers every sampler shares.

A :class:`DiscreteNetwork` is a DAG over categorical variables with one conditional
probability table (CPT) per variable. It samples by vectorised forward (ancestral)
sampling — Koller & Friedman (2009), *Probabilistic Graphical Models*, Alg. 12.1 —
and supports perfect ("hard", ``do``) interventions: Pearl (2009), *Causality*,
§3.2.2, the truncated factorisation (3.10) — the intervened variable's CPT is replaced
by a point mass or a uniform distribution and its incoming edges are cut.

Common random numbers: a call to ``sample(n, seed=s, ...)`` draws one uniform
``u[row, j]`` per row and variable ``j`` (in :attr:`DiscreteNetwork.names` order)
and turns it into a state by the inverse CDF. Two calls with the same seed and
different interventions therefore give *identical* columns for every variable that
is not a descendant of an intervened one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng
from fedstruct.errors import CyclicGraphError, DataError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import Graph

__all__ = [
    "UNIFORM",
    "Cpt",
    "DiscreteNetwork",
    "inverse_cdf",
    "mixed_radix_strides",
    "resolve_categorical_interventions",
]

#: Intervention value meaning "draw the target uniformly over its states".
UNIFORM = "uniform"

#: Rows of a CPT may deviate from summing to one by this much (rounded files); they are
#: renormalised. Larger deviations are an error.
ROW_SUM_TOLERANCE = 1e-4


# ------------------------------------------------------------------ helpers
def inverse_cdf(cumulative: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Categorical draws by the inverse CDF.

    Parameters
    ----------
    cumulative
        ``(n, k)`` cumulative probabilities per row (last column 1).
    u
        ``(n,)`` uniforms in ``[0, 1)``.

    Returns
    -------
    ndarray
        The state ``s`` with ``F[s-1] <= u < F[s]``: states of probability zero are
        never drawn (Devroye (1986), *Non-Uniform Random Variate Generation*, §III.2.1).
    """
    k = cumulative.shape[1]
    codes = (cumulative[:, : k - 1] <= u[:, None]).sum(axis=1)
    return codes.astype(np.int64)


def resolve_categorical_interventions(
    interventions: Mapping[str, object] | None,
    names: Sequence[str],
    states: Mapping[str, Sequence[str]],
    what: str = "the network",
) -> dict[int, int]:
    """Turn ``{variable: value}`` into ``{variable index: state code}``.

    ``value`` is a state name, an integer code ``0..k-1`` or :data:`UNIFORM`
    (``"uniform"``, returned as code ``-1``).

    Raises
    ------
    DataError
        If ``interventions`` is not a mapping, or a value is not a valid state.
    UnknownVariableError
        If a key is not one of ``names``.
    """
    if interventions is None:
        return {}
    if not isinstance(interventions, Mapping):
        raise DataError(
            "interventions must be a mapping {variable: value}, "
            f"got {type(interventions).__name__}"
        )
    index = {n: i for i, n in enumerate(names)}
    out: dict[int, int] = {}
    for var, value in interventions.items():
        if var not in index:
            valid = ", ".join(names)
            raise UnknownVariableError(
                f"cannot intervene on {var!r}: it is not a variable of {what}; "
                f"valid variables: {valid}"
            )
        var_states = tuple(states[var])
        if isinstance(value, str) and value == UNIFORM:
            out[index[var]] = -1
        elif isinstance(value, str) and value in var_states:
            out[index[var]] = var_states.index(value)
        elif (
            isinstance(value, int | np.integer)
            and not isinstance(value, bool)
            and 0 <= value < len(var_states)
        ):
            out[index[var]] = int(value)
        else:
            raise DataError(
                f"intervention value {value!r} for {var!r} is not valid; give one of its states "
                f"{list(var_states)}, a code 0..{len(var_states) - 1}, or {UNIFORM!r}"
            )
    return out


# ---------------------------------------------------------------- the network
@dataclass(frozen=True)
class Cpt:
    """The conditional probability table of one variable.

    ``table[p_1, ..., p_m, x] = P(variable = x | parents = (p_1, ..., p_m))`` with the
    parents in :attr:`parents` order; each last-axis row sums to one.
    """

    variable: str
    parents: tuple[str, ...]
    table: NDArray[np.float64]


class DiscreteNetwork:
    """A Bayesian network over categorical variables.

    Parameters
    ----------
    names
        Variable names, in column order of :meth:`sample`.
    states
        Variable name -> its state names (the codes are their positions).
    parents
        Variable name -> its parents, in the axis order of its table. Absent = root.
    tables
        Variable name -> CPT array of shape ``(*parent cardinalities, cardinality)``.
        Rows that sum to one within ``1e-4`` are renormalised.
    name
        A label for messages, e.g. ``"alarm"``.

    Raises
    ------
    DataError
        For a missing or misshaped table, negative probabilities, rows not summing to
        one (the message names the variable and parent configuration), or variables
        with no states.
    UnknownVariableError
        If a parent is not a variable.
    GraphError
        If names repeat; :class:`~fedstruct.errors.CyclicGraphError` if the parents
        form a directed cycle.

    Examples
    --------
    >>> net = DiscreteNetwork(["A", "B"], {"A": ("no", "yes"), "B": ("no", "yes")},
    ...                       {"B": ("A",)}, {"A": [0.5, 0.5], "B": [[0.9, 0.1], [0.2, 0.8]]})
    >>> net.sample(3, seed=0).shape
    (3, 2)
    """

    def __init__(
        self,
        names: Sequence[str],
        states: Mapping[str, Sequence[str]],
        parents: Mapping[str, Sequence[str]],
        tables: Mapping[str, ArrayLike],
        *,
        name: str = "network",
    ) -> None:
        names = tuple(names)
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise GraphError(f"{name}: duplicate variable names {dupes}")
        index = {n: i for i, n in enumerate(names)}
        for var in [*states, *parents, *tables]:
            if var not in index:
                raise UnknownVariableError(f"{name}: {var!r} is not one of the network's variables")
        st: dict[str, tuple[str, ...]] = {}
        for var in names:
            if var not in states or len(states[var]) == 0:
                raise DataError(f"{name}: variable {var!r} has no states; give it at least one")
            s = tuple(str(x) for x in states[var])
            if len(set(s)) != len(s):
                raise DataError(f"{name}: variable {var!r} repeats a state name in {list(s)}")
            st[var] = s
        par: dict[str, tuple[str, ...]] = {}
        adj = np.zeros((len(names), len(names)), dtype=bool)
        for var in names:
            ps = tuple(parents.get(var, ()))
            for p in ps:
                if p not in index:
                    raise UnknownVariableError(
                        f"{name}: parent {p!r} of {var!r} is not one of the network's variables"
                    )
            if len(set(ps)) != len(ps) or var in ps:
                raise DataError(f"{name}: parents of {var!r} repeat or include itself: {list(ps)}")
            par[var] = ps
            adj[[index[p] for p in ps], index[var]] = True
        if (adj & adj.T).any():
            i, j = (int(x) for x in np.argwhere(adj & adj.T)[0])
            raise CyclicGraphError(
                f"network {name!r} must be acyclic but {names[i]!r} and {names[j]!r} are each "
                "other's parents; remove one of the two"
            )
        graph = Graph.from_dag_matrix(names, adj).require_dag(f"network {name!r}")
        cpts: dict[str, Cpt] = {}
        for var in names:
            if var not in tables:
                raise DataError(f"{name}: variable {var!r} has no probability table")
            shape = (*(len(st[p]) for p in par[var]), len(st[var]))
            table = _check_table(np.asarray(tables[var], dtype=np.float64), shape, var, name)
            cpts[var] = Cpt(var, par[var], table)
        self._name = name
        self._names = names
        self._states = MappingProxyType(st)
        self._cards = MappingProxyType({v: len(st[v]) for v in names})
        self._cpts = MappingProxyType(cpts)
        self._graph = graph
        self._order = [index[v] for v in graph.topological_order()]
        self._parent_idx = [np.array([index[p] for p in par[v]], dtype=np.int64) for v in names]
        self._strides = [mixed_radix_strides(cpts[v].table.shape[:-1]) for v in names]
        self._thresholds = [_thresholds(cpts[v].table) for v in names]

    # ----------------------------------------------------------------- views
    @property
    def name(self) -> str:
        """The network's label."""
        return self._name

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in column order."""
        return self._names

    @property
    def graph(self) -> Graph:
        """The DAG (``parent -> child`` for every CPT parent)."""
        return self._graph

    @property
    def states(self) -> dict[str, tuple[str, ...]]:
        """Variable name -> state names (a new dict each time: changing it changes
        nothing here, and an estimator given it can be cloned and pickled)."""
        return dict(self._states)

    @property
    def cardinalities(self) -> dict[str, int]:
        """Variable name -> number of states (a new dict each time: changing it changes
        nothing here, and an estimator given it can be cloned and pickled)."""
        return dict(self._cards)

    @property
    def cpts(self) -> Mapping[str, Cpt]:
        """Variable name -> :class:`Cpt` (read-only tables)."""
        return self._cpts

    def cpt(self, variable: str) -> Cpt:
        """The CPT of ``variable``.

        Raises
        ------
        UnknownVariableError
            If the network has no such variable.
        """
        if variable not in self._cpts:
            raise UnknownVariableError(f"network {self._name!r} has no variable {variable!r}")
        return self._cpts[variable]

    def parents(self, variable: str) -> tuple[str, ...]:
        """The parents of ``variable`` in the axis order of its table."""
        return self.cpt(variable).parents

    @property
    def n_nodes(self) -> int:
        """Number of variables."""
        return len(self._names)

    @property
    def n_edges(self) -> int:
        """Number of edges."""
        return self._graph.n_edges

    def __repr__(self) -> str:
        return f"DiscreteNetwork({self._name!r}, {self.n_nodes} nodes, {self.n_edges} edges)"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle support (for process-based backends): rebuilt from names, states, CPTs."""
        parents = {v: c.parents for v, c in self._cpts.items()}
        tables = {v: c.table for v, c in self._cpts.items()}
        return (_rebuild, (self._names, dict(self._states), parents, tables, self._name))

    # -------------------------------------------------------------- sampling
    def sample(
        self,
        n: int,
        *,
        seed: SeedLike,
        interventions: Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """Draw ``n`` rows by forward sampling, optionally under perfect interventions.

        Parameters
        ----------
        n
            Number of rows.
        seed
            Seed of the draw (see :func:`make_rng`).
        interventions
            ``{variable: value}`` with ``value`` a state name, a state code, or
            ``"uniform"`` (drawn uniformly over the variable's states). Incoming edges
            of each intervened variable are cut (Pearl 2009, eq. 3.10).

        Returns
        -------
        pandas.DataFrame
            ``n`` rows, one ``int64`` column of state codes per variable, in
            :attr:`names` order.

        Raises
        ------
        SampleSizeError
            If ``n`` is not a positive integer.
        UnknownVariableError
            If an intervention names an unknown variable.
        DataError
            If an intervention value is not a state of its variable.
        """
        n = check_sample_size(n)
        targets = resolve_categorical_interventions(
            interventions, self._names, self._states, f"network {self._name!r}"
        )
        rng = make_rng(seed)
        # One variable per row of ``u`` and ``codes`` (the draws are those of an (n, p)
        # array, transposed): every column read and written below is contiguous, which
        # is what keeps a thousand-variable network fast (docs/benchmarks.md).
        u = np.ascontiguousarray(rng.random((n, len(self._names))).T)
        codes = np.empty((len(self._names), n), dtype=np.int64)
        for j in self._order:
            if j in targets:
                k = self._cards[self._names[j]]
                codes[j] = _intervened_codes(targets[j], k, u[j])
                continue
            pidx = self._parent_idx[j]
            if pidx.size:
                codes[j] = _conditional_codes(
                    self._thresholds[j], self._strides[j] @ codes[pidx], u[j]
                )
            else:
                codes[j] = np.searchsorted(self._thresholds[j][:, 0], u[j], side="right")
        return pd.DataFrame(codes.T, columns=list(self._names), copy=False)

    def intervene(self, interventions: Mapping[str, Any]) -> DiscreteNetwork:
        """The mutilated network: each target's CPT replaced, its incoming edges cut.

        ``net.intervene(iv).sample(n, seed=s)`` equals ``net.sample(n, seed=s,
        interventions=iv)`` exactly.

        Raises
        ------
        UnknownVariableError, DataError
            As :meth:`sample`.
        """
        targets = resolve_categorical_interventions(
            interventions, self._names, self._states, f"network {self._name!r}"
        )
        parents = {v: c.parents for v, c in self._cpts.items()}
        tables: dict[str, NDArray[np.float64]] = {v: c.table for v, c in self._cpts.items()}
        for j, code in targets.items():
            var = self._names[j]
            k = self._cards[var]
            parents[var] = ()
            tables[var] = np.full(k, 1.0 / k) if code < 0 else np.eye(k)[code]
        label = ", ".join(f"{self._names[j]}" for j in sorted(targets))
        return DiscreteNetwork(
            self._names, self._states, parents, tables, name=f"{self._name} do({label})"
        )


def _rebuild(
    names: tuple[str, ...],
    states: dict[str, tuple[str, ...]],
    parents: dict[str, tuple[str, ...]],
    tables: dict[str, NDArray[np.float64]],
    name: str,
) -> DiscreteNetwork:
    return DiscreteNetwork(names, states, parents, tables, name=name)


# ------------------------------------------------------------ private maths
def _check_table(
    table: NDArray[np.float64], shape: tuple[int, ...], var: str, net: str
) -> NDArray[np.float64]:
    """Validate and renormalise one CPT; returns a read-only copy."""
    if table.shape != shape:
        raise DataError(
            f"{net}: table of {var!r} has shape {table.shape}, expected {shape} "
            "(parent cardinalities, then the variable's)"
        )
    if not np.all(np.isfinite(table)) or (table < 0).any():
        raise DataError(f"{net}: table of {var!r} has negative or non-finite probabilities")
    sums = table.sum(axis=-1)
    bad = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"{net}: row {where} of the table of {var!r} sums to {float(sums[where]):.6g}, "
            "not 1; fix the probabilities"
        )
    out = _normalise(table)
    out.setflags(write=False)
    return out


def _normalise(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Divide each last-axis row by its sum, leaving rows within 1e-9 of one bit-exact."""
    sums = table.sum(axis=-1, keepdims=True)
    return np.where(np.abs(sums - 1.0) > 1e-9, table / sums, table)


def mixed_radix_strides(parent_cards: tuple[int, ...]) -> NDArray[np.int64]:
    """Mixed-radix strides: the first parent is the most significant digit (C order).

    ``codes @ strides`` is the row of a parent configuration in a CPT flattened to
    ``(configurations, k)``.
    """
    strides = np.ones(len(parent_cards), dtype=np.int64)
    for i in range(len(parent_cards) - 2, -1, -1):
        strides[i] = strides[i + 1] * parent_cards[i + 1]
    return strides


def _cumulative(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise cumulative sums of a CPT flattened to ``(configurations, k)``; last column 1."""
    k = table.shape[-1]
    cum = np.cumsum(table.reshape(-1, k), axis=1)
    cum[:, -1] = 1.0
    return cum


def _thresholds(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """The CDF of each parent configuration as ``(k - 1, configurations)``, without its last 1.

    State-major so that :func:`_conditional_codes` reads one contiguous row per state.
    """
    k = table.shape[-1]
    return np.ascontiguousarray(_cumulative(table)[:, : k - 1].T)


def _conditional_codes(
    thresholds: NDArray[np.float64], rows: NDArray[np.int64], u: NDArray[np.float64]
) -> NDArray[np.int64]:
    """:func:`inverse_cdf` of CDF row ``rows[i]`` at ``u[i]``: the number of ``F[s] <= u``.

    One gather of ``n`` values per state instead of gathering ``(n, k)`` CDF rows: the
    same comparisons, so the same codes, several times faster for thousand-variable networks.
    """
    codes = np.zeros(u.shape[0], dtype=np.int64)
    for level in thresholds:
        codes += level[rows] <= u
    return codes


def _intervened_codes(code: int, k: int, u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Codes of an intervened variable: constant ``code`` or uniform (``code < 0``)."""
    if code >= 0:
        return np.full(u.shape[0], code, dtype=np.int64)
    # The same arithmetic as a uniform CPT row, so that intervene() and sample() agree.
    cum = _cumulative(_normalise(np.full(k, 1.0 / k)))
    return inverse_cdf(np.broadcast_to(cum, (u.shape[0], k)), u)
