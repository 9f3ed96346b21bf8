"""Reading sites: every site's file with one codebook (:func:`read_federation`), one
site's file (:func:`read_site`), or what one site reports of its file
(:func:`describe_site`, a deployment's first pass, run where the file lies).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.data.sites.encoding import encode_table
from fedstruct.data.sites.kinds import column_kinds
from fedstruct.data.sites.limits import SchemaLimits, may_have_notes
from fedstruct.data.sites.manifest import (
    ROLE_KEYS,
    Manifest,
    SiteSpec,
    check_site_names,
    read_manifest,
)
from fedstruct.data.sites.merge import merge_schemas
from fedstruct.data.sites.reader import read_table, site_name
from fedstruct.data.sites.schema import LEVELLED, FederationSchema, SiteSchema
from fedstruct.data.sites.table import SiteTable, site_table
from fedstruct.errors import ConfigError, DataError, FedstructWarning, UnknownVariableError

logger = logging.getLogger("fedstruct.data.sites")


@dataclass(frozen=True)
class SiteFederation:
    """Every site's file read with one codebook.

    Parameters
    ----------
    clients
        One client per site, in the given order.
    schema
        The federation schema (the codebook).
    dropped_rows
        Site -> rows dropped for missing values.
    constant
        Site -> columns with a single value there.
    roles
        The manifest's method roles (``target``, ``label``, ``inputs``, ``concepts``,
        ``task``, ``truth``) and ``graphs`` (site -> its graph file) if any site has one.
    """

    clients: list[ClientData]
    schema: FederationSchema
    dropped_rows: dict[str, int]
    constant: dict[str, tuple[str, ...]]
    roles: dict[str, Any]


def read_federation(
    source: str | Path | Manifest | Sequence[str | Path | SiteSpec],
    *,
    kinds: Mapping[str, str] | None = None,
    missing: str | None = None,
    delimiter: str | None = None,
    regime: str | None = None,
    supervised: Sequence[str] = (),
    min_rows: int = 1,
    schema: FederationSchema | None = None,
    min_site_rows: int | None = None,
    max_site_levels: int | None = None,
) -> SiteFederation:
    """Read every site's file and encode them with one federation codebook.

    Parameters
    ----------
    source
        A manifest path (``.yaml``, ``.yml`` or ``.json``), a :class:`Manifest`, a list
        of sites (:class:`SiteSpec`, or a table file's path: the site is named by the
        file's stem, :func:`site_name`), or one table file's path.
    kinds
        Column -> kind for every site; over the manifest's ``kinds``, under a site's.
    missing, delimiter, regime
        Override the manifest's (defaults: ``"error"``, sniffed, none). A top-level
        regime column applies to the sites that have it (and must exist at one).
    supervised
        Columns supervised at every site that has them (over the manifest's); each
        must exist at some site.
    min_rows
        The fewest rows a site may hold after dropping rows.
    schema
        The federation's codebook, merged elsewhere from every site's
        :func:`describe_site` (a deployment, where each node reads only its own file):
        ``source`` then names the sites read here, encoded with it.
    min_site_rows, max_site_levels
        What a site's schema may disclose (:class:`SchemaLimits`): over the
        manifest's keys of the same names; defaults :data:`MIN_SITE_ROWS` and
        :data:`MAX_SITE_LEVELS`.

    Raises
    ------
    DataError
        A site's file is missing (naming the site and the manifest) or bad (see
        :func:`read_table`, :func:`merge_schemas`, :func:`encode_site`), or its schema
        would disclose too much (:meth:`SchemaLimits.check`).
    """
    manifest = _as_manifest(source)
    opts = manifest.options
    settings = {
        "kinds": {**opts.get("kinds", {}), **dict(kinds or {})},
        "missing": missing or opts.get("missing", "error"),
        "delimiter": delimiter or opts.get("delimiter"),
        "regime": regime or opts.get("regime"),
        "supervised": tuple(supervised) or opts.get("supervised", ()),
    }
    limits = SchemaLimits.of(min_site_rows, max_site_levels, opts)
    tables = [_read_spec(spec, manifest, settings) for spec in manifest.sites]
    if schema is None:
        schemas = [_limited_schema(t, k, limits, d) for t, k, _, _, d in tables]
        schema = merge_schemas(schemas, _declared_kinds(manifest, settings["kinds"]))
        check_roles(
            schema,
            regime=settings["regime"],
            regime_sites=[t.name for t, _, r, _, _ in tables if r == settings["regime"]],
            supervised=settings["supervised"],
        )
    clients, dropped, constant = [], {}, {}
    while tables:
        table, _, site_regime, site_supervised, _ = tables.pop(0)
        encoded = encode_table(
            table, schema, settings["missing"], site_regime, site_supervised, min_rows
        )
        del table  # the site's table goes before its encoded rows become a client
        _log_dropped(encoded.site, _spec_path(manifest, encoded.site), encoded.dropped_rows)
        built = encoded.build()
        clients.append(built.client)
        dropped[encoded.site] = built.dropped_rows
        constant[encoded.site] = built.constant
    return SiteFederation(clients, schema, dropped, constant, _roles(manifest))


def _limited_schema(
    table: SiteTable, kinds: Mapping[str, str], limits: SchemaLimits, declared: frozenset[str]
) -> SiteSchema:
    """The site's schema, refused if it discloses more than ``limits`` allow (the
    ``declared`` columns' kinds were given, by the site's owner if
    ``limits.owner_kinds``)."""
    schema = table.schema(kinds)
    counts = {
        c.name: _level_counts(table, c.name)
        for c in schema.columns
        if c.kind in LEVELLED and may_have_notes(c.levels)
    }
    where = f" (file {table.path})" if table.path else ""
    owned = declared if limits.owner_kinds else None
    limits.check_schema(schema, where, counts=counts, declared=owned)
    return schema


def _level_counts(table: SiteTable, column: str) -> dict[str, int]:
    """Level name -> how many of the site's rows hold it."""
    codes, names = table.factor(column)
    found = np.bincount(codes[codes >= 0].astype(np.int64), minlength=len(names))
    return dict(zip(names, found.tolist(), strict=True))


