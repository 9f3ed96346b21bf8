"""Runs on a user's own per-site files: the sites a run's settings name, read once.

A run's settings name the files by ``sites`` (``--site PATH`` or ``NAME=PATH``, one
client each) or ``manifest`` (``--sites federation.yaml``), with ``missing`` and
``kinds`` applied to every site. :func:`site_federation` reads them with
:func:`fedstruct.data.read_federation` (every site's schema, one federation-wide
codebook, then each site's rows encoded with it) and keeps the result for the
process, so a method's slice turns it into its clients (its roles: FED-CD's regime,
F-CMs' inputs, concepts and task, CAFE's label, FedAvg's target) without reading a
file twice. :func:`truth_graph` reads ``--truth``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.sites import (
    SiteFederation,
    SiteSpec,
    parse_site_args,
    read_federation,
    read_manifest,
)
from fedstruct.errors import ConfigError
from fedstruct.graphs import Graph

__all__ = [
    "aligned",
    "file_metrics",
    "site_federation",
    "site_roles",
    "site_specs",
    "truth_graph",
]


def site_specs(settings: Any) -> tuple[SiteSpec, ...]:
    """The sites ``settings`` name (``sites`` or ``manifest``), without reading their files.

    Raises
    ------
    ConfigError
        If neither is given, or a manifest or a site argument is malformed.
    """
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
    every time (one read per process).
    """
    source = settings.manifest or tuple(settings.sites)
    return _read(source, json.dumps(settings.kinds, sort_keys=True), settings.missing,
                 json.dumps(roles, sort_keys=True, default=list))  # fmt: skip


@lru_cache(maxsize=4)
def _read(
    source: str | tuple[str, ...], kinds: str, missing: str | None, roles: str
) -> SiteFederation:
    given = {k: v for k, v in json.loads(roles).items() if v}
    return read_federation(
        source if isinstance(source, str) else list(source),
        kinds=json.loads(kinds) or None,
        missing=missing,
        **given,
    )


def truth_graph(settings: Any) -> Graph | None:
    """The graph of ``--truth FILE`` (graph.json, DOT, GraphML or BIF), or ``None``."""
    path = settings.truth or site_roles(settings).get("truth")
    return None if not path else read_graph_file(Path(path))


def aligned(truth: Graph, learned: Graph) -> tuple[Graph, Graph]:
    """Both graphs over the union of their variables (the truth's order first), so that
    scores can compare them: a variable one graph lacks is isolated in it."""
    names = [*truth.names, *(v for v in learned.names if v not in truth)]
    return truth.expand(names), learned.expand(names)


def file_metrics(federation: SiteFederation) -> dict[str, float]:
    """What a run on files reports about its data: rows per site, rows dropped for
    missing values (``missing = drop-rows``) and columns constant at a site."""
    metrics: dict[str, float] = {}
    for client in federation.clients:
        metrics[f"rows_{client.name}"] = float(client.n_rows)
        metrics[f"dropped_rows_{client.name}"] = float(federation.dropped_rows.get(client.name, 0))
        metrics[f"constant_columns_{client.name}"] = float(
            len(federation.constant.get(client.name, ()))
        )
    return metrics
