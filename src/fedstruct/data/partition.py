"""Partitioners: how a data set, or a sampler, is split over federated clients.

* :func:`horizontal` — rows split IID (every client sees every variable).
* :func:`variable_subsets` + :func:`variable_subset_clients` — non-identical variable
  sets with absolute latent variables (FedCDnv §4.1 and App. D.1, Table 4).
* :func:`vertical_interventions` / :func:`horizontal_interventions` — observational plus
  interventional data, with disjoint or shared intervention targets (FED-CD §5.2, §6.2–6.4).
* :func:`label_skew` — long-tail class sizes then a Dirichlet split over clients (CAFE;
  Cao et al. 2019 for the long tail, Hsu et al. 2019 for the Dirichlet split).

No partitioner drops data silently: every row (or kept index) goes to exactly one
client, and impossible requests raise :class:`~fedstruct.errors.PartitionError` or
:class:`~fedstruct.errors.SampleSizeError` saying what to change. Clients are named
``client-1 .. client-K`` unless names are given. All randomness comes from the
``seed`` argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data.client import OBSERVATIONAL, ClientData
from fedstruct.data.discrete import UNIFORM, SeedLike, check_sample_size, make_rng
from fedstruct.errors import (
    PartitionError,
    SampleSizeError,
    UnknownVariableError,
    unknown_choice_message,
)

__all__ = [
    "LABEL_SKEW_SCHEMES",
    "LabelSkewSplit",
    "Sampler",
    "VariableSplit",
    "balanced_sizes",
    "client_names",
    "horizontal",
    "horizontal_interventions",
    "label_skew",
    "long_tail_counts",
    "variable_subset_clients",
    "variable_subsets",
    "vertical_interventions",
]


class Sampler(Protocol):
    """Anything that samples rows like :class:`~fedstruct.data.discrete.DiscreteNetwork`."""

    def sample(
        self, n: int, *, seed: SeedLike, interventions: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """``n`` rows, one column per (observed) variable."""
        ...


# ------------------------------------------------------------------ helpers
def _seed(seed: SeedLike, *tags: int) -> list[int]:
    """A child seed: the seed's entropy followed by ``tags`` (checked by ``make_rng``)."""
    parts = list(seed) if isinstance(seed, Sequence) and not isinstance(seed, str) else [seed]
    make_rng(parts)
    return [*(int(p) for p in parts), *tags]


def _check_clients(n_clients: object) -> int:
    if isinstance(n_clients, bool) or not isinstance(n_clients, int | np.integer) or n_clients < 1:
        raise PartitionError(f"n_clients must be a positive integer, got {n_clients!r}")
    return int(n_clients)


def client_names(n_clients: int, names: Sequence[str] | None = None) -> list[str]:
    """``names`` checked (one unique name per client) or ``client-1 .. client-K``.

    Raises
    ------
    PartitionError
        If the number of names differs from ``n_clients`` or names repeat.
    """
    if names is None:
        return [f"client-{k + 1}" for k in range(n_clients)]
    names = list(names)
    if len(names) != n_clients or len(set(names)) != len(names):
        raise PartitionError(
            f"give {n_clients} unique client names, got {len(names)} ({len(set(names))} unique)"
        )
    return names


def balanced_sizes(total: int, n_parts: int) -> list[int]:
    """``total`` split into ``n_parts`` sizes differing by at most one (larger ones first)."""
    q, r = divmod(total, n_parts)
    return [q + 1 if k < r else q for k in range(n_parts)]


def _split_sizes(
    total: int,
    n_clients: int,
    sizes: Sequence[int] | None,
    proportions: Sequence[float] | None,
    what: str,
) -> list[int]:
    """Client sizes summing to ``total``, each at least one."""
    if sizes is not None and proportions is not None:
        raise PartitionError("give either sizes or proportions, not both")
    if sizes is not None:
        out = [int(s) for s in sizes]
        if len(out) != n_clients:
            raise PartitionError(f"got {len(out)} sizes for {n_clients} clients")
        if sum(out) != total:
            raise PartitionError(
                f"sizes sum to {sum(out)} but there are {total} {what}; every one must go to "
                "exactly one client, so make the sizes sum to that number"
            )
    elif proportions is not None:
        p = np.asarray(proportions, dtype=np.float64)
        if p.shape != (n_clients,) or not np.all(np.isfinite(p)) or (p <= 0).any():
            raise PartitionError(f"give {n_clients} positive proportions, got {list(p)}")
        exact = p / p.sum() * total
        out = np.floor(exact).astype(int).tolist()
        # Largest remainder (Hamilton's method); ties go to the earlier client.
        for k in np.argsort(-(exact - np.floor(exact)), kind="stable")[: total - sum(out)]:
            out[int(k)] += 1
    else:
        if n_clients > total:
            raise PartitionError(
                f"cannot give {n_clients} clients at least one of {total} {what}; "
                "use fewer clients or more data"
            )
        out = balanced_sizes(total, n_clients)
    if min(out) < 1:
        k = int(np.argmin(out))
        raise PartitionError(
            f"client {k + 1} would get {out[k]} {what}; every client needs at least one"
        )
    return out


