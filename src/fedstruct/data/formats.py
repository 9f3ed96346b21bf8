"""One protocol for a user's per-site files, whatever their format: :class:`SiteFormat`.

A federation of site files is read in the same three steps for every format, so that
no row leaves its site:

1. ``describe(spec, options, roles)`` — where a site's file lies: what the site
   reports of it (metadata only, JSON-able: a table's column names, kinds, level
   names and row count; an image site's shape, class names and counts);
2. ``merge(descriptions, options, roles)`` — on the server: the federation's schema
   (one codebook, JSON-able) from every site's description;
3. ``read(sites, options, roles, schema)`` — each site's rows encoded with that
   schema, as clients (:class:`~fedstruct.data.client.ClientData`); without a schema,
   the sites read here are described and merged first (every file on one machine).

``report(read, site)`` says what the server learns of one site's encoded file (rows
dropped, constant columns), and ``inputs(read)`` what a model learned from these sites
must know to encode new rows as the sites' were. ``options`` (:class:`SiteOptions`)
say how every file is read; ``roles`` are the method's column roles (``regime``,
``supervised``; a format uses those it knows). :data:`TABLES` (CSV, TSV, Parquet:
:mod:`fedstruct.data.sites`) and :data:`IMAGES` (folders ``SITE/CLASS/*.png`` or
``.npz``: :mod:`fedstruct.data.images`) implement it; :data:`IMAGES_OR_TABLES` reads
either, chosen by the files (a method that classifies images or a table's rows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

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
from fedstruct.errors import DataError

__all__ = [
    "IMAGES",
    "IMAGES_OR_TABLES",
    "TABLES",
    "ImageSites",
    "SiteFormat",
    "SiteOptions",
    "SitesRead",
]


@dataclass(frozen=True)
class SiteOptions:
    """How every site's file is read (what a run's settings say of the files).

    Parameters
    ----------
    kinds
        Column -> kind for every site (tables).
    missing
        ``"error"``, ``"drop-rows"`` or ``"keep"``; ``None``: the manifest's, else
        the method's default (``Runnable.missing``; ``"error"`` read outside a run).
    limits
        What a site's description may disclose (:class:`~fedstruct.data.sites.SchemaLimits`).
    """

    kinds: Mapping[str, str] = field(default_factory=dict)
    missing: str | None = None
    limits: SchemaLimits = field(default_factory=SchemaLimits)


class SitesRead(Protocol):
    """What :attr:`SiteFormat.read` returns: at least the clients, one per site, in order."""

    @property
    def clients(self) -> list[ClientData]:
        """One client per site read."""
        ...


Read = TypeVar("Read", bound=SitesRead)
Roles = Mapping[str, Any]


@dataclass(frozen=True)
class SiteFormat(Generic[Read]):
    """One kind of site file: its three steps and what it reports (module docstring).

    Attributes
    ----------
    describe
        ``describe(spec, options, roles)``, where the site's file lies: what it reports
        of it (metadata only, JSON-able).
    merge
        ``merge(descriptions, options, roles)``, on the server: the federation's schema
        (JSON-able) from every site's description.
    read
        ``read(sites, options, roles, schema)``: the sites of a
        :class:`~fedstruct.data.sites.Manifest` encoded with ``schema`` (``None``: the
        merge of their own descriptions).
    report
        ``report(read, site)``: what the server learns of ``site``'s encoded file.
    inputs
        ``inputs(read)``: what a model learned from these sites reads, saved with it.
    """

    describe: Callable[[SiteSpec, SiteOptions, Roles], dict[str, Any]]
    merge: Callable[[Sequence[Mapping[str, Any]], SiteOptions, Roles], dict[str, Any]]
    read: Callable[[Manifest, SiteOptions, Roles, Mapping[str, Any] | None], Read]
    report: Callable[[Read, str], dict[str, Any]]
    inputs: Callable[[Read], dict[str, Any]]


# ------------------------------------------------------------------------ tables
def _describe_table(spec: SiteSpec, options: SiteOptions, roles: Roles) -> dict[str, Any]:
    """The site's :class:`~fedstruct.data.sites.SiteSchema` and its regime column."""
    schema, regime = describe_site(
        spec, kinds=options.kinds, regime=roles.get("regime") or None, limits=options.limits
    )
    return {**schema.to_config(), "regime": regime or ""}


def _merge_tables(
    descriptions: Sequence[Mapping[str, Any]], options: SiteOptions, roles: Roles
) -> dict[str, Any]:
    """The merged :class:`~fedstruct.data.sites.FederationSchema`, roles checked."""
    schema = merge_schemas([SiteSchema.from_config(d) for d in descriptions], options.kinds)
    check_roles(
        schema,
        regime=roles.get("regime") or None,
        regime_sites=[str(d["site"]) for d in descriptions if d.get("regime")],
        supervised=roles.get("supervised") or (),
    )
    return schema.to_config()


def _read_tables(
    sites: Manifest, options: SiteOptions, roles: Roles, schema: Mapping[str, Any] | None
) -> SiteFederation:
    """:func:`~fedstruct.data.sites.read_federation` of the sites (empty roles: none)."""
    return read_federation(
        sites,
        kinds=dict(options.kinds) or None,
        missing=options.missing,
        regime=roles.get("regime") or None,
        supervised=tuple(roles.get("supervised") or ()),
        schema=None if schema is None else FederationSchema.from_config(schema),
        min_site_rows=options.limits.min_rows,
        max_site_levels=options.limits.max_levels,
    )