def _as_manifest(source: str | Path | Manifest | Sequence[str | Path | SiteSpec]) -> Manifest:
    if isinstance(source, Manifest):
        return source
    if isinstance(source, str | Path):
        if Path(source).suffix.lower() in (".yaml", ".yml", ".json"):
            return read_manifest(source)
        source = [source]  # one table file
    specs = tuple(s if isinstance(s, SiteSpec) else _path_spec(s) for s in source)
    if not specs:
        raise ConfigError("a federation needs at least one site; give --site FILE or --sites")
    check_site_names(specs)
    return Manifest(specs)


def _path_spec(path: str | Path) -> SiteSpec:
    """A site given by its file's path alone, named by the file's stem."""
    file = Path(path).expanduser()
    return SiteSpec(site_name(file), file, {})


def _read_spec(
    spec: SiteSpec, manifest: Manifest, settings: Mapping[str, Any]
) -> tuple[SiteTable, dict[str, str], str | None, tuple[str, ...], frozenset[str]]:
    """The site's table, its columns' kinds, regime column and supervised columns, and
    the columns whose kinds were declared (``kinds``, the run's or the site's)."""
    if not spec.path.exists():
        where = f" of manifest {manifest.path}" if manifest.path else ""
        raise DataError(f"site {spec.name!r}{where}: file {spec.path} does not exist; fix its path")
    frame = read_table(spec.path, delimiter=settings["delimiter"])
    table = site_table(spec.name, frame, spec.path)
    columns = set(table.frame.columns)
    site_regime = spec.options.get("regime")
    if site_regime is None and settings["regime"] in columns:
        site_regime = settings["regime"]
    overrides = {c: k for c, k in settings["kinds"].items() if c in columns}
    overrides.update(spec.options.get("kinds", {}))
    kinds = _site_kinds(table, overrides, site_regime)
    wanted = spec.options.get("supervised", ())
    supervised = tuple(
        dict.fromkeys([*wanted, *(v for v in settings["supervised"] if v in columns)])
    )
    return table, kinds, site_regime, supervised, frozenset(overrides)