# ------------------------------------------------------------- horizontal
def horizontal(
    rows: pd.DataFrame,
    n_clients: int,
    *,
    seed: SeedLike,
    sizes: Sequence[int] | None = None,
    proportions: Sequence[float] | None = None,
    intervention: ArrayLike | None = None,
    supervised: Sequence[str] = (),
    names: Sequence[str] | None = None,
) -> list[ClientData]:
    """Split rows IID over clients: a random permutation cut into consecutive blocks.

    Parameters
    ----------
    rows
        The data; clients keep the original index labels, in the original order.
    n_clients
        Number of clients.
    seed
        Seed of the permutation.
    sizes, proportions
        Unequal splits: exact sizes summing to ``len(rows)``, or positive proportions
        rounded by the largest-remainder method. Default: sizes differing by at most one.
    intervention
        Optional per-row intervention codes (see :class:`ClientData`), split with the rows.
    supervised
        Columns every client supervises.
    names
        Client names (default ``client-1 ..``).

    Raises
    ------
    PartitionError
        If sizes do not sum to the number of rows, a client would get no row, or the
        client count or names are invalid.
    """
    k = _check_clients(n_clients)
    names = client_names(k, names)
    if not isinstance(rows, pd.DataFrame):
        raise PartitionError("rows must be a pandas DataFrame")
    n = len(rows)
    codes = None if intervention is None else np.asarray(intervention)
    if codes is not None and codes.shape != (n,):
        raise PartitionError(f"intervention must have one code per row ({n}), got {codes.shape}")
    cuts = np.cumsum(_split_sizes(n, k, sizes, proportions, "rows"))[:-1]
    perm = make_rng(seed).permutation(n)
    out = []
    for name, part in zip(names, np.split(perm, cuts), strict=True):
        idx = np.sort(part)
        out.append(
            ClientData(
                name,
                rows.iloc[idx],
                supervised=tuple(supervised),
                intervention=None if codes is None else codes[idx],
            )
        )
    return out


