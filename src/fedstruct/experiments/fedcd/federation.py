"""FED-CD's federations (§5.2, §6.2-6.4): observational plus interventional data.

The global data set has observational rows and rows per variable under a perfect
intervention; :func:`horizontal_interventions` gives every client a share of every
part (§6.2), :func:`vertical_interventions` gives clients disjoint intervened-variable
sets (§6.4). :func:`build_federation` builds the run's clients from its settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.data import ClientData, load_network
from fedstruct.data._shared import SeedLike, check_sample_size, child_seed, make_rng
from fedstruct.data.client import OBSERVATIONAL
from fedstruct.data.discrete import UNIFORM
from fedstruct.data.partition import Sampler, balanced_sizes, check_n_clients, client_names
from fedstruct.data.scm import CategoricalSCM
from fedstruct.data.sites import LEVELLED, SiteFederation, require_kinds
from fedstruct.errors import ConfigError, PartitionError, UnknownVariableError
from fedstruct.experiments.fedcd.settings import ER, FedCDRun
from fedstruct.experiments.sites import site_federation, site_roles
from fedstruct.graphs import Graph
from fedstruct.graphs.random import GRAPH_KINDS, random_dag

__all__ = [
    "build_federation",
    "horizontal_interventions",
    "site_clients",
    "site_data",
    "site_roles_of",
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
) -> tuple[list[str], pd.DataFrame, dict[str, pd.DataFrame]]:
    """The global data set ``D = D_obs ∪ D_int``: one seed stream per part and target.

    Target ``t`` is sampled with seed ``(seed, 1, position of t among the columns)``, so
    the global data set does not depend on how it is later split.
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
    inter = {
        t: sampler.sample(
            n_per_intervention, seed=child_seed(seed, 1, columns.index(t)), interventions={t: value}
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
    k = check_n_clients(n_clients)
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
    order = make_rng(child_seed(seed, 2)).permutation(len(chosen))
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
    perm = make_rng(child_seed(seed, 3)).permutation(n)
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
    k = check_n_clients(n_clients)
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
        perm = make_rng(child_seed(seed, 4, columns.index(t))).permutation(len(frame))
        for c, p in enumerate(np.split(perm, np.cumsum(balanced_sizes(len(frame), k))[:-1])):
            shares[c].append((t, frame.iloc[np.sort(p)]))
    return [_client(names[c], columns, obs_parts[c], shares[c]) for c in range(k)]


def source(s: FedCDRun) -> tuple[Graph, object]:
    """The true DAG and a sampler with perfect interventions."""
    if s.network == ER or s.network in GRAPH_KINDS[1:]:
        kind = "random" if s.network == ER else s.network
        options = {"edges_per_node": s.edges_per_node} if kind == "random" else {}
        dag = random_dag(kind, s.variables, seed=s.seed, shuffle=True, **options)
        return dag, CategoricalSCM(dag, seed=s.seed, n_categories=s.cardinality)
    net = load_network(s.network)
    return net.graph, net


def build_federation(s: FedCDRun) -> list[ClientData]:
    """Every client's observational share and interventional rows (§6.1, §9.5), or the
    sites' files (:func:`site_clients`)."""
    if s.from_files:
        return site_clients(s)
    _, sampler = source(s)
    common = {
        "n_observational": s.samples,
        "n_per_intervention": s.samples_per_intervention,
        "seed": s.seed,
    }
    if s.split == "vertical":
        return vertical_interventions(
            sampler,
            s.clients,
            targets_per_client=s.blocks(),
            **common,  # type: ignore[arg-type]
        )
    return horizontal_interventions(sampler, s.clients, **common)  # type: ignore[arg-type]


def site_roles_of(s: FedCDRun) -> dict[str, str]:
    """The ``regime`` column every site's file is read with (each row's intervention).

    Raises
    ------
    ConfigError
        If no ``regime`` column is named.
    """
    regime = s.regime or site_roles(s).get("regime")
    if not regime:
        raise ConfigError(
            "FED-CD learns from interventions: name the column that says which variable "
            "each row intervened on, with --set regime=COLUMN (or regime: in the manifest)"
        )
    return {"regime": regime}


def site_data(s: FedCDRun) -> SiteFederation:
    """The sites' files read with the ``regime`` column as each row's intervention."""
    return site_federation(s, **site_roles_of(s))


def site_clients(s: FedCDRun) -> list[ClientData]:
    """The sites' files as FED-CD clients (:func:`site_data`), every site's columns in
    the federation's order (FED-CD assumes every client observes every variable, §5.2,
    and matches them by name).

    Raises
    ------
    DataError
        If a variable is not categorical or ordinal.
    UnknownVariableError
        If a site lacks one of the federation's variables.
    """
    federation = site_data(s)
    require_kinds(federation.schema, LEVELLED, method="FED-CD (ENCO)")
    variables = federation.schema.variables
    for client in federation.clients:
        missing = [v for v in variables if v not in client.variables]
        if missing:
            raise UnknownVariableError(
                f"site {client.name!r} lacks {missing}; FED-CD needs every site to observe "
                "every variable (§5.2): add the columns, or leave the variables out everywhere"
            )
    return [client.select(variables) for client in federation.clients]