def _report_table(read: SiteFederation, site: str) -> dict[str, Any]:
    """Rows dropped for missing values, and columns constant at the site."""
    return {"dropped_rows": read.dropped_rows[site], "constant": list(read.constant[site])}


def _table_inputs(read: SiteFederation) -> dict[str, Any]:
    """The variables, their kinds and level names."""
    return read.schema.inputs()


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


def _describe_images(spec: SiteSpec, options: SiteOptions, roles: Roles) -> dict[str, Any]:
    """The site's :class:`~fedstruct.data.images.ImageSiteSchema`."""
    return dict(read_image_site(spec.path, name=spec.name).schema().to_config())


def _merge_images(
    descriptions: Sequence[Mapping[str, Any]], options: SiteOptions, roles: Roles
) -> dict[str, Any]:
    """The merged :class:`~fedstruct.data.images.ImageFederationSchema`."""
    schema = merge_image_schemas([ImageSiteSchema.from_config(d) for d in descriptions])
    return dict(schema.to_config())


def _read_images(
    sites: Manifest, options: SiteOptions, roles: Roles, schema: Mapping[str, Any] | None
) -> ImageSites:
    """Every site's images, coded with one class codebook."""
    read = [read_image_site(spec.path, name=spec.name) for spec in sites.sites]
    if schema is None:
        codebook = merge_image_schemas([site.schema() for site in read])
    else:
        codebook = ImageFederationSchema.from_config(schema)
    return ImageSites([image_client(site, codebook) for site in read], codebook)


def _report_images(read: ImageSites, site: str) -> dict[str, Any]:
    """Nothing beyond the description: images drop no rows."""
    return {}


def _image_inputs(read: ImageSites) -> dict[str, Any]:
    """The image shape and the class names."""
    return {"shape": list(read.schema.shape), "classes": list(read.schema.classes)}


#: Table files (CSV, TSV, Parquet): :mod:`fedstruct.data.sites`' two passes.
TABLES: SiteFormat[SiteFederation] = SiteFormat(
    _describe_table, _merge_tables, _read_tables, _report_table, _table_inputs
)
#: Image sites (folders ``SITE/CLASS/*.png`` or ``.npz``): a site describes its shape,
#: class names and counts; the server merges the class codebook.
IMAGES: SiteFormat[ImageSites] = SiteFormat(
    _describe_images, _merge_images, _read_images, _report_images, _image_inputs
)


# --------------------------------------------------------- images or tables
def is_image_site(spec: SiteSpec) -> bool:
    """Whether ``spec``'s file is an image site (a folder or an ``.npz``), not a table."""
    path = spec.path.expanduser()
    return path.is_dir() or path.suffix.lower() == ".npz"


def _image_schema(config: Mapping[str, Any]) -> bool:
    """Whether a description or schema is an image federation's (they carry a shape)."""
    return "shape" in config


def _one_format(specs: Sequence[SiteSpec]) -> SiteFormat[Any]:
    """The format every site of ``specs`` is in.

    Raises
    ------
    DataError
        If some sites are image folders or ``.npz`` files and others tables.
    """
    images = [spec.name for spec in specs if is_image_site(spec)]
    if images and len(images) < len(specs):
        tables = [spec.name for spec in specs if spec.name not in images]
        raise DataError(
            f"sites {images} are images and {tables} tables; a run reads one kind: give "
            "every site as an image folder or .npz, or every site as a table file"
        )
    return IMAGES if images else TABLES


def _describe_either(spec: SiteSpec, options: SiteOptions, roles: Roles) -> dict[str, Any]:
    return _one_format([spec]).describe(spec, options, roles)


def _merge_either(
    descriptions: Sequence[Mapping[str, Any]], options: SiteOptions, roles: Roles
) -> dict[str, Any]:
    """The merged schema of image descriptions or of table descriptions.

    Raises
    ------
    DataError
        If some sites described images and others tables.
    """
    images = [str(d.get("site", "?")) for d in descriptions if _image_schema(d)]
    if images and len(images) < len(descriptions):
        raise DataError(
            f"sites {images} described images and the others tables; a run reads one "
            "kind: give every site as an image folder or .npz, or every site as a table"
        )
    chosen = IMAGES if images else TABLES
    return chosen.merge(descriptions, options, roles)


def _read_either(
    sites: Manifest, options: SiteOptions, roles: Roles, schema: Mapping[str, Any] | None
) -> SiteFederation | ImageSites:
    """The sites read as images or as tables: by the schema when one is given (a
    deployment's), else by the files."""
    if schema is not None:
        chosen = IMAGES if _image_schema(schema) else TABLES
    else:
        chosen = _one_format(sites.sites)
    return chosen.read(sites, options, roles, schema)


def _report_either(read: SiteFederation | ImageSites, site: str) -> dict[str, Any]:
    if isinstance(read, ImageSites):
        return _report_images(read, site)
    return _report_table(read, site)


def _either_inputs(read: SiteFederation | ImageSites) -> dict[str, Any]:
    return _image_inputs(read) if isinstance(read, ImageSites) else _table_inputs(read)


#: Image sites or tables, chosen by the files (every site in the same kind): a folder
#: or an ``.npz`` is an image site (:data:`IMAGES`), any other file a table
#: (:data:`TABLES`); a deployment's schema says which it merged.
IMAGES_OR_TABLES: SiteFormat[Any] = SiteFormat(
    _describe_either, _merge_either, _read_either, _report_either, _either_inputs
)