# -------------------------------------------------------- variable subsets
@dataclass(frozen=True)
class VariableSplit:
    """Which variables are latent, observed, and observed by each client.

    Attributes
    ----------
    observed
        ``O``, the union of the clients' variables (``d = |O|``), in input order.
    latent
        Absolute latent variables, observed by no client.
    clients
        ``O_k`` per client, each in input order.
    """

    observed: tuple[str, ...]
    latent: tuple[str, ...]
    clients: tuple[tuple[str, ...], ...]

    def overlap_matrix(self) -> NDArray[np.int64]:
        """``[a, b]`` = number of variables clients ``a`` and ``b`` share."""
        inc = np.array([[v in set(c) for v in self.observed] for c in self.clients], dtype=int)
        return inc @ inc.T


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def variable_subsets(
    variables: Sequence[str],
    n_clients: int,
    *,
    seed: SeedLike,
    overlap: float | None = None,
    latent: float | Sequence[str] = 0.0,
    per_client: int | None = None,
    max_attempts: int = 200,
) -> VariableSplit:
    """Choose latent variables and each client's observed variables (FedCDnv App. D.1).

    With ``n`` variables and latent ratio ``λ``, ``d = ⌊n(1-λ) + ½⌋`` variables are
    observed (the others, chosen at random, are latent); each client observes
    ``d_k = ⌊d·δ + ½⌋`` of them (``δ = overlap``), or ``per_client``. Every observed
    variable is observed by some client and every two clients share at least one
    variable, so the clients' graphs can be joined.

    Construction: up to ``max_attempts`` draws where each client picks ``d_k`` variables
    uniformly at random, kept when both conditions hold (rejection sampling: uniform
    over valid splits). If none is valid, a constructive split: the variables are
    dealt round-robin in random order (coverage), free slots filled at random,
    retried; and, failing that, one random "hub" variable observed by every client.

    Parameters
    ----------
    variables
        All variables of the underlying model (e.g. ``graph.names``).
    n_clients
        Number of clients ``m``.
    seed
        Seed of all draws.
    overlap
        ``δ`` in ``(0, 1]`` (give this or ``per_client``).
    latent
        ``λ`` in ``[0, 1)``, or the names of the latent variables.
    per_client
        ``d_k`` directly (overrides ``overlap``), e.g. 9 of Sachs' 11 variables.
    max_attempts
        Random draws before the constructive fallback.

    Raises
    ------
    PartitionError
        If the ratios are out of range, or no split can cover every observed variable
        with every two clients sharing one (the message says what to raise).
    UnknownVariableError
        If a latent name is not a variable.
    """
    k = _check_clients(n_clients)
    variables = tuple(variables)
    n = len(variables)
    if n == 0 or len(set(variables)) != n:
        raise PartitionError("variables must be a non-empty sequence of unique names")
    rng = make_rng(seed)
    if not isinstance(latent, Real):
        lat = {latent} if isinstance(latent, str) else set(latent)
        unknown = sorted(lat - set(variables))
        if unknown:
            raise UnknownVariableError(f"latent variables {unknown} are not among the variables")
    else:
        if not 0.0 <= float(latent) < 1.0:
            raise PartitionError(f"latent ratio must lie in [0, 1), got {latent}")
        d = _round_half_up(n * (1.0 - float(latent)))
        lat = {variables[i] for i in rng.choice(n, size=n - d, replace=False)}
    observed = tuple(v for v in variables if v not in lat)
    d = len(observed)
    if d == 0:
        raise PartitionError("no variable is left observed; lower the latent ratio")
    if (overlap is None) == (per_client is None):
        raise PartitionError("give exactly one of overlap (a ratio) and per_client (a count)")
    if overlap is not None:
        if not 0.0 < overlap <= 1.0:
            raise PartitionError(f"overlap must lie in (0, 1], got {overlap}")
        dk = _round_half_up(d * overlap)
    else:
        dk = int(per_client)  # type: ignore[arg-type]
    if not 1 <= dk <= d:
        raise PartitionError(
            f"each client would observe {dk} of {d} variables; it must be between 1 and {d}"
        )
    if k * dk < d:
        raise PartitionError(
            f"{k} clients observing {dk} variables each cannot cover all {d} observed variables; "
            f"raise overlap to at least {math.ceil(d / k) / d:.2f} or use more clients"
        )
    members = _draw_subsets(d, k, dk, rng, max_attempts)
    if members is None:
        raise PartitionError(
            f"cannot give {k} clients {dk} of {d} variables each so that every variable is "
            f"observed and every two clients share one; raise overlap (needs "
            f"{k} * ({dk} - 1) >= {d} - 1 for the hub construction) or use fewer clients"
        )
    clients = tuple(tuple(observed[i] for i in sorted(m)) for m in members)
    latent_names = tuple(v for v in variables if v in lat)
    return VariableSplit(observed=observed, latent=latent_names, clients=clients)


def _valid(members: list[NDArray[np.int64]], d: int) -> bool:
    inc = np.zeros((len(members), d), dtype=np.int64)
    for i, m in enumerate(members):
        inc[i, m] = 1
    return bool(inc.any(axis=0).all() and ((inc @ inc.T) > 0).all())


def _fill(base: list[list[int]], d: int, dk: int, rng: np.random.Generator) -> list[NDArray]:
    """Complete each client's set to ``dk`` variables with random others."""
    out = []
    for chosen in base:
        rest = np.setdiff1d(np.arange(d), chosen)
        extra = rng.choice(rest, size=dk - len(chosen), replace=False)
        out.append(np.concatenate([np.asarray(chosen, dtype=np.int64), extra]).astype(np.int64))
    return out


