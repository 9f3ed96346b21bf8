"""Runs on a user's own per-site files: the sites a run's settings name, read once.

A run's settings name the files by ``sites`` (``--site PATH`` or ``NAME=PATH``, one
client each: :func:`~fedstruct.experiments.site_args.parse_site_args`) or
``manifest`` (``--sites federation.yaml``), with ``missing`` and ``kinds`` applied to
every site (:func:`site_options`). :func:`read_sites` reads them in the method's
:class:`~fedstruct.data.formats.SiteFormat` (tables: every site's schema, one
federation-wide codebook, then each site's rows encoded with it; images: the class
codebook) and keeps the result for the process, so a method's slice turns it into its
clients (its roles: FED-CD's regime, F-CMs' inputs, concepts and task, CAFE's label,
FedAvg's target) without reading a file twice; :func:`site_federation` is the tables'.
:func:`truth_graph` reads ``--truth``.

On a deployment whose sites keep their files on their own SuperNodes
(``node_sites``), no process reads every file: each node reads its own, the
ServerApp none. The deployment's handshake (:mod:`fedstruct.experiments.flower.app`)
gives each process a :class:`DeployedSites` view (:func:`deployed_sites`): the
federation schema merged from what every site described of its file
(:func:`describe_file`, :func:`merge_descriptions`), the sites whose files this
process reads, and what each node reported after encoding. The same slice code then
builds a node's own client, or the server's estimator and metrics, from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedstruct.data.formats import TABLES, SiteFormat, SiteOptions
from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.sites import (
    FederationSchema,
    Manifest,
    SchemaLimits,
    SiteFederation,
    SiteSpec,
    read_manifest,
)
from fedstruct.errors import ConfigError, ProtocolError, UnknownVariableError
from fedstruct.experiments.site_args import parse_site_args
from fedstruct.graphs import Graph

__all__ = [
    "DeployedSites",
    "aligned",
    "check_truth",
    "deployed_schema",
    "deployed_sites",
    "describe_file",
    "file_metrics",
    "merge_descriptions",
    "read_sites",
    "schema_limits",
    "site_federation",
    "site_inputs",
    "site_options",
    "site_report",
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


def site_options(settings: Any) -> SiteOptions:
    """How every site's file is read under ``settings`` (``kinds``, ``missing``, and
    what a site's schema may disclose: :func:`schema_limits`)."""
    return SiteOptions(
        kinds=dict(settings.kinds or {}), missing=settings.missing, limits=schema_limits(settings)
    )


def read_sites(site_format: SiteFormat[Any], settings: Any, roles: Mapping[str, Any]) -> Any:
    """The sites ``settings`` name, read in ``site_format`` with the method's column
    ``roles`` (``regime``, ``supervised``: empty ones are not given), cached per
    process: a slice reads its sites with the same roles every time. With
    ``node_sites``: the sites this process reads (a node's own; none on the server),
    with the deployment's schema.
    """
    options = _key(asdict(site_options(settings)))
    given = _key({role: value for role, value in roles.items() if value})
    if not settings.node_sites:
        source = settings.manifest or _pairs(parse_site_args(settings.sites))
        return _read(site_format, source, options, given, "")
    view = _deployed()
    return _read(site_format, _pairs(view.here), options, given, _key(view.schema))


def _pairs(specs: Sequence[SiteSpec]) -> tuple[tuple[str, str], ...]:
    return tuple((spec.name, str(spec.path)) for spec in specs)


def site_federation(settings: Any, **roles: Any) -> SiteFederation:
    """Every site's table, encoded with one federation-wide codebook (cached per process).

    ``roles`` are the generic column roles the reader applies (``regime``,
    ``supervised``), over the manifest's. With ``node_sites``: the clients of the sites
    this process reads (a node's own) with the deployment's schema; on the server, the
    schema and what every node reported, no client.
    """
    if settings.node_sites and not _deployed().here:
        view = _deployed()
        return SiteFederation(
            [],
            FederationSchema.from_config(view.schema),
            {site: int(r.get("dropped_rows", 0)) for site, r in view.reports.items()},
            {site: tuple(r.get("constant", ())) for site, r in view.reports.items()},
            {},
        )
    return read_sites(TABLES, settings, roles)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=list)


@lru_cache(maxsize=4)
def _read(
    site_format: SiteFormat[Any],
    source: str | tuple[tuple[str, str], ...],
    options: str,
    roles: str,
    schema: str,
) -> Any:
    if isinstance(source, str):
        sites = read_manifest(source)
    else:
        sites = Manifest(tuple(SiteSpec(name, Path(path), {}) for name, path in source))
    given = json.loads(options)
    given["limits"] = SchemaLimits(**given["limits"])
    return site_format.read(
        sites, SiteOptions(**given), json.loads(roles), json.loads(schema) if schema else None
    )


def schema_limits(settings: Any) -> SchemaLimits:
    """What a site's schema may disclose under ``settings`` (``min_site_rows``,
    ``max_site_levels``; empty: the manifest's, else the defaults)."""
    return SchemaLimits.of(settings.min_site_rows, settings.max_site_levels, site_roles(settings))


def describe_file(
    site_format: SiteFormat[Any], spec: SiteSpec, settings: Any, roles: Mapping[str, Any]
) -> dict[str, Any]:
    """What site ``spec`` reports of its file (metadata only, JSON-able), on its node."""
    return site_format.describe(spec, site_options(settings), roles)


def merge_descriptions(
    site_format: SiteFormat[Any],
    descriptions: Sequence[Mapping[str, Any]],
    settings: Any,
    roles: Mapping[str, Any],
) -> dict[str, Any]:
    """The federation schema from every site's description, on the server."""
    return site_format.merge(descriptions, site_options(settings), roles)


def site_report(
    site_format: SiteFormat[Any], settings: Any, roles: Mapping[str, Any]
) -> dict[str, Any]:
    """What the server learns of a node's encoded file (the node reads only its own).

    Raises
    ------
    ProtocolError
        If this process read other than one site.
    """
    read = read_sites(site_format, settings, roles)
    names = [client.name for client in read.clients]
    if len(names) != 1:
        raise ProtocolError(f"a node reports on its own site only; it read {names}")
    return site_format.report(read, names[0])


def site_inputs(
    site_format: SiteFormat[Any], settings: Any, roles: Mapping[str, Any]
) -> dict[str, Any]:
    """What a model learned from the sites reads, saved with it (tables: the variables,
    their kinds and level names; images: the shape and class names)."""
    return site_format.inputs(read_sites(site_format, settings, roles))


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
