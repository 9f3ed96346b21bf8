"""One protocol for a user's per-site files, whatever their format: :class:`SiteFormat`.

A federation of site files is read in the same three steps for every format, so that
no row leaves its site:

1. ``describe`` — where a site's file lies: what the site reports of it (metadata
   only, JSON-able: a table's column names, kinds, level names and row count; an
   image site's shape, class names and counts);
2. ``merge`` — on the server: the federation's schema (one codebook) from every
   site's description (JSON-able);
3. ``read`` — each site's rows encoded with that schema, as clients
   (:class:`~fedstruct.data.client.ClientData`); without a schema given, the sites
   read here are described and merged first (every file on one machine).

``report`` says what the server learns of one site's encoded file (rows dropped,
constant columns), and ``inputs`` what a model learned from these sites must know to
encode new rows as the sites' were. :data:`TABLES` (CSV, TSV, Parquet:
:mod:`fedstruct.data.sites`) and :data:`IMAGES` (folders ``SITE/CLASS/*.png`` or
``.npz``: :mod:`fedstruct.data.images`) implement it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from fedstruct.data.client import ClientData
from fedstruct.data.images import (
    ImageFederationSchema,
    ImageSiteSchema,
    image_client,
    merge_image_schemas,
    read_image_site,
)
from fedstruct.data.sites import (
    FederationSchema,
    Manifest,
    SchemaLimits,
    SiteFederation,
    SiteSchema,
    SiteSpec,
    check_roles,
    describe_site,
    merge_schemas,
    read_federation,
)

__all__ = [
    "IMAGES",
    "TABLES",
    "ImageFormat",
    "ImageSites",
    "SiteFormat",
    "SiteOptions",
    "SitesRead",
    "TableFormat",
]


@dataclass(frozen=True)
class SiteOptions:
    """How every site's file is read (a run's settings and its method's column roles).

    Parameters
    ----------
    kinds
        Column -> kind for every site (tables).
    missing
        ``"error"`` or ``"drop-rows"``; ``None``: the manifest's, else ``"error"``.
    regime
        The regime column at every site that has it (tables).
    supervised
        Columns supervised at every site that has them (tables).
    limits
        What a site's description may disclose (:class:`~fedstruct.data.sites.SchemaLimits`).
    """

    kinds: Mapping[str, str] = field(default_factory=dict)
    missing: str | None = None
    regime: str | None = None
    supervised: tuple[str, ...] = ()
    limits: SchemaLimits = field(default_factory=SchemaLimits)


class SitesRead(Protocol):
    """What :meth:`SiteFormat.read` returns: at least the clients, one per site, in order."""

    @property
    def clients(self) -> list[ClientData]:
        """One client per site read."""
        ...


Read = TypeVar("Read", bound=SitesRead)


class SiteFormat(Protocol[Read]):
    """One kind of site file: its three steps (module docstring) and what it reports."""

    def describe(self, spec: SiteSpec, options: SiteOptions) -> dict[str, Any]:
        """What the site ``spec`` reports of its file: metadata only, JSON-able."""
        ...

    def merge(
        self, descriptions: Sequence[Mapping[str, Any]], options: SiteOptions
    ) -> dict[str, Any]:
        """The federation's schema (JSON-able) from every site's description."""
        ...

    def read(
        self, sites: Manifest, options: SiteOptions, schema: Mapping[str, Any] | None = None
    ) -> Read:
        """The sites' clients, encoded with ``schema`` (default: their own merge)."""
        ...

    def report(self, read: Read, site: str) -> dict[str, Any]:
        """What the server learns of ``site``'s encoded file (JSON-able)."""
        ...

    def inputs(self, read: Read) -> dict[str, Any]:
        """What a model learned from these sites reads, saved with it (JSON-able)."""
        ...