def _draw_subsets(
    d: int, k: int, dk: int, rng: np.random.Generator, max_attempts: int
) -> list[NDArray[np.int64]] | None:
    """Client index sets covering ``0..d-1`` with pairwise intersections, or ``None``."""
    for _ in range(max_attempts):
        members = [rng.choice(d, size=dk, replace=False) for _ in range(k)]
        if _valid(members, d):
            return members
    for _ in range(max_attempts):
        perm = rng.permutation(d)
        members = _fill([perm[c::k].tolist() for c in range(k)], d, dk, rng)
        if _valid(members, d):
            return members
    if k * (dk - 1) >= d - 1:
        perm = rng.permutation(d)
        hub, rest = int(perm[0]), perm[1:]
        members = _fill([[hub, *rest[c::k].tolist()] for c in range(k)], d, dk, rng)
        if _valid(members, d):
            return members
    return None


def variable_subset_clients(
    sampler: Sampler,
    split: VariableSplit,
    *,
    seed: SeedLike,
    n_range: tuple[int, int] = (100, 2000),
    names: Sequence[str] | None = None,
) -> list[ClientData]:
    """Each client's own data set: ``n_k`` fresh rows of its variables (FedCDnv §4.1).

    ``n_k`` is drawn uniformly from the integers in ``[n_min, n_max]`` (FedCDnv's default
    ``[100, 2000]``); client ``k``'s rows are an independent sample from ``sampler``,
    restricted to ``split.clients[k]``.

    Raises
    ------
    SampleSizeError
        If the range is not ``1 <= n_min <= n_max``.
    UnknownVariableError
        If the sampler does not return a client's variable.
    """
    lo, hi = n_range
    check_sample_size(lo, "n_min")
    check_sample_size(hi, "n_max")
    if lo > hi:
        raise SampleSizeError(f"n_range must satisfy n_min <= n_max, got {n_range}")
    k = len(split.clients)
    names = client_names(k, names)
    rng = make_rng(_seed(seed, 0))
    sizes = rng.integers(lo, hi + 1, size=k)
    out = []
    for c, (name, variables) in enumerate(zip(names, split.clients, strict=True)):
        frame = sampler.sample(int(sizes[c]), seed=_seed(seed, 1, c))
        missing = [v for v in variables if v not in frame.columns]
        if missing:
            raise UnknownVariableError(
                f"client {name!r} observes {missing}, which the sampler does not return"
            )
        out.append(ClientData(name, frame.loc[:, list(variables)].reset_index(drop=True)))
    return out


# -------------------------------------------------- interventional splits
def _draw_interventional(
    sampler: Sampler,
    n_observational: int,
    n_per_intervention: int,
    targets: Sequence[str] | None,
    seed: SeedLike,
    value: Any,
) -> tuple[list[str], pd.DataFrame, dict[str, pd.DataFrame]]:
    """The global data set ``D = D_obs ∪ D_int``: one seed stream per part and target.

    Target ``t`` is sampled with seed ``(seed, 1, position of t among the columns)``, so
    the global data set does not depend on how it is later split.
    """
    if n_observational != 0:
        check_sample_size(n_observational, "n_observational")
    check_sample_size(n_per_intervention, "n_per_intervention")
    obs = sampler.sample(max(n_observational, 1), seed=_seed(seed, 0))
    columns = [str(c) for c in obs.columns]
    obs = obs.iloc[:n_observational]
    chosen = list(columns) if targets is None else list(targets)
    unknown = [t for t in chosen if t not in columns]
    if unknown:
        raise UnknownVariableError(
            f"intervention targets {unknown} are not observed columns of the sampler; "
            f"choose among {columns}"
        )
    if len(set(chosen)) != len(chosen):
        raise PartitionError(f"intervention targets repeat: {chosen}")
    inter = {
        t: sampler.sample(
            n_per_intervention, seed=_seed(seed, 1, columns.index(t)), interventions={t: value}
        )
        for t in chosen
    }
    return columns, obs, inter


def _client(
    name: str, columns: list[str], obs: pd.DataFrame, parts: list[tuple[str, pd.DataFrame]]
) -> ClientData:
    """One client's rows: its observational share, then each target's rows, with codes."""
    frames = [f for f in [obs, *(frame for _, frame in parts)] if len(f)]
    codes = [np.full(len(obs), OBSERVATIONAL, dtype=np.int64)]
    codes += [np.full(len(frame), columns.index(t), dtype=np.int64) for t, frame in parts]
    rows = pd.concat(frames, ignore_index=True)
    return ClientData(name, rows, intervention=np.concatenate(codes))