def _declared_kinds(manifest: Manifest, kinds: Mapping[str, str]) -> dict[str, str]:
    """The user's kinds: every site's, which must agree, then the common ones."""
    declared: dict[str, tuple[str, str]] = {}
    for spec in manifest.sites:
        for col, kind in spec.options.get("kinds", {}).items():
            if col in declared and declared[col][0] != kind:
                other_kind, other = declared[col]
                raise DataError(
                    f"column {col!r} is declared {other_kind} at site {other!r} and {kind} at "
                    f"site {spec.name!r}; give it one kind, e.g. --set kinds.{col}={kind}"
                )
            declared[col] = (kind, spec.name)
    out = {col: kind for col, (kind, _) in declared.items()}
    return {**out, **{c: k for c, k in kinds.items() if c not in out}}


def check_roles(
    schema: FederationSchema,
    *,
    regime: str | None,
    regime_sites: Sequence[str],
    supervised: Sequence[str],
) -> None:
    """Check that the roles given for every site name columns some site has.

    Parameters
    ----------
    schema
        The merged schema.
    regime
        The regime column named for every site, if any.
    regime_sites
        The sites whose files have it.
    supervised
        The columns named supervised at every site.

    Raises
    ------
    UnknownVariableError
        If no site has the regime column or a supervised column.
    """
    if regime is not None and not regime_sites:
        raise UnknownVariableError(
            f"no site has the regime column {regime!r}; fix its name (--set regime=...)"
        )
    absent = [v for v in supervised if v not in schema.kinds]
    if absent:
        raise UnknownVariableError(
            f"supervised names {absent}, which no site has; the variables are "
            f"{list(schema.variables)}"
        )


def describe_site(
    spec: SiteSpec,
    *,
    kinds: Mapping[str, str] | None = None,
    delimiter: str | None = None,
    regime: str | None = None,
    limits: SchemaLimits | None = None,
) -> tuple[SiteSchema, str | None]:
    """What one site reports of its file (the first pass of :func:`read_federation`,
    run where the file lies): its schema, and its regime column.

    Parameters
    ----------
    spec
        The site (its name, file and per-site options).
    kinds
        Column -> kind for every site (those the file has apply).
    delimiter
        As for :func:`read_table`.
    regime
        The regime column named for every site (used if the file has it).
    limits
        What the schema may disclose (default: :class:`SchemaLimits`' defaults).

    Returns
    -------
    tuple
        The :class:`SiteSchema` (metadata only) and the regime column the site has
        (``None`` if it has none).

    Raises
    ------
    DataError
        As :func:`read_federation` for this site's file, or if its schema would
        disclose more than ``limits`` allow.
    """
    settings = {"kinds": dict(kinds or {}), "delimiter": delimiter, "regime": regime,
                "supervised": ()}  # fmt: skip
    table, kinds_of, site_regime, _, declared = _read_spec(spec, Manifest((spec,)), settings)
    return _limited_schema(table, kinds_of, limits or SchemaLimits(), declared), site_regime


def read_site_table(spec: SiteSpec) -> tuple[SiteTable, dict[str, str]]:
    """One site's table and its columns' kinds, inferred (kinds declared in
    ``spec.options`` win): what its owner sees of the file, e.g. for a node's catalogue
    (:mod:`fedstruct.data.catalogue`).

    Raises
    ------
    DataError
        As :func:`read_federation` for this site's file.
    """
    settings: dict[str, Any] = {"kinds": {}, "delimiter": None, "regime": None, "supervised": ()}
    table, kinds, _, _, _ = _read_spec(spec, Manifest((spec,)), settings)
    return table, kinds


def _spec_path(manifest: Manifest, site: str) -> Path | None:
    return next((s.path for s in manifest.sites if s.name == site), None)


def _roles(manifest: Manifest) -> dict[str, Any]:
    roles = {k: v for k, v in manifest.options.items() if k in ROLE_KEYS}
    graphs = {s.name: s.options["graph"] for s in manifest.sites if "graph" in s.options}
    if graphs:
        roles["graphs"] = graphs
    return roles


