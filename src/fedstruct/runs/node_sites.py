"""Sites that keep their files on their own SuperNodes: the schema handshake's steps.

A deployment run with ``node_sites`` never has one process read every file. Its
handshake, without the transport (:mod:`fedstruct.deployment.app` carries
it over Flower; tests call the steps in one process):

1. :func:`describe` — on each site's node: what the method's
   :class:`~fedstruct.data.formats.SiteFormat` reports of the node's own file
   (names, kinds, level names and row count; or shape, class names and counts),
   refused if it would disclose too much (too few rows, too many levels, an
   identifier column, names, free text: ``min_site_rows``, ``max_site_levels``; the
   run's kinds, the coordinator's, declare no column of the site) and audited before
   it leaves, as every reply is;
2. :func:`merge` — on the server: the federation schema from every description;
3. :func:`build_own` — on each node: the run's source over its own file
   (:func:`~fedstruct.runs.source.node_view`), its client encoded with that
   schema (every check of the method's run runs here), and its report to the
   server (rows dropped, constant columns), audited like the description;
4. the server runs the method on the source over
   :func:`~fedstruct.runs.source.server_view`: the schema and the reports, no
   file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fedstruct.data.client import ClientData
from fedstruct.data.sites import SiteSpec
from fedstruct.errors import ProtocolError
from fedstruct.privacy.audit import audit_description
from fedstruct.runs.contract import Runnable
from fedstruct.runs.sites import describe_file, merge_descriptions, schema_limits
from fedstruct.runs.source import Source, node_view

__all__ = ["build_own", "describe", "merge"]


def describe(entry: Runnable, settings: Any, spec: SiteSpec) -> dict[str, Any]:
    """Step 1, on the site's node: the description of its own file (metadata only),
    audited before it leaves (:func:`~fedstruct.privacy.audit.audit_description`).

    Raises
    ------
    FedstructError
        The file is bad or its schema would disclose too much (``min_site_rows``,
        ``max_site_levels``, an identifier column), naming the site and the column.
    """
    description = describe_file(entry.site_format, spec, settings, entry.roles(settings, {}))
    audit_description(description, schema_limits(settings, {}), spec.name, "describe")
    return description


def merge(entry: Runnable, settings: Any, descriptions: Sequence[Mapping[str, Any]]) -> dict:
    """Step 2, on the server: the federation schema from every site's description."""
    return merge_descriptions(entry.site_format, descriptions, settings, entry.roles(settings, {}))


def build_own(
    entry: Runnable, settings: Any, spec: SiteSpec, schema: Mapping[str, Any]
) -> tuple[Source, ClientData, dict[str, Any]]:
    """Step 3, on the site's node: the run's source over its own file, its client's
    data and its report.

    Raises
    ------
    FedstructError
        Whatever the method's run finds wrong with the file (missing values, a
        text column where numbers are needed, ...), named by site and column.
    """
    source = entry.resolve(settings, node_view(settings, spec, schema))
    clients = list(source.clients())
    if [c.name for c in clients] != [spec.name] or source.sites is None:
        raise ProtocolError(
            f"{entry.name}: site {spec.name!r}'s node built clients "
            f"{[c.name for c in clients]} from its own file; expected just its own"
        )
    report = source.sites.own_report()
    audit_description(report, schema_limits(settings, {}), spec.name, "report")
    return source, clients[0], report