def vertical_interventions(
    sampler: Sampler,
    n_clients: int,
    *,
    n_observational: int,
    n_per_intervention: int,
    seed: SeedLike,
    targets_per_client: Sequence[int] | None = None,
    targets: Sequence[str] | None = None,
    value: Any = UNIFORM,
    names: Sequence[str] | None = None,
) -> list[ClientData]:
    """Disjoint intervention targets per client (FED-CD §5.2 and §6.4, "vertical" split).

    The global data set has ``n_observational`` observational rows and
    ``n_per_intervention`` rows per target under ``do(target = value)``. The targets
    (default: every column) are shuffled and dealt to clients in blocks of
    ``targets_per_client`` (default: balanced; e.g. ``(16, 4)`` for FED-CD's 16–4 split);
    the observational rows are split IID, balanced. Each client holds its observational
    share plus all rows of its own targets, with :attr:`ClientData.intervention` codes
    (``-1`` observational, else the target's column index).

    Raises
    ------
    PartitionError
        If ``targets_per_client`` does not sum to the number of targets, a client would get
        no rows, or there are fewer observational rows than clients.
    SampleSizeError
        If a sample count is not a positive integer (``n_observational`` may be 0).
    UnknownVariableError
        If a target is not a column the sampler returns.
    """
    k = _check_clients(n_clients)
    names = client_names(k, names)
    columns, obs, inter = _draw_interventional(
        sampler, n_observational, n_per_intervention, targets, seed, value
    )
    chosen = list(inter)
    if targets_per_client is None:
        sizes = balanced_sizes(len(chosen), k)
    else:
        sizes = [int(s) for s in targets_per_client]
        if len(sizes) != k or min(sizes) < 0 or sum(sizes) != len(chosen):
            raise PartitionError(
                f"targets_per_client {list(sizes)} must give each of {k} clients a count >= 0 "
                f"summing to the {len(chosen)} targets"
            )
    order = make_rng(_seed(seed, 2)).permutation(len(chosen))
    groups = np.split(order, np.cumsum(sizes)[:-1])
    obs_parts = _observational_shares(obs, k, seed)
    out = []
    for c, name in enumerate(names):
        mine = sorted((chosen[i] for i in groups[c]), key=columns.index)
        if not mine and len(obs_parts[c]) == 0:
            raise PartitionError(
                f"client {name!r} would get no rows (no targets, no observational rows); "
                "give it targets or more observational rows"
            )
        out.append(_client(name, columns, obs_parts[c], [(t, inter[t]) for t in mine]))
    return out


def _observational_shares(obs: pd.DataFrame, k: int, seed: SeedLike) -> list[pd.DataFrame]:
    """Observational rows split IID in balanced shares (none if there are none)."""
    n = len(obs)
    if n == 0:
        return [obs] * k
    if n < k:
        raise PartitionError(
            f"{n} observational rows cannot be shared by {k} clients; "
            "give at least one per client or none"
        )
    perm = make_rng(_seed(seed, 3)).permutation(n)
    return [obs.iloc[np.sort(p)] for p in np.split(perm, np.cumsum(balanced_sizes(n, k))[:-1])]


def horizontal_interventions(
    sampler: Sampler,
    n_clients: int,
    *,
    n_observational: int,
    n_per_intervention: int,
    seed: SeedLike,
    targets: Sequence[str] | None = None,
    value: Any = UNIFORM,
    names: Sequence[str] | None = None,
) -> list[ClientData]:
    """Every client gets rows of every target (FED-CD §5.1 and §6.2, "horizontal" split).

    The same global data set as :func:`vertical_interventions` (same seed, same rows);
    the observational rows and each target's rows are split IID in balanced shares.

    Raises
    ------
    PartitionError
        If a target has fewer rows than clients, or there are fewer observational rows
        than clients (and more than none).
    SampleSizeError, UnknownVariableError
        As :func:`vertical_interventions`.
    """
    k = _check_clients(n_clients)
    names = client_names(k, names)
    check_sample_size(n_per_intervention, "n_per_intervention")
    if n_per_intervention < k:
        raise PartitionError(
            f"{n_per_intervention} rows per target cannot give each of {k} clients one; "
            "raise n_per_intervention"
        )
    columns, obs, inter = _draw_interventional(
        sampler, n_observational, n_per_intervention, targets, seed, value
    )
    obs_parts = _observational_shares(obs, k, seed)
    shares: list[list[tuple[str, pd.DataFrame]]] = [[] for _ in range(k)]
    for t, frame in inter.items():
        perm = make_rng(_seed(seed, 4, columns.index(t))).permutation(len(frame))
        for c, p in enumerate(np.split(perm, np.cumsum(balanced_sizes(len(frame), k))[:-1])):
            shares[c].append((t, frame.iloc[np.sort(p)]))
    return [_client(names[c], columns, obs_parts[c], shares[c]) for c in range(k)]


