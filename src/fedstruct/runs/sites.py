"""What a run's settings say of a user's per-site files, before any is read.

A run's settings name the files by ``sites`` (``--site PATH`` or ``NAME=PATH``, one
client each: :func:`~fedstruct.runs.site_args.parse_site_args`) or
``manifest`` (``--sites federation.yaml``), with ``missing`` and ``kinds`` applied to
every site (:func:`site_options`) and what a site's schema may disclose
(:func:`schema_limits`). The files are read once per run, by the run's source
(:mod:`fedstruct.runs.source`); on a deployment each node describes its own
file (:func:`describe_file`) and the server merges the descriptions
(:func:`merge_descriptions`). :func:`aligned` and :func:`file_metrics` serve the runs'
scores and reports.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from fedstruct.data.formats import SiteFormat, SiteOptions
from fedstruct.data.sites import (
    KINDS,
    SchemaLimits,
    SiteFederation,
    SiteSpec,
    read_manifest,
)
from fedstruct.errors import ConfigError, FedstructWarning
from fedstruct.graphs import Graph
from fedstruct.runs.site_args import parse_site_args

__all__ = [
    "aligned",
    "describe_file",
    "file_metrics",
    "merge_descriptions",
    "schema_limits",
    "site_options",
    "site_roles",
    "site_specs",
    "warn_imputed_unobserved",
]


def site_specs(settings: Any) -> tuple[SiteSpec, ...]:
    """The sites ``settings`` name (``sites`` or ``manifest``), without reading their
    files.

    Raises
    ------
    ConfigError
        If none is given, or a manifest or a site argument is malformed.
    """
    if settings.manifest:
        return read_manifest(settings.manifest).sites
    if settings.sites:
        return parse_site_args(settings.sites)
    raise ConfigError("no sites given; name each site's file with --site PATH or --sites FILE")


def site_roles(settings: Any) -> dict[str, Any]:
    """The manifest's top-level options (method roles such as ``regime``, ``task``)."""
    return dict(read_manifest(settings.manifest).options) if settings.manifest else {}


def site_options(settings: Any, manifest: Mapping[str, Any] | None = None) -> SiteOptions:
    """How every site's file is read under ``settings`` (``kinds``, ``missing``, and
    what a site's schema may disclose: :func:`schema_limits`), with the ``manifest``'s
    options when given (else read from ``settings.manifest``)."""
    return SiteOptions(
        kinds=dict(settings.kinds or {}),
        missing=settings.missing,
        limits=schema_limits(settings, manifest),
    )


def schema_limits(settings: Any, manifest: Mapping[str, Any] | None = None) -> SchemaLimits:
    """What a site's schema may disclose under ``settings`` (``min_site_rows``,
    ``max_site_levels``; empty: the ``manifest``'s options, else the defaults)."""
    given = site_roles(settings) if manifest is None else manifest
    return SchemaLimits.of(settings.min_site_rows, settings.max_site_levels, given)


def describe_file(
    site_format: SiteFormat[Any], spec: SiteSpec, settings: Any, roles: Mapping[str, Any]
) -> dict[str, Any]:
    """What site ``spec`` reports of its file (metadata only, JSON-able), on its node.

    The run's kinds are the coordinator's, so they declare no column of the site's
    file (:class:`~fedstruct.data.sites.SchemaLimits`' ``owner_kinds``): a column of
    names or free text is refused whatever kind they give it.
    """
    options = site_options(settings)
    limits = dataclasses.replace(options.limits, owner_kinds=False)
    return site_format.describe(spec, dataclasses.replace(options, limits=limits), roles)


def merge_descriptions(
    site_format: SiteFormat[Any],
    descriptions: Sequence[Mapping[str, Any]],
    settings: Any,
    roles: Mapping[str, Any],
) -> dict[str, Any]:
    """The federation schema from every site's description, on the server."""
    return site_format.merge(descriptions, site_options(settings), roles)


def aligned(truth: Graph, learned: Graph) -> tuple[Graph, Graph]:
    """Both graphs over the union of their variables (the truth's order first), so that
    scores can compare them: a variable one graph lacks is isolated in it."""
    names = [*truth.names, *(v for v in learned.names if v not in truth)]
    return truth.expand(names), learned.expand(names)


def file_metrics(federation: SiteFederation) -> dict[str, float]:
    """What a run on files reports about its data: how many columns got each kind
    (``columns_categorical``, ``columns_ordinal``, ``columns_continuous``), rows per
    site (after dropping), rows dropped for missing values (``missing = drop-rows``),
    columns constant at a site and columns a site does not observe (its file lacks
    them, or misses them at every row), for every site of the schema (the server of a
    deployment holds no rows)."""
    kinds = list(federation.schema.kinds.values())
    metrics: dict[str, float] = {f"columns_{kind}": float(kinds.count(kind)) for kind in KINDS}
    for site, n_rows in federation.schema.rows.items():
        dropped = federation.dropped_rows.get(site, 0)
        metrics[f"rows_{site}"] = float(n_rows - dropped)
        metrics[f"dropped_rows_{site}"] = float(dropped)
        metrics[f"constant_columns_{site}"] = float(len(federation.constant.get(site, ())))
        observed = len(federation.schema.sites.get(site, ()))
        metrics[f"unobserved_columns_{site}"] = float(len(federation.schema.variables) - observed)
    return metrics


def warn_imputed_unobserved(
    unobserved: Mapping[str, Sequence[str]], categorical_imputation: str | None
) -> None:
    """Say (a :class:`~fedstruct.errors.FedstructWarning` per site) which columns a
    method imputes at a site that does not observe them (its file lacks them, or
    misses them at every row), and how (:mod:`fedstruct.fl.features`): a continuous
    column at the federated mean, a categorical one as ``categorical_imputation``
    says (``None``: at the mean of its codes, F-CMs' inputs)."""
    categorical = {
        "missing-level": "no level, the indicator on",
        "mode": "the federated mode",
        None: "the mean of its codes",
    }[categorical_imputation]
    for site, columns in unobserved.items():
        if not columns:
            continue
        warnings.warn(
            f"site {site!r} does not observe {list(columns)}: they are imputed at every row "
            "there from the other sites' federated statistics (continuous: the federated "
            f"mean; categorical: {categorical}), with their missing indicator on",
            FedstructWarning,
            stacklevel=2,
        )
