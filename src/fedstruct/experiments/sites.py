"""Runs on a user's own per-site files: the sites a run's settings name, read once.

A run's settings name the files by ``sites`` (``--site PATH`` or ``NAME=PATH``, one
client each) or ``manifest`` (``--sites federation.yaml``), with ``missing`` and
``kinds`` applied to every site. :func:`site_federation` reads them with
:func:`fedstruct.data.read_federation` (every site's schema, one federation-wide
codebook, then each site's rows encoded with it) and keeps the result for the
process, so a method's slice turns it into its clients (its roles: FED-CD's regime,
F-CMs' inputs, concepts and task, CAFE's label, FedAvg's target) without reading a
file twice. :func:`truth_graph` reads ``--truth``.

On a deployment whose sites keep their files on their own SuperNodes
(``node_sites``), no process reads every file: each node reads its own, the
ServerApp none. The deployment's handshake (:mod:`fedstruct.experiments.flower.app`)
gives each process a :class:`DeployedSites` view (:func:`deployed_sites`): the
federation schema merged from what every site described of its file
(:class:`SiteFormat`), the sites whose files this process reads, and what each node
reported after encoding. The same slice code then builds a node's own client, or the
server's estimator and metrics, from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.sites import (
    FederationSchema,
    SchemaLimits,
    SiteFederation,
    SiteSchema,
    SiteSpec,
    check_roles,
    describe_site,
    merge_schemas,
    parse_site_args,
    read_federation,
    read_manifest,
)
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.graphs import Graph

__all__ = [
    "TABLES",
    "DeployedSites",
    "SiteFormat",
    "aligned",
    "check_truth",
    "deployed_schema",
    "deployed_sites",
    "file_metrics",
    "schema_limits",
    "site_federation",
    "site_roles",
    "site_specs",
    "truth_graph",
]


@dataclass(frozen=True)
class DeployedSites:
    """What one process of a deployment knows of sites whose files stay on their nodes.

    Parameters
    ----------
    here
        The sites whose files this process reads: a SuperNode's own; none on the
        ServerApp.
    schema
        The federation schema every site's node encodes with (its ``to_config`` dict).
    reports
        Site -> what its node reported after encoding its file (the server's view):
        ``dropped_rows`` and ``constant`` columns for tables.
    """

    here: tuple[SiteSpec, ...]
    schema: Mapping[str, Any]
    reports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_DEPLOYED: ContextVar[DeployedSites | None] = ContextVar("fedstruct_deployed_sites", default=None)


@contextmanager
def deployed_sites(view: DeployedSites) -> Iterator[DeployedSites]:
    """Let the slices in this block see ``view`` for runs with ``node_sites``."""
    token = _DEPLOYED.set(view)
    try:
        yield view
    finally:
        _DEPLOYED.reset(token)


def _deployed() -> DeployedSites:
    view = _DEPLOYED.get()
    if view is None:
        raise ConfigError(
            "--node-site names sites whose files stay on their own SuperNodes: run with "
            "--backend flower, each site's node started with 'fedstruct flower supernode "
            "--data FILE --name SITE'"
        )
    return view


def deployed_schema() -> Mapping[str, Any]:
    """The federation schema of this deployment's handshake (``node_sites`` runs)."""
    return _deployed().schema


def site_specs(settings: Any) -> tuple[SiteSpec, ...]:
    """The sites ``settings`` name (``sites`` or ``manifest``), without reading their
    files; with ``node_sites``, the sites whose files this process reads.

    Raises
    ------
    ConfigError
        If none is given, or a manifest or a site argument is malformed.
    """
    if settings.node_sites:
        return _deployed().here
    if settings.manifest:
        return read_manifest(settings.manifest).sites
    if settings.sites:
        return parse_site_args(settings.sites)
    raise ConfigError("no sites given; name each site's file with --site PATH or --sites FILE")


def site_roles(settings: Any) -> dict[str, Any]:
    """The manifest's top-level options (method roles such as ``regime``, ``task``)."""
    return dict(read_manifest(settings.manifest).options) if settings.manifest else {}


def site_federation(settings: Any, **roles: Any) -> SiteFederation:
    """Every site's client, encoded with one federation-wide codebook (cached per process).

    ``roles`` are the generic column roles the reader applies (``regime``,
    ``supervised``), over the manifest's; a slice reads its sites with the same roles
    every time (one read per process). With ``node_sites``: the clients of the sites
    this process reads (a node's own; none on the server) with the deployment's schema.
    """
    kinds, wanted = json.dumps(settings.kinds, sort_keys=True), _key(roles)
    limits = (settings.min_site_rows, settings.max_site_levels)
    if not settings.node_sites:
        source = settings.manifest or tuple(settings.sites)
        return _read(source, kinds, settings.missing, wanted, "", limits)
    view = _deployed()
    if view.here:
        here = tuple(f"{spec.name}={spec.path}" for spec in view.here)
        return _read(here, kinds, settings.missing, wanted, _key(view.schema), limits)
    return SiteFederation(
        [],
        FederationSchema.from_config(view.schema),
        {site: int(r.get("dropped_rows", 0)) for site, r in view.reports.items()},
        {site: tuple(r.get("constant", ())) for site, r in view.reports.items()},
        {},
    )


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=list)


