"""Mixed-type data (real, ordinal, binary, categorical) with a known graph.

FedNGM (paper §3) learns neural graphical models from tables that mix real-valued and
categorical features (the NGM-generic architecture: categorical inputs one-hot
encoded next to the real ones). This module holds such a table,
:class:`MixedDataset`, and a synthetic generator with a known structure,
:class:`MixedSCM`, whose true conditional-independence graph is the moral graph of its
DAG (:func:`fedstruct.graphs.undirected.moral_graph`).

The generator's mechanisms are our own design (no paper defines them); they are
documented on :class:`MixedSCM`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, child_seed, make_rng, softmax
from fedstruct.data.checks import fraction, integer_at_least
from fedstruct.data.discrete import inverse_cdf
from fedstruct.errors import (
    ConfigError,
    DataError,
    NonFiniteDataError,
    UnknownVariableError,
    unknown_choice_message,
)
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.graphs.undirected import moral_graph

__all__ = [
    "CATEGORICAL_KINDS",
    "CONTINUOUS_KINDS",
    "VARIABLE_KINDS",
    "MixedDataset",
    "MixedSCM",
    "make_mixed_data",
]

#: The kinds of variable a :class:`MixedDataset` holds.
VARIABLE_KINDS: tuple[str, ...] = ("real", "ordinal", "binary", "categorical")
#: Kinds stored as ``int64`` codes ``0..k-1``.
CATEGORICAL_KINDS: tuple[str, ...] = ("binary", "categorical")
#: Kinds stored as ``float64`` values.
CONTINUOUS_KINDS: tuple[str, ...] = ("real", "ordinal")


# ------------------------------------------------------------------ the data set
@dataclass(frozen=True, eq=False)
class MixedDataset:
    """A table of mixed-type variables, with its true graph when it is known.

    Parameters
    ----------
    frame
        One row per sample. ``real`` and ``ordinal`` columns are ``float64`` (an
        ordinal column holds its level values); ``binary`` and ``categorical`` columns
        are ``int64`` codes ``0..k-1``.
    kinds
        Every column's kind, one of :data:`VARIABLE_KINDS`.
    cardinalities
        Number of categories ``k`` of every binary (``k = 2``) and categorical column,
        and of no other column.
    graph
        The true conditional-independence graph (undirected, over the columns), or
        ``None`` when it is unknown (real data).
    name
        A short name for reports.
    groups
        Optional group id per row (e.g. one person observed in several years).
        Partitioners keep a group's rows together so that no group sits on both sides
        of a train/test split (see :mod:`fedstruct.methods.fedngm.sources`).

    Raises
    ------
    DataError, UnknownVariableError, NonFiniteDataError
        From :meth:`validate`, called on construction.
    """

    frame: pd.DataFrame
    kinds: dict[str, str]
    cardinalities: dict[str, int]
    graph: Graph | None = field(default=None, repr=False)
    name: str = "mixed"
    groups: NDArray[np.int64] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", dict(self.kinds))
        cards = {k: int(v) for k, v in self.cardinalities.items()}
        object.__setattr__(self, "cardinalities", cards)
        if self.groups is not None:
            groups = np.asarray(self.groups)
            if groups.dtype.kind not in "iu":
                raise DataError(f"data set {self.name!r}: groups must be integer ids per row")
            groups = groups.astype(np.int64, copy=True)
            groups.setflags(write=False)
            object.__setattr__(self, "groups", groups)
        self.validate()

    # ----------------------------------------------------------------- views
    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in frame order."""
        return tuple(self.frame.columns)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return len(self.frame)

    @property
    def categorical(self) -> tuple[str, ...]:
        """Binary and categorical columns, in frame order."""
        return tuple(c for c in self.frame.columns if self.kinds[c] in CATEGORICAL_KINDS)

    @property
    def continuous(self) -> tuple[str, ...]:
        """Real and ordinal columns, in frame order."""
        return tuple(c for c in self.frame.columns if self.kinds[c] in CONTINUOUS_KINDS)

    def validate(self) -> None:
        """Check the table against its kinds and cardinalities.

        Raises
        ------
        DataError
            If the frame is empty or its column names are not unique strings, a kind
            is not one of :data:`VARIABLE_KINDS`, a cardinality is missing, extra or
            wrong (binary needs 2), a column has the wrong dtype, a code lies outside
            ``0..k-1``, the graph's variables differ from the columns, or ``groups``
            does not have one id per row.
        UnknownVariableError
            If a column has no kind, or a kind or cardinality names no column.
        NonFiniteDataError
            If a column holds NaN or infinite values.
        """
        frame, what = self.frame, f"data set {self.name!r}"
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{what}: frame must be a pandas DataFrame")
        if len(frame) == 0:
            raise DataError(f"{what} has no rows")
        cols = list(frame.columns)
        if any(not isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
            raise DataError(f"{what}: column names must be unique strings")
        for col in cols:
            if col not in self.kinds:
                raise UnknownVariableError(
                    f"{what}: column {col!r} has no kind; give it one of {list(VARIABLE_KINDS)}"
                )
        for var, kind in self.kinds.items():
            if var not in frame.columns:
                raise UnknownVariableError(f"{what}: kind given for {var!r}, which is no column")
            if kind not in VARIABLE_KINDS:
                message = unknown_choice_message("kind", kind, VARIABLE_KINDS)
                raise DataError(f"{what}: column {var!r}: {message}")
        for var in self.cardinalities:
            if var not in frame.columns:
                raise UnknownVariableError(
                    f"{what}: cardinality given for {var!r}, which is no column"
                )
        for col in cols:
            self._check_column(col, what)
        if self.graph is not None:
            if not isinstance(self.graph, Graph):
                raise DataError(f"{what}: graph must be a fedstruct Graph or None")
            if set(self.graph.names) != set(cols):
                raise DataError(
                    f"{what}: the graph's variables {sorted(self.graph.names)} differ from the "
                    f"columns {sorted(cols)}; give a graph over exactly the columns"
                )
        if self.groups is not None and self.groups.shape != (len(frame),):
            raise DataError(
                f"{what}: groups has shape {self.groups.shape}; give one id per row ({len(frame)})"
            )

    def _check_column(self, col: str, what: str) -> None:
        kind, values = self.kinds[col], self.frame[col]
        if kind in CATEGORICAL_KINDS:
            if col not in self.cardinalities:
                raise DataError(f"{what}: {kind} column {col!r} needs a cardinality")
            k = self.cardinalities[col]
            if (kind == "binary" and k != 2) or k < 2:
                raise DataError(
                    f"{what}: {kind} column {col!r} has cardinality {k}; "
                    + ("a binary column has 2" if kind == "binary" else "give at least 2")
                )
            if values.dtype != np.int64:
                raise DataError(
                    f"{what}: {kind} column {col!r} has dtype {values.dtype}; "
                    "store codes 0..k-1 as int64"
                )
            codes = values.to_numpy()
            bad = (codes < 0) | (codes >= k)
            if bad.any():
                raise DataError(
                    f"{what}: column {col!r} has code {int(codes[bad][0])} outside 0..{k - 1} "
                    f"in {int(bad.sum())} rows; recode it or raise its cardinality"
                )
            return
        if col in self.cardinalities:
            raise DataError(
                f"{what}: {kind} column {col!r} has a cardinality; only binary and "
                "categorical columns have one"
            )
        if values.dtype != np.float64:
            raise DataError(
                f"{what}: {kind} column {col!r} has dtype {values.dtype}; store it as float64"
            )
        bad = ~np.isfinite(values.to_numpy())
        if bad.any():
            raise NonFiniteDataError(
                f"{what}: column {col!r} has {int(bad.sum())} NaN or infinite values; "
                "impute or drop those rows"
            )


# ------------------------------------------------------------------ helpers
@dataclass(frozen=True)
class _Node:
    """The random parameters of one variable's mechanism (see :class:`MixedSCM`)."""

    kind: str
    parents: tuple[int, ...]
    # continuous child: per parent (w, a, b, v, sign) for a continuous parent or a
    # per-category offset vector for a categorical parent.
    # categorical child: per parent a (k,) weight row (continuous parent) or a
    # (k_parent, k) table (categorical parent); plus intercepts.
    edge: tuple[NDArray[np.float64], ...]
    intercept: NDArray[np.float64] | None
    r2: float


# ------------------------------------------------------------------ the generator
class MixedSCM:
    """A structural causal model over a DAG whose variables are of mixed kinds.

    The mechanisms are ours, chosen so that every edge of the DAG carries a
    detectable dependence and every variable is partly predictable from its
    neighbours. Parents enter through *features*: a continuous (real or ordinal)
    parent through its standardised value ``z`` (mean and standard deviation fixed on
    a pilot sample), a categorical or binary parent through its code.

    ``real``
        ``x = c (s - m) + sqrt(1 - r²) ε`` with ``ε ~ N(0, 1)`` and the signal
        ``s = Σ_p f_p``: for a continuous parent
        ``f_p(z) = σ (w tanh(a z + b) + v z)`` with ``w ~ U(0.5, 1.5)``,
        ``a ~ U(0.5, 2)``, ``b ~ U(-1, 1)``, ``v ~ U(0.25, 1)`` and a random sign
        ``σ`` (monotone, so each parent is correlated with the child); for a
        categorical parent ``f_p = e_p[code]`` with ``e_p ~ N(0, 1)`` per category.
        ``c`` and ``m`` make ``c (s - m)`` have mean 0 and variance ``r²`` on the
        pilot sample, so ``Var x ≈ 1`` and the parents explain a share
        ``r² ~ U(r2_range)`` of it. A root is ``N(0, 1)``.
    ``ordinal``
        A latent real computed as above, cut into ``n_levels`` ordered levels at the
        quantiles ``1/k, ..., (k-1)/k`` of its pilot sample (equal-frequency levels);
        stored as the level value ``0.0 .. k-1``. Children see the level, never the
        latent, so the DAG over the observed variables is the model's true graph.
    ``binary``, ``categorical``
        ``P(x = c | parents) = softmax(β + Σ_p g_p)_c`` with intercepts
        ``β ~ N(0, 0.5²)`` and, per parent, ``g_p = z u_p`` (``u_p ~ N(0, γ²)`` per
        category) for a continuous parent or ``g_p = G_p[code]`` (``G_p ~ N(0, γ²)``,
        one row per parent category) for a categorical one; ``γ = 1.5``.

    The pilot sample (``pilot_size`` rows) is drawn from the seed when the model is
    built; sampling with any seed uses the fixed thresholds and scales. Parameters of
    variable ``j`` come from their own random stream, spawned from the seed.

    Parameters
    ----------
    dag
        The causal DAG.
    kinds
        Every variable's kind, one of :data:`VARIABLE_KINDS`.
    seed
        Seed of the parameters and of the pilot sample.
    n_categories
        Number of categories of a ``categorical`` variable (>= 3; binary has 2).
    n_levels
        Number of levels of an ``ordinal`` variable (>= 2).
    r2_range
        Range of the share of a continuous variable's variance its parents explain.
    pilot_size
        Rows of the pilot sample that fixes the scales and the ordinal thresholds.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    UnknownVariableError
        If ``kinds`` misses a variable or names one the DAG does not have.
    ConfigError
        For an unknown kind or an out-of-range setting.
    """

    def __init__(
        self,
        dag: Graph,
        kinds: Mapping[str, str],
        *,
        seed: SeedLike,
        n_categories: int = 4,
        n_levels: int = 5,
        r2_range: tuple[float, float] = (0.4, 0.8),
        pilot_size: int = 20_000,
    ) -> None:
        self._kinds, (lo, hi) = check_model_settings(
            dag, kinds, r2_range, what="the MixedSCM's graph"
        )
        self._dag = dag
        self._names = dag.names
        self._n_categories = integer_at_least(
            n_categories, "n_categories", 3, "; use kind 'binary' for two categories"
        )
        self._n_levels = integer_at_least(n_levels, "n_levels", 2)
        pilot_size = integer_at_least(pilot_size, "pilot_size", 100)
        self._cards = {
            v: 2 if k == "binary" else self._n_categories
            for v, k in self._kinds.items()
            if k in CATEGORICAL_KINDS
        }
        index = {v: i for i, v in enumerate(self._names)}
        self._order = [index[v] for v in dag.topological_order()]
        root = make_rng(seed)
        streams = root.spawn(len(self._names))
        self._nodes = [
            self._draw_node(j, tuple(index[p] for p in dag.parents(v)), streams[j], (lo, hi))
            for j, v in enumerate(self._names)
        ]
        # Fixed by the pilot sample: per continuous variable the signal's affine map,
        # its feature standardisation, and the ordinal thresholds.
        self._affine: dict[int, tuple[float, float]] = {}
        self._feature: dict[int, tuple[float, float]] = {}
        self._thresholds: dict[int, NDArray[np.float64]] = {}
        self._forward(pilot_size, root.spawn(1)[0], calibrate=True)

    @classmethod
    def random(
        cls,
        dag: Graph,
        *,
        kinds: Mapping[str, str] | None = None,
        categorical_fraction: float = 0.3,
        binary_fraction: float = 0.1,
        ordinal_fraction: float = 0.1,
        n_categories: int = 4,
        n_levels: int = 5,
        seed: SeedLike,
        **kwargs: Any,
    ) -> MixedSCM:
        """A model with random kinds (unless ``kinds`` is given) and random mechanisms.

        ``round(fraction · d)`` variables of each of the categorical, binary and
        ordinal kinds, the rest real, assigned by a random permutation of the seed.

        Parameters
        ----------
        dag
            The causal DAG.
        kinds
            Every variable's kind; when given, the fractions are ignored.
        categorical_fraction, binary_fraction, ordinal_fraction
            Shares of the variables of each kind (sum at most 1).
        n_categories, n_levels, seed
            As in :class:`MixedSCM`; further keywords go to it too.

        Raises
        ------
        ConfigError
            If a fraction is outside ``[0, 1]`` or they sum above 1.
        """
        if kinds is None:
            fractions = {
                "categorical": fraction(categorical_fraction, "categorical_fraction"),
                "binary": fraction(binary_fraction, "binary_fraction"),
                "ordinal": fraction(ordinal_fraction, "ordinal_fraction"),
            }
            if sum(fractions.values()) > 1.0 + 1e-12:
                raise ConfigError(
                    f"categorical, binary and ordinal fractions sum to "
                    f"{sum(fractions.values()):g} > 1; lower them"
                )
            d = dag.n_nodes
            labels: list[str] = []
            for kind, frac in fractions.items():
                labels += [kind] * int(np.floor(frac * d + 0.5))
            if len(labels) > d:
                raise ConfigError(
                    f"the fractions ask for {len(labels)} non-real variables of {d}; lower them"
                )
            labels += ["real"] * (d - len(labels))
            perm = make_rng(child_seed(seed, 0)).permutation(d)
            kinds = {dag.names[int(perm[i])]: labels[i] for i in range(d)}
        return cls(
            dag,
            kinds,
            seed=child_seed(seed, 1),
            n_categories=n_categories,
            n_levels=n_levels,
            **kwargs,
        )

    # ----------------------------------------------------------------- views
    @property
    def graph(self) -> Graph:
        """The causal DAG."""
        return self._dag

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in column order."""
        return self._names

    @property
    def kinds(self) -> dict[str, str]:
        """Variable name -> kind."""
        return dict(self._kinds)

    @property
    def cardinalities(self) -> dict[str, int]:
        """Number of categories of each binary and categorical variable."""
        return dict(self._cards)

    @property
    def n_levels(self) -> int:
        """Number of levels of every ordinal variable."""
        return self._n_levels

    def thresholds(self, variable: str) -> NDArray[np.float64]:
        """The latent cut points of an ordinal variable (``n_levels - 1`` increasing values).

        Raises
        ------
        UnknownVariableError
            If the variable is unknown or not ordinal.
        """
        j = self._dag.index(variable)
        if j not in self._thresholds:
            raise UnknownVariableError(f"{variable!r} is {self._kinds[variable]}, not ordinal")
        return self._thresholds[j].copy()

    # ----------------------------------------------------------------- sampling
    def sample(self, n: int, *, seed: SeedLike) -> pd.DataFrame:
        """Draw ``n`` rows by ancestral sampling.

        Returns
        -------
        DataFrame
            Columns in :attr:`names` order; real and ordinal ``float64``, binary and
            categorical ``int64`` codes.

        Raises
        ------
        SampleSizeError
            If ``n`` is not a positive integer.
        DataError
            If the seed is not a non-negative integer (or a sequence of them).
        """
        n = check_sample_size(n)
        values = self._forward(n, make_rng(seed), calibrate=False)
        frame = pd.DataFrame(values, columns=list(self._names))
        for v in self._cards:
            frame[v] = frame[v].astype(np.int64)
        return frame

    def dataset(self, n: int, *, seed: SeedLike) -> MixedDataset:
        """``n`` rows as a :class:`MixedDataset` whose graph is the moral graph of the DAG."""
        return MixedDataset(
            frame=self.sample(n, seed=seed),
            kinds=self.kinds,
            cardinalities=self.cardinalities,
            graph=moral_graph(self._dag),
            name="mixed-scm",
        )

    # ----------------------------------------------------------------- internals
    def _draw_node(
        self,
        j: int,
        parents: tuple[int, ...],
        rng: np.random.Generator,
        r2_range: tuple[float, float],
    ) -> _Node:
        kind = self._kinds[self._names[j]]
        edge: list[NDArray[np.float64]] = []
        if kind in CONTINUOUS_KINDS:
            for p in parents:
                pk = self._cards.get(self._names[p])
                if pk is None:
                    w, a, v = rng.uniform(0.5, 1.5), rng.uniform(0.5, 2.0), rng.uniform(0.25, 1.0)
                    b, sign = rng.uniform(-1.0, 1.0), rng.choice((-1.0, 1.0))
                    edge.append(np.array([w, a, b, v, sign]))
                else:
                    edge.append(rng.standard_normal(pk))
            r2 = float(rng.uniform(*r2_range)) if parents else 0.0
            return _Node(kind, parents, tuple(edge), None, r2)
        k = self._cards[self._names[j]]
        intercept = rng.normal(0.0, 0.5, size=k)
        for p in parents:
            pk = self._cards.get(self._names[p])
            edge.append(rng.normal(0.0, 1.5, size=k if pk is None else (pk, k)))
        return _Node(kind, parents, tuple(edge), intercept, 0.0)

    def _features(self, p: int, values: NDArray[np.float64]) -> NDArray[np.float64]:
        mean, sd = self._feature[p]
        return (values[:, p] - mean) / sd

    def _signal(self, node: _Node, values: NDArray[np.float64]) -> NDArray[np.float64]:
        s = np.zeros(values.shape[0])
        for p, prm in zip(node.parents, node.edge, strict=True):
            if p in self._feature:
                w, a, b, v, sign = prm
                z = self._features(p, values)
                s += sign * (w * np.tanh(a * z + b) + v * z)
            else:
                s += prm[values[:, p].astype(np.int64)]
        return s

    def _logits(self, node: _Node, values: NDArray[np.float64]) -> NDArray[np.float64]:
        assert node.intercept is not None
        logits = np.broadcast_to(node.intercept, (values.shape[0], node.intercept.size)).copy()
        for p, prm in zip(node.parents, node.edge, strict=True):
            if p in self._feature:
                logits += self._features(p, values)[:, None] * prm
            else:
                logits += prm[values[:, p].astype(np.int64)]
        return logits

    def _forward(self, n: int, rng: np.random.Generator, *, calibrate: bool) -> NDArray[np.float64]:
        """Ancestral sampling of ``n`` rows; with ``calibrate``, fix scales on the way."""
        d = len(self._names)
        eps = rng.standard_normal((n, d))
        u = rng.random((n, d))
        values = np.empty((n, d))
        for j in self._order:
            node = self._nodes[j]
            if node.kind in CATEGORICAL_KINDS:
                cum = np.cumsum(softmax(self._logits(node, values)), axis=1)
                cum[:, -1] = 1.0
                values[:, j] = inverse_cdf(cum, u[:, j])
                continue
            signal = self._signal(node, values)
            if calibrate:
                sd = float(signal.std())
                scale = np.sqrt(node.r2) / sd if sd > 1e-12 else 0.0
                self._affine[j] = (float(scale), float(signal.mean()))
            scale, shift = self._affine[j]
            noise_sd = np.sqrt(1.0 - node.r2) if scale > 0.0 else 1.0
            latent = scale * (signal - shift) + noise_sd * eps[:, j]
            if node.kind == "ordinal":
                if calibrate:
                    q = np.arange(1, self._n_levels) / self._n_levels
                    self._thresholds[j] = np.quantile(latent, q)
                values[:, j] = np.searchsorted(self._thresholds[j], latent, side="right")
            else:
                values[:, j] = latent
            if calibrate:
                sd = float(values[:, j].std())
                self._feature[j] = (float(values[:, j].mean()), sd if sd > 1e-12 else 1.0)
        return values


def check_model_settings(
    dag: Graph,
    kinds: Mapping[str, str],
    r2_range: tuple[float, float],
    *,
    what: str,
    allowed: Sequence[str] = VARIABLE_KINDS,
) -> tuple[dict[str, str], tuple[float, float]]:
    """The checked settings every mixed model on a DAG shares: each variable's kind (in
    the DAG's order) and the range of the share of variance parents explain.

    Used by :class:`MixedSCM` and
    :class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`.

    Parameters
    ----------
    dag
        The causal DAG; ``what`` names it in the error message.
    kinds
        Every variable's kind, one of ``allowed``.
    r2_range
        ``(low, high)`` with ``0 <= low <= high < 1``.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    UnknownVariableError
        If ``kinds`` misses a variable or names one the DAG does not have.
    ConfigError
        For a kind not in ``allowed`` or an out-of-range ``r2_range``.
    """
    dag.require_dag(what)
    missing = [v for v in dag.names if v not in kinds]
    if missing:
        raise UnknownVariableError(f"kinds lacks variables {missing}; give every variable a kind")
    extra = [v for v in kinds if v not in dag]
    if extra:
        raise UnknownVariableError(f"kinds names {extra}, which are not variables of the DAG")
    for v in dag.names:
        if kinds[v] not in allowed:
            message = unknown_choice_message("kind", kinds[v], allowed)
            raise ConfigError(f"variable {v!r}: {message}")
    lo, hi = (float(r) for r in r2_range)
    if not 0.0 <= lo <= hi < 1.0:
        raise ConfigError(f"r2_range is {r2_range}; give 0 <= low <= high < 1")
    return {v: kinds[v] for v in dag.names}, (lo, hi)


def make_mixed_data(
    n_variables: int = 30,
    n_samples: int = 50_000,
    *,
    expected_degree: float = 2.0,
    categorical_fraction: float = 0.3,
    binary_fraction: float = 0.1,
    ordinal_fraction: float = 0.1,
    n_categories: int = 4,
    n_levels: int = 5,
    seed: SeedLike = 0,
) -> MixedDataset:
    """A synthetic mixed-type data set on a random Erdős–Rényi DAG.

    The DAG has ``n_variables`` nodes named ``X1..Xd`` with names shuffled over the
    causal order and ``expected_degree / 2`` expected edges per node (so each node has
    ``expected_degree`` neighbours on average; :func:`~fedstruct.graphs.random.erdos_renyi_dag`);
    the mechanisms are :meth:`MixedSCM.random`'s; the graph of the result is the
    DAG's moral graph. The DAG, the model and the sample use distinct streams of
    ``seed``.

    Raises
    ------
    ConfigError
        For an invalid size, degree or fraction.
    """
    d = integer_at_least(n_variables, "n_variables", 2)
    dag = erdos_renyi_dag(
        d,
        seed=np.random.default_rng(child_seed(seed, 0)),
        edges_per_node=expected_degree / 2,
        shuffle=True,
    )
    scm = MixedSCM.random(
        dag,
        categorical_fraction=categorical_fraction,
        binary_fraction=binary_fraction,
        ordinal_fraction=ordinal_fraction,
        n_categories=n_categories,
        n_levels=n_levels,
        seed=child_seed(seed, 1),
    )
    data = scm.dataset(n_samples, seed=child_seed(seed, 2))
    return MixedDataset(
        frame=data.frame,
        kinds=data.kinds,
        cardinalities=data.cardinalities,
        graph=data.graph,
        name=f"mixed-er{d}",
    )
