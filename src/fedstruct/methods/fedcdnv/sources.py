"""The FedCDnv paper's federations (§4.1, App. D.1): variable subsets with latent variables.

A share ``latent`` (λ) of the variables is hidden from every client (absolute latent
variables), every client observes a share ``overlap`` (δ) of the rest, and holds
``n_k`` rows, ``n_k`` uniform in ``[min_samples, max_samples]``
(:func:`variable_subsets`, :func:`variable_subset_clients`). :class:`VariableSubsetTask`
is a run's instance: the source of rows (a synthetic network, a bundled one or the real
Sachs data), the split and the ground truth, the PAG over the integrated observed
variables; :func:`source` gives it, or the user's site files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from numbers import Real

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data import ClientData, ClientsOnDemand, load_network, random_discrete_network
from fedstruct.data._shared import SeedLike, check_sample_size, child_seed, make_rng, round_half_up
from fedstruct.data.datasets.sachs import RowSampler, load_sachs_data, sachs_ground_truth
from fedstruct.data.partition import Sampler, check_n_clients, client_names
from fedstruct.errors import PartitionError, SampleSizeError, UnknownVariableError
from fedstruct.graphs import Graph, dag_to_pag
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.methods.fedcdnv.settings import SACHS, SYNTHETIC, FedCDnvRun
from fedstruct.runs.source import SiteFiles, Source

__all__ = [
    "VariableSplit",
    "VariableSubsetTask",
    "source",
    "variable_subset_clients",
    "variable_subsets",
]


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
    k = check_n_clients(n_clients)
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
        d = round_half_up(n * (1.0 - float(latent)))
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
        dk = round_half_up(d * overlap)
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
) -> ClientsOnDemand:
    """Each client's own data set: ``n_k`` fresh rows of its variables (FedCDnv §4.1).

    ``n_k`` is drawn uniformly from the integers in ``[n_min, n_max]`` (FedCDnv's default
    ``[100, 2000]``); client ``k``'s rows are an independent sample from ``sampler``,
    restricted to ``split.clients[k]``, drawn when client ``k`` is first read (a node
    hosting one client draws only its rows).

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
    rng = make_rng(child_seed(seed, 0))
    sizes = rng.integers(lo, hi + 1, size=k)

    def draw(c: int) -> ClientData:
        frame = sampler.sample(int(sizes[c]), seed=child_seed(seed, 1, c))
        variables = list(split.clients[c])
        missing = [v for v in variables if v not in frame.columns]
        if missing:
            raise UnknownVariableError(
                f"client {names[c]!r} observes {missing}, which the sampler does not return"
            )
        return ClientData(names[c], frame.loc[:, variables].reset_index(drop=True))

    return ClientsOnDemand(names, draw)


def source(settings: FedCDnvRun, sites: SiteFiles | None) -> VariableSubsetTask | SiteFiles:
    """The run's data: the user's ``sites`` (FedCDnv reads every column, with no role;
    missing values are kept by default, ``Runnable.missing``, for its test-wise
    deletion), else the paper's federation (:class:`VariableSubsetTask`)."""
    return VariableSubsetTask(settings) if sites is None else sites


class VariableSubsetTask(Source):
    """One problem instance of the paper (§4.1): the source of rows (a synthetic
    network, a bundled one or the real Sachs data), the variable split, and the truth,
    the PAG over the integrated observed variables; each computed once, when first
    read.

    Parameters
    ----------
    settings
        The run's settings (``network``, ``clients``, ``latent``, ``overlap``, sample
        sizes, ``seed``).
    """

    def __init__(self, settings: FedCDnvRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def _model(self) -> tuple[Sampler, Graph]:
        """The sampler of rows and the DAG they come from."""
        s = self.settings
        if s.network == SACHS:
            return RowSampler(load_sachs_data(s.discretize)), sachs_ground_truth()
        if s.network == SYNTHETIC:
            dag = erdos_renyi_dag(
                s.variables, seed=s.seed, edges_per_node=s.edges_per_node, shuffle=True
            )
            network = random_discrete_network(
                dag, seed=s.seed, cardinality=s.cardinality, alpha=s.cpt_alpha
            )
            return network, dag
        network = load_network(s.network)
        return network, network.graph

    @property
    def sampler(self) -> Sampler:
        """Where every client's rows are drawn from."""
        return self._model[0]

    @property
    def dag(self) -> Graph:
        """The DAG over every variable, latent ones included."""
        return self._model[1]

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable of the model, latent ones included."""
        return self.dag.names

    @cached_property
    def split(self) -> VariableSplit:
        """The latent variables and each client's observed ones."""
        s = self.settings
        return variable_subsets(
            self.dag.names, s.clients, seed=s.seed, overlap=s.overlap, latent=s.latent
        )

    def graph_variables(self) -> tuple[str, ...]:
        """The integrated observed variables ``O`` (latent ones left out)."""
        return tuple(self.split.observed)

    def reference_rows(self, n: int, seed: int) -> pd.DataFrame:
        """``n`` fresh rows over ``O`` for the centralised reference (at most the real
        data's rows: Sachs' table is sampled without replacement)."""
        if isinstance(self.sampler, RowSampler):
            n = min(n, len(self.sampler.table))
        return self.sampler.sample(n, seed=seed)[list(self.split.observed)]

    @cached_property
    def truth(self) -> Graph:
        """The true PAG over the integrated observed variables (for the real Sachs data
        without latent variables, the consensus DAG itself)."""
        split = self.split
        if self.settings.network == SACHS and not split.latent:
            # The consensus network has no unshielded collider, so its PAG has no arrowhead
            # and orientations could not be scored at all: score them against the DAG.
            return self.dag.restrict(split.observed)
        return dag_to_pag(self.dag, split.latent).restrict(split.observed)

    @cached_property
    def _clients(self) -> ClientsOnDemand:
        s = self.settings
        return variable_subset_clients(
            self.sampler, self.split, seed=s.seed, n_range=(s.min_samples, s.max_samples)
        )

    def clients(self) -> ClientsOnDemand:
        """Every client's rows over its own variables, each drawn when first read (and
        kept: a run that reads them again gets the same rows, not a new draw)."""
        return self._clients