# --------------------------------------------------------------- label skew
#: How :func:`label_skew` applies the Dirichlet: per class over clients, or per client.
LABEL_SKEW_SCHEMES = ("class", "client")


@dataclass(frozen=True)
class LabelSkewSplit:
    """A long-tail + Dirichlet label split.

    Attributes
    ----------
    classes
        The distinct labels, sorted; class ``c`` is ``classes[c]``.
    class_counts
        ``n_c`` kept per class.
    kept
        Sorted indices (into ``labels``) kept by the long-tail subsampling.
    clients
        Sorted indices per client; together exactly ``kept``, pairwise disjoint.
    attempts
        Dirichlet draws needed to meet ``min_per_client``.
    """

    classes: NDArray[Any]
    class_counts: NDArray[np.int64]
    kept: NDArray[np.int64]
    clients: tuple[NDArray[np.int64], ...]
    attempts: int

    def client_class_counts(self, labels: ArrayLike) -> NDArray[np.int64]:
        """``(n_clients, n_classes)`` counts of each class per client."""
        y = np.asarray(labels)
        return np.array(
            [[int(np.sum(y[idx] == c)) for c in self.classes] for idx in self.clients],
            dtype=np.int64,
        )


def long_tail_counts(n_max: int, n_classes: int, imbalance_factor: float) -> list[int]:
    """``n_c = ⌊n_max · r^(c/(C-1))⌋``, ``r = 1/imbalance_factor``, for ``c = 0..C-1``.

    The exponential profile of Cao et al. (2019), *Learning imbalanced datasets with
    label-distribution-aware margin loss* (CIFAR-10-LT). A ``1e-9`` guard keeps values
    that are integers in exact arithmetic from rounding down.
    """
    if n_classes == 1:
        return [int(n_max)]
    return [
        math.floor(n_max * imbalance_factor ** (-c / (n_classes - 1)) + 1e-9)
        for c in range(n_classes)
    ]