@lru_cache(maxsize=4)
def _read(
    source: str | tuple[str, ...],
    kinds: str,
    missing: str | None,
    roles: str,
    schema: str,
    limits: tuple[int | None, int | None],
) -> SiteFederation:
    given = {k: v for k, v in json.loads(roles).items() if v}
    return read_federation(
        source if isinstance(source, str) else list(source),
        kinds=json.loads(kinds) or None,
        missing=missing,
        schema=FederationSchema.from_config(json.loads(schema)) if schema else None,
        min_site_rows=limits[0],
        max_site_levels=limits[1],
        **given,
    )


def schema_limits(settings: Any) -> SchemaLimits:
    """What a site's schema may disclose under ``settings`` (``min_site_rows``,
    ``max_site_levels``; empty: the manifest's, else the defaults)."""
    return SchemaLimits.of(settings.min_site_rows, settings.max_site_levels, site_roles(settings))


@dataclass(frozen=True)
class SiteFormat:
    """How one kind of site file takes part in a deployment's schema handshake.

    Attributes
    ----------
    describe
        ``describe(spec, settings, roles)``, on the site's node: what it reports of its
        file (metadata only, JSON-able).
    merge
        ``merge(descriptions, settings, roles)``, on the server: the federation schema
        (the ``schema`` of :class:`DeployedSites`) from every site's description.
    report
        ``report(settings, roles)``, on a node whose client was built: what the server
        learns of its encoded file (JSON-able).
    inputs
        ``inputs(settings, roles)``: what a model learned from these sites reads, saved
        with it (tables: the variables, their kinds and level names; images: the shape
        and class names), so that new rows are encoded as the sites' were.
    """

    describe: Callable[[SiteSpec, Any, Mapping[str, Any]], dict[str, Any]]
    merge: Callable[[Sequence[Mapping[str, Any]], Any, Mapping[str, Any]], dict[str, Any]]
    report: Callable[[Any, Mapping[str, Any]], dict[str, Any]]
    inputs: Callable[[Any, Mapping[str, Any]], dict[str, Any]]


def _describe_table(spec: SiteSpec, settings: Any, roles: Mapping[str, Any]) -> dict[str, Any]:
    schema, regime = describe_site(
        spec, kinds=settings.kinds, regime=roles.get("regime"), limits=schema_limits(settings)
    )
    return {**schema.to_config(), "regime": regime or ""}


def _merge_tables(
    descriptions: Sequence[Mapping[str, Any]], settings: Any, roles: Mapping[str, Any]
) -> dict[str, Any]:
    schema = merge_schemas([SiteSchema.from_config(d) for d in descriptions], settings.kinds)
    check_roles(
        schema,
        regime=roles.get("regime") or None,
        regime_sites=[str(d["site"]) for d in descriptions if d.get("regime")],
        supervised=roles.get("supervised") or (),
    )
    return schema.to_config()


def _report_table(settings: Any, roles: Mapping[str, Any]) -> dict[str, Any]:
    federation = site_federation(settings, **roles)
    (site,) = (client.name for client in federation.clients)
    return {
        "dropped_rows": federation.dropped_rows[site],
        "constant": list(federation.constant[site]),
    }


def _table_inputs(settings: Any, roles: Mapping[str, Any]) -> dict[str, Any]:
    schema = site_federation(settings, **roles).schema
    return {
        "variables": list(schema.variables),
        "kinds": dict(schema.kinds),
        "levels": {v: list(levels) for v, levels in schema.levels.items()},
    }


#: Table files (CSV, TSV, Parquet): :mod:`fedstruct.data.sites`' two passes.
TABLES = SiteFormat(_describe_table, _merge_tables, _report_table, _table_inputs)


def truth_graph(settings: Any) -> Graph | None:
    """The graph of ``--truth FILE`` (graph.json, DOT, GraphML or BIF), or ``None``."""
    path = settings.truth or site_roles(settings).get("truth")
    return None if not path else read_graph_file(Path(path))


def check_truth(settings: Any, roles: Mapping[str, Any]) -> None:
    """``--truth``'s graph names only variables of the sites (read with ``roles``), so
    that a misspelt or foreign graph is refused before round 1 rather than scored.

    Raises
    ------
    UnknownVariableError
        Naming the graph's variables that no site has, and the sites' variables.
    """
    truth = truth_graph(settings)
    if truth is None:
        return
    variables = site_federation(settings, **roles).schema.variables
    unknown = [v for v in truth.names if v not in variables]
    if unknown:
        path = settings.truth or site_roles(settings).get("truth")
        raise UnknownVariableError(
            f"--truth {path} names variables no site has: {_listed(unknown)}; the sites' "
            f"variables are {_listed(variables)}: give a graph over these names"
        )


def _listed(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def aligned(truth: Graph, learned: Graph) -> tuple[Graph, Graph]:
    """Both graphs over the union of their variables (the truth's order first), so that
    scores can compare them: a variable one graph lacks is isolated in it."""
    names = [*truth.names, *(v for v in learned.names if v not in truth)]
    return truth.expand(names), learned.expand(names)


def file_metrics(federation: SiteFederation) -> dict[str, float]:
    """What a run on files reports about its data: rows per site (after dropping),
    rows dropped for missing values (``missing = drop-rows``) and columns constant at
    a site, for every site of the schema (the server of a deployment holds no rows)."""
    metrics: dict[str, float] = {}
    for site, n_rows in federation.schema.rows.items():
        dropped = federation.dropped_rows.get(site, 0)
        metrics[f"rows_{site}"] = float(n_rows - dropped)
        metrics[f"dropped_rows_{site}"] = float(dropped)
        metrics[f"constant_columns_{site}"] = float(len(federation.constant.get(site, ())))
    return metrics