# ------------------------------------------------------------------------ tables
@dataclass(frozen=True)
class TableFormat:
    """Table files (CSV, TSV, Parquet): :mod:`fedstruct.data.sites`' two passes."""

    def describe(self, spec: SiteSpec, options: SiteOptions) -> dict[str, Any]:
        """The site's :class:`~fedstruct.data.sites.SiteSchema` and its regime column."""
        schema, regime = describe_site(
            spec, kinds=options.kinds, regime=options.regime, limits=options.limits
        )
        return {**schema.to_config(), "regime": regime or ""}

    def merge(
        self, descriptions: Sequence[Mapping[str, Any]], options: SiteOptions
    ) -> dict[str, Any]:
        """The merged :class:`~fedstruct.data.sites.FederationSchema`, roles checked."""
        schema = merge_schemas([SiteSchema.from_config(d) for d in descriptions], options.kinds)
        check_roles(
            schema,
            regime=options.regime or None,
            regime_sites=[str(d["site"]) for d in descriptions if d.get("regime")],
            supervised=options.supervised,
        )
        return schema.to_config()

    def read(
        self, sites: Manifest, options: SiteOptions, schema: Mapping[str, Any] | None = None
    ) -> SiteFederation:
        """:func:`~fedstruct.data.sites.read_federation` of the sites."""
        return read_federation(
            sites,
            kinds=dict(options.kinds) or None,
            missing=options.missing,
            regime=options.regime or None,
            supervised=options.supervised,
            schema=None if schema is None else FederationSchema.from_config(schema),
            min_site_rows=options.limits.min_rows,
            max_site_levels=options.limits.max_levels,
        )

    def report(self, read: SiteFederation, site: str) -> dict[str, Any]:
        """Rows dropped for missing values, and columns constant at the site."""
        return {"dropped_rows": read.dropped_rows[site], "constant": list(read.constant[site])}

    def inputs(self, read: SiteFederation) -> dict[str, Any]:
        """The variables, their kinds and level names."""
        schema = read.schema
        return {
            "variables": list(schema.variables),
            "kinds": dict(schema.kinds),
            "levels": {v: list(levels) for v, levels in schema.levels.items()},
        }


# ------------------------------------------------------------------------ images
@dataclass(frozen=True, eq=False)
class ImageSites:
    """A user's image sites (folders ``SITE/CLASS/*.png`` or ``.npz`` files) as clients.

    Attributes
    ----------
    clients
        Every site's images, as rows labelled by the federation's class codebook.
    schema
        The shape and the class codebook (the union of the sites' class names).
    """

    clients: list[ClientData]
    schema: ImageFederationSchema


@dataclass(frozen=True)
class ImageFormat:
    """Image sites: a site describes its shape, class names and counts; the server
    merges the class codebook (:mod:`fedstruct.data.images`)."""

    def describe(self, spec: SiteSpec, options: SiteOptions) -> dict[str, Any]:
        """The site's :class:`~fedstruct.data.images.ImageSiteSchema`."""
        return dict(read_image_site(spec.path, name=spec.name).schema().to_config())

    def merge(
        self, descriptions: Sequence[Mapping[str, Any]], options: SiteOptions
    ) -> dict[str, Any]:
        """The merged :class:`~fedstruct.data.images.ImageFederationSchema`."""
        schema = merge_image_schemas([ImageSiteSchema.from_config(d) for d in descriptions])
        return dict(schema.to_config())

    def read(
        self, sites: Manifest, options: SiteOptions, schema: Mapping[str, Any] | None = None
    ) -> ImageSites:
        """Every site's images, coded with one class codebook."""
        read = [read_image_site(spec.path, name=spec.name) for spec in sites.sites]
        if schema is None:
            codebook = merge_image_schemas([site.schema() for site in read])
        else:
            codebook = ImageFederationSchema.from_config(schema)
        return ImageSites([image_client(site, codebook) for site in read], codebook)

    def report(self, read: ImageSites, site: str) -> dict[str, Any]:
        """Nothing beyond the description: images drop no rows."""
        return {}

    def inputs(self, read: ImageSites) -> dict[str, Any]:
        """The image shape and the class names."""
        return {"shape": list(read.schema.shape), "classes": list(read.schema.classes)}


#: Table files (CSV, TSV, Parquet).
TABLES = TableFormat()
#: Image sites (folders ``SITE/CLASS/*.png`` or ``.npz`` files).
IMAGES = ImageFormat()