def label_skew(
    labels: ArrayLike,
    n_clients: int,
    *,
    alpha: float,
    seed: SeedLike,
    imbalance_factor: float | None = None,
    min_per_client: int = 10,
    n_max: int | None = None,
    max_attempts: int = 1000,
    scheme: str = "class",
) -> LabelSkewSplit:
    """Long-tail class sizes, then a Dirichlet(α) label split over clients.

    1. Long tail (Cao et al. 2019), only if ``imbalance_factor`` is given: class ``c``
       (sorted labels) keeps ``n_c = ⌊n_max · r^(c/(C-1))⌋`` random samples,
       ``r = 1/imbalance_factor``; ``n_max`` defaults to the smallest class size, so
       every class can supply its quota (``imbalance_factor = 1`` therefore balances
       the classes at ``n_max``). With ``imbalance_factor=None`` (default) every sample
       is kept.
    2. Dirichlet split, by ``scheme``:

       * ``"class"`` (Yurochkin et al. 2019; NIID-Bench): for each class, proportions
         ``p ~ Dir(α·1_K)`` over the clients; the class's shuffled samples are cut at
         ``⌊cumsum(p)·n_c⌋``. Client sizes vary; the whole draw is repeated until every
         client holds at least ``min_per_client`` samples, at most ``max_attempts``
         times. With many clients and a small α most draws leave a client empty
         (``Dir(0.1)`` over 100 clients gives each class to ~10 of them).
       * ``"client"`` (Hsu, Qi & Brown 2019, §3): every client holds an even share
         ``N/K`` (±1) of the kept samples, drawn class by class from its own
         proportions ``q_k ~ Dir(α·p)``, ``p`` the kept class frequencies; a class
         whose samples are used up is dropped from ``q_k`` and the rest renormalised
         (clients are filled in a random order). No client is ever empty.

    Returns
    -------
    LabelSkewSplit
        Kept indices and per-client index arrays (into ``labels``).

    Raises
    ------
    PartitionError
        If ``alpha`` or ``imbalance_factor`` are out of range, a class has fewer samples
        than its quota or a quota is 0, or no draw meets ``min_per_client``.
    """
    k = _check_clients(n_clients)
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise PartitionError(f"labels must be a non-empty 1-D array, got shape {y.shape}")
    if not alpha > 0:
        raise PartitionError(f"alpha must be positive, got {alpha}")
    if imbalance_factor is not None and not imbalance_factor >= 1:
        raise PartitionError(f"imbalance_factor must be >= 1, got {imbalance_factor}")
    if imbalance_factor is None and n_max is not None:
        raise PartitionError("n_max applies to the long tail; give imbalance_factor too")
    if min_per_client < 0:
        raise PartitionError(f"min_per_client must be >= 0, got {min_per_client}")
    classes, inverse, available = np.unique(y, return_inverse=True, return_counts=True)
    if imbalance_factor is None:
        counts = [int(a) for a in available]
    else:
        top = int(available.min()) if n_max is None else int(n_max)
        counts = long_tail_counts(top, len(classes), float(imbalance_factor))
    for c, (want, have) in enumerate(zip(counts, available, strict=True)):
        if want > have or want < 1:
            raise PartitionError(
                f"class {classes[c].item()!r} would keep {want} samples but has {have}; "
                "choose n_max so that 1 <= n_c <= the class size for every class"
            )
    rng = make_rng(seed)
    per_class = [
        np.sort(rng.permutation(np.flatnonzero(inverse == c))[:want])
        for c, want in enumerate(counts)
    ]
    kept = np.sort(np.concatenate(per_class)).astype(np.int64)
    if kept.size < k * min_per_client:
        raise PartitionError(
            f"{kept.size} kept samples cannot give {k} clients {min_per_client} each; "
            "lower min_per_client or use fewer clients"
        )
    if scheme not in LABEL_SKEW_SCHEMES:
        raise PartitionError(unknown_choice_message("scheme", scheme, LABEL_SKEW_SCHEMES))
    split = _per_client if scheme == "client" else _per_class
    for attempt in range(1, (1 if scheme == "client" else max_attempts) + 1):
        clients = split(per_class, k, float(alpha), rng)
        if min(c.size for c in clients) >= min_per_client:
            return LabelSkewSplit(
                classes=classes,
                class_counts=np.array(counts, dtype=np.int64),
                kept=kept,
                clients=clients,
                attempts=attempt,
            )
    raise PartitionError(
        f"no Dirichlet(alpha={alpha}) split in {max_attempts} draws gave each of {k} clients "
        f"at least {min_per_client} samples; raise alpha, lower min_per_client, use fewer "
        "clients or raise max_attempts"
    )


def _per_class(
    per_class: list[NDArray[np.int64]], k: int, alpha: float, rng: np.random.Generator
) -> tuple[NDArray[np.int64], ...]:
    """Each class cut over the clients by ``Dir(α·1_K)`` (scheme ``"class"``)."""
    buckets: list[list[NDArray[np.int64]]] = [[] for _ in range(k)]
    for idx in per_class:
        p = rng.dirichlet(np.full(k, alpha))
        cuts = (np.cumsum(p) * idx.size).astype(np.int64)[:-1]
        for c, part in enumerate(np.split(rng.permutation(idx), cuts)):
            buckets[c].append(part)
    return tuple(np.sort(np.concatenate(b)).astype(np.int64) for b in buckets)


def _per_client(
    per_class: list[NDArray[np.int64]], k: int, alpha: float, rng: np.random.Generator
) -> tuple[NDArray[np.int64], ...]:
    """Even client sizes, each filled from its own ``Dir(α·p)`` class mix (scheme
    ``"client"``)."""
    pools = [list(rng.permutation(idx)) for idx in per_class]
    left = np.array([len(p) for p in pools], dtype=np.float64)
    prior = left / left.sum()
    sizes = balanced_sizes(int(left.sum()), k)
    clients: list[NDArray[np.int64]] = [np.empty(0, dtype=np.int64)] * k
    for client in rng.permutation(k):
        q = rng.dirichlet(alpha * prior + 1e-12)
        taken: list[int] = []
        need = sizes[client]
        while need:
            w = q * (left > 0)
            w = w / w.sum() if w.sum() > 0 else (left > 0) / (left > 0).sum()
            draw = np.minimum(rng.multinomial(need, w), left.astype(np.int64))
            for c in np.flatnonzero(draw):
                n = int(draw[c])
                taken += pools[c][:n]
                del pools[c][:n]
                left[c] -= n
                need -= n
        clients[client] = np.sort(np.asarray(taken, dtype=np.int64))
    return tuple(clients)