def read_site(
    path: str | Path,
    *,
    name: str | None = None,
    kinds: Mapping[str, str] | None = None,
    missing: str = "error",
    delimiter: str | None = None,
    regime: str | None = None,
    supervised: Sequence[str] = (),
    schema: FederationSchema | None = None,
    min_rows: int = 1,
) -> ClientData:
    """Read one site's file as a client.

    Parameters
    ----------
    path
        The site's file (see :func:`read_table`).
    name
        The client's name; default the file's stem.
    kinds
        Column -> kind overrides (see :func:`infer_kinds`); ignored with ``schema``.
    missing, regime, supervised, min_rows
        As for :func:`encode_site`.
    delimiter
        As for :func:`read_table`.
    schema
        Encode with this federation schema; by default the file's own codebook.

    Returns
    -------
    ClientData
        Dropped rows (``missing="drop-rows"``) are logged at WARNING level.
    """
    path = Path(path)
    site = name or site_name(path)
    table = site_table(site, read_table(path, delimiter=delimiter), path)
    if schema is None:
        kinds_of = _site_kinds(table, kinds, regime)
        schema = merge_schemas([table.schema(kinds_of)])
    encoded = encode_table(table, schema, missing, regime, tuple(supervised), min_rows)
    del table
    _log_dropped(site, path, encoded.dropped_rows)
    return encoded.build().client


def _site_kinds(
    table: SiteTable, kinds: Mapping[str, str] | None, regime: str | None
) -> dict[str, str]:
    """The kinds of the site's columns (``kinds`` win), the regime column left out."""
    columns = [c for c in table.frame.columns if c != regime]

    def n_distinct(col: str) -> int:  # factorised once: the schema needs the levels anyway
        return len(table.factor(col)[1])

    try:
        kinds_of = column_kinds(
            table.frame, columns, dict(kinds or {}), 10, n_distinct, table.any_missing
        )
    except UnknownVariableError as exc:
        raise UnknownVariableError(f"{table.where}: {exc}") from exc
    except DataError as exc:
        raise DataError(f"{table.where}: {exc}") from exc
    for col, kind in kinds_of.items():
        if kind == "continuous":
            table.factors.pop(col, None)
    return _without_unobserved(table, kinds_of)


def _without_unobserved(table: SiteTable, kinds: dict[str, str]) -> dict[str, str]:
    """``kinds`` without the columns missing at every row of the site, which are left
    out of its table (unobserved there, as a column its file lacks), each with a
    :class:`~fedstruct.errors.FedstructWarning`. A site without rows keeps them (its
    schema then names the first)."""
    if len(table.frame) == 0:
        return kinds
    empty = [col for col in kinds if table.any_missing(col) and table.missing(col).all()]
    for col in empty:
        warnings.warn(
            f"column {col!r} is missing at every row of {table.where}: it is treated as "
            "unobserved there (methods that need every column at every site say so); "
            "fill it in or remove it from that file to silence this",
            FedstructWarning,
            stacklevel=2,
        )
    if not empty:
        return kinds
    table.frame = table.frame.drop(columns=empty)
    return {col: kind for col, kind in kinds.items() if col not in empty}


def unobserved_as_missing(
    client: ClientData, schema: FederationSchema, columns: Sequence[str]
) -> ClientData:
    """``client`` with each of ``columns`` it does not observe (not one of its columns:
    :meth:`FederationSchema.unobserved`) added as missing at every row, code ``-1`` for
    a categorical or ordinal column, NaN for a continuous one; for a method that
    imputes a missing value from other sites' statistics (FedAvg's features, F-CMs'
    inputs: :mod:`fedstruct.fl.features`). The client is returned as it is when it
    lacks none of them; otherwise it allows missing values.

    Raises
    ------
    UnknownVariableError
        If a column is not a variable of ``schema``.
    """
    unknown = [v for v in columns if v not in schema.kinds]
    if unknown:
        raise UnknownVariableError(
            f"{unknown} are not columns of the sites; their columns are {list(schema.variables)}"
        )
    absent = [v for v in columns if v not in client.rows.columns]
    if not absent:
        return client
    n = client.n_rows
    added = {
        v: np.full(n, -1, dtype=np.int64) if v in schema.levels else np.full(n, np.nan)
        for v in absent
    }
    rows = pd.concat([client.rows, pd.DataFrame(added, index=client.rows.index)], axis=1)
    return dataclasses.replace(client, rows=rows, missing_values=True)


def _log_dropped(site: str, path: Path | None, dropped: int) -> None:
    """Log the rows a site dropped for missing values, if any."""
    if dropped:
        where = f" (file {path})" if path else ""
        logger.warning("site %r%s: dropped %d rows with missing values", site, where, dropped)
