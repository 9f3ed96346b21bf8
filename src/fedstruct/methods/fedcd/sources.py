"""FED-CD's federations (§5.2, §6.2-6.4): observational plus interventional data.

The global data set has observational rows and rows per variable under a perfect
intervention; :func:`horizontal_interventions` gives every client a share of every
part (§6.2), :func:`vertical_interventions` gives clients disjoint intervened-variable
sets (§6.4). :func:`source` gives a run's data: the paper's federation
(:class:`InterventionTask`: the true DAG, its sampler and the split clients) or the
user's site files with their ``regime`` column (:class:`RegimeSites`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache, cached_property
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data import ClientData, ClientsOnDemand, load_network
from fedstruct.data._shared import SeedLike, check_sample_size, child_seed, make_rng
from fedstruct.data.client import OBSERVATIONAL
from fedstruct.data.discrete import UNIFORM
from fedstruct.data.partition import Sampler, balanced_sizes, check_n_clients, client_names
from fedstruct.data.scm import CategoricalSCM
from fedstruct.data.sites import LEVELLED, require_kinds
from fedstruct.errors import ConfigError, PartitionError, UnknownVariableError
from fedstruct.graphs import Graph
from fedstruct.graphs.random import GRAPH_KINDS, random_dag
from fedstruct.methods.fedcd.settings import ER, FedCDRun
from fedstruct.runs.source import OnSites, SiteFiles, Source

__all__ = [
    "InterventionTask",
    "RegimeSites",
    "horizontal_interventions",
    "roles",
    "source",
    "vertical_interventions",
]


def _draw_interventional(
    sampler: Sampler,
    n_observational: int,
    n_per_intervention: int,
    targets: Sequence[str] | None,
    seed: SeedLike,
    value: Any,
) -> tuple[list[str], pd.DataFrame, list[str], Callable[[str], pd.DataFrame]]:
    """The global data set ``D = D_obs ∪ D_int``: one seed stream per part and target.

    Returns the columns, the observational rows, the targets and ``rows_of(t)``, the
    rows under ``do(t = value)``, drawn the first time they are asked for (a client
    holding some targets only draws theirs). Target ``t`` is sampled with seed
    ``(seed, 1, position of t among the columns)``, so the global data set does not
    depend on how it is later split.
    """
    if n_observational != 0:
        check_sample_size(n_observational, "n_observational")
    check_sample_size(n_per_intervention, "n_per_intervention")
    obs = sampler.sample(max(n_observational, 1), seed=child_seed(seed, 0))
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

    @cache
    def rows_of(target: str) -> pd.DataFrame:
        seed_t = child_seed(seed, 1, columns.index(target))
        return sampler.sample(n_per_intervention, seed=seed_t, interventions={target: value})

    return columns, obs, chosen, rows_of


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
) -> ClientsOnDemand:
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
    k = check_n_clients(n_clients)
    names = client_names(k, names)
    columns, obs, chosen, rows_of = _draw_interventional(
        sampler, n_observational, n_per_intervention, targets, seed, value
    )
    if targets_per_client is None:
        sizes = balanced_sizes(len(chosen), k)
    else:
        sizes = [int(s) for s in targets_per_client]
        if len(sizes) != k or min(sizes) < 0 or sum(sizes) != len(chosen):
            raise PartitionError(
                f"targets_per_client {list(sizes)} must give each of {k} clients a count >= 0 "
                f"summing to the {len(chosen)} targets"
            )
    order = make_rng(child_seed(seed, 2)).permutation(len(chosen))
    groups = np.split(order, np.cumsum(sizes)[:-1])
    obs_parts = _observational_shares(len(obs), k, seed)
    own_targets = [sorted((chosen[i] for i in group), key=columns.index) for group in groups]
    for name, mine, obs_part in zip(names, own_targets, obs_parts, strict=True):
        if not mine and obs_part.size == 0:
            raise PartitionError(
                f"client {name!r} would get no rows (no targets, no observational rows); "
                "give it targets or more observational rows"
            )

    def build(c: int) -> ClientData:
        parts = [(t, rows_of(t)) for t in own_targets[c]]
        return _client(names[c], columns, obs.iloc[obs_parts[c]], parts)

    return ClientsOnDemand(names, build)


def _observational_shares(n: int, k: int, seed: SeedLike) -> list[NDArray[np.int64]]:
    """Positions of the ``n`` observational rows split IID in ``k`` balanced shares
    (all empty if there are none)."""
    if n == 0:
        return [np.zeros(0, dtype=np.int64)] * k
    if n < k:
        raise PartitionError(
            f"{n} observational rows cannot be shared by {k} clients; "
            "give at least one per client or none"
        )
    perm = make_rng(child_seed(seed, 3)).permutation(n)
    return [np.sort(p) for p in np.split(perm, np.cumsum(balanced_sizes(n, k))[:-1])]


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
) -> ClientsOnDemand:
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
    k = check_n_clients(n_clients)
    names = client_names(k, names)
    check_sample_size(n_per_intervention, "n_per_intervention")
    if n_per_intervention < k:
        raise PartitionError(
            f"{n_per_intervention} rows per target cannot give each of {k} clients one; "
            "raise n_per_intervention"
        )
    columns, obs, chosen, rows_of = _draw_interventional(
        sampler, n_observational, n_per_intervention, targets, seed, value
    )
    obs_parts = _observational_shares(len(obs), k, seed)
    cuts = np.cumsum(balanced_sizes(n_per_intervention, k))[:-1]
    shares: list[list[tuple[str, NDArray[np.int64]]]] = [[] for _ in range(k)]
    for t in chosen:
        perm = make_rng(child_seed(seed, 4, columns.index(t))).permutation(n_per_intervention)
        for c, p in enumerate(np.split(perm, cuts)):
            shares[c].append((t, np.sort(p)))

    def build(c: int) -> ClientData:
        parts = [(t, rows_of(t).iloc[p]) for t, p in shares[c]]
        return _client(names[c], columns, obs.iloc[obs_parts[c]], parts)

    return ClientsOnDemand(names, build)


def source(settings: FedCDRun, sites: SiteFiles | None) -> InterventionTask | RegimeSites:
    """The run's data: the user's ``sites`` read with their ``regime`` column
    (:class:`RegimeSites`), else the paper's interventional federation
    (:class:`InterventionTask`)."""
    if sites is None:
        return InterventionTask(settings)
    return RegimeSites(sites, bins=settings.bins, bin_grid=settings.bin_grid)


class InterventionTask(Source):
    """The paper's federation (§6.1, §9.5): a DAG (a random family or a bundled
    network) and a sampler with perfect interventions, whose observational and
    interventional rows are split ``horizontal`` or ``vertical`` over ``client-1 ..
    client-K``; each computed once, when first read.

    Parameters
    ----------
    settings
        The run's settings (``network``, ``variables``, ``split``, sample sizes,
        ``seed``).
    """

    #: No continuous column: every variable of the protocol is categorical.
    continuous: tuple[str, ...] = ()

    def __init__(self, settings: FedCDRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def _model(self) -> tuple[Graph, Sampler]:
        """The true DAG and a sampler with perfect interventions."""
        s = self.settings
        if s.network == ER or s.network in GRAPH_KINDS[1:]:
            kind = "random" if s.network == ER else s.network
            options = {"edges_per_node": s.edges_per_node} if kind == "random" else {}
            dag = random_dag(kind, s.variables, seed=s.seed, shuffle=True, **options)
            return dag, CategoricalSCM(dag, seed=s.seed, n_categories=s.cardinality)
        net = load_network(s.network)
        return net.graph, net

    @property
    def truth(self) -> Graph:
        """The true DAG the rows are sampled from."""
        return self._model[0]

    @property
    def sampler(self) -> Sampler:
        """The sampler of observational and interventional rows."""
        return self._model[1]

    @cached_property
    def _clients(self) -> ClientsOnDemand:
        s = self.settings
        common = {
            "n_observational": s.samples,
            "n_per_intervention": s.samples_per_intervention,
            "seed": s.seed,
        }
        if s.split == "vertical":
            return vertical_interventions(
                self.sampler,
                s.clients,
                targets_per_client=s.blocks(),
                **common,  # type: ignore[arg-type]
            )
        return horizontal_interventions(self.sampler, s.clients, **common)  # type: ignore[arg-type]

    def clients(self) -> ClientsOnDemand:
        """Every client's observational share and interventional rows, each built when
        first read (and kept: a run that reads them again gets the same rows)."""
        return self._clients


def roles(settings: FedCDRun, given: Mapping[str, Any]) -> dict[str, str]:
    """The ``regime`` column every site's file is read with (each row's intervention):
    the setting, else the manifest's (``given``).

    Raises
    ------
    ConfigError
        If no ``regime`` column is named.
    """
    regime = settings.regime or given.get("regime")
    if not regime:
        raise ConfigError(
            "FED-CD learns from interventions: name the column that says which variable "
            "each row intervened on, with --set regime=COLUMN (or regime: in the manifest)"
        )
    return {"regime": regime}


class RegimeSites(OnSites):
    """A user's site files read with the ``regime`` column as each row's intervention
    (:func:`roles`), as FED-CD clients: every site's columns in the federation's order
    (FED-CD assumes every client observes every variable, §5.2, and matches them by
    name). Categorical and ordinal columns keep their codes; ENCO models categorical
    variables only, so each continuous column (:attr:`continuous`) stays a number
    here and is cut into ``bins`` federated quantile bins by the method's own
    exchange (:class:`~fedstruct.methods.fedcd.FedCD`'s ``continuous``: per-site
    summaries, then per-site counts over a shared grid of ``bin_grid`` cells; never
    rows), on every backend alike; the run reports the cut points and saves them
    with the model.

    Parameters
    ----------
    sites
        The files, read with FED-CD's roles (a deployed node: its own; its server:
        none, the schema only).
    bins
        Bins per continuous column.
    bin_grid
        Cells of the shared grid the sites count over.
    """

    def __init__(self, sites: SiteFiles, bins: int = 4, bin_grid: int = 256):
        super().__init__(None, sites)
        self.bins_per_column = bins
        self.bin_grid = bin_grid

    @property
    def continuous(self) -> tuple[str, ...]:
        """The continuous columns (binned by the method)."""
        kinds = self.sites.schema.kinds
        return tuple(v for v in self.sites.schema.variables if kinds[v] == "continuous")

    def clients(self) -> list[ClientData]:
        """The sites' clients read here, each with the federation's variables in order
        (continuous columns as numbers: the method bins them).

        Raises
        ------
        UnknownVariableError
            If a site lacks one of the federation's variables.
        """
        schema = self.sites.schema
        levelled = [v for v in schema.variables if v not in self.continuous]
        require_kinds(schema, LEVELLED, method="FED-CD (ENCO)", variables=levelled)
        return self._raw

    @cached_property
    def _raw(self) -> list[ClientData]:
        return self._read()

    def _read(self) -> list[ClientData]:
        variables = self.sites.schema.variables
        clients = self.sites.clients()
        for client in clients:
            missing = [v for v in variables if v not in client.variables]
            if missing:
                raise UnknownVariableError(
                    f"site {client.name!r} lacks {missing}; FED-CD needs every site to "
                    "observe every variable (§5.2): add the columns, or leave the variables "
                    "out everywhere"
                )
        return [client.select(variables) for client in clients]
