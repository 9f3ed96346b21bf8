"""A user's own per-site table files in, as :class:`~fedstruct.data.client.ClientData`.

A small package, one job per module: :mod:`~fedstruct.data.sites.reader` (a file to a
pandas frame), :mod:`~fedstruct.data.sites.kinds` (each column's kind),
:mod:`~fedstruct.data.sites.schema` and :mod:`~fedstruct.data.sites.limits` (what a
site reports, and what it may disclose), :mod:`~fedstruct.data.sites.table` (a site's
table and its schema), :mod:`~fedstruct.data.sites.merge` (the federation's codebook),
:mod:`~fedstruct.data.sites.encoding` (rows to codes), :mod:`~fedstruct.data.sites.manifest`
(the manifest format) and :mod:`~fedstruct.data.sites.federation` (reading sites); the
names below are re-exported here. Tables take part in a federation through
:data:`fedstruct.data.formats.TABLES`, one :class:`~fedstruct.data.formats.SiteFormat`.

Each institution (site) holds one file: CSV, TSV or any delimited text (optionally
``.gz``/``.bz2``/``.xz``), or Parquet (``.parquet``/``.pq``). Reading a federation
takes two passes so that no row ever leaves its site:

1. every site reports a :class:`SiteSchema` — its column names, their kinds, the
   level names of its categorical and ordinal columns and its row count;
2. :func:`merge_schemas` joins them into one :class:`FederationSchema`, the
   federation-wide codebook, and each site encodes its rows with it
   (:func:`encode_site`): categorical and ordinal columns become ``int64`` codes
   ``0..k-1`` in the codebook's order, continuous columns ``float64``.

Kinds (:func:`infer_kinds`; :mod:`~fedstruct.data.sites.kinds`): text, boolean and
pandas ``category`` columns are categorical; numeric columns of whole numbers (any
dtype: ``1.0 .. 5.0`` is a score) with 3 to ``max_levels`` distinct values are
ordinal, with 1 or 2 (a 0/1 column) categorical; every other number is continuous.
Explicit kinds always win.

Level names are strings: ``str`` of the value, integral numbers without a decimal
point (``3``, not ``3.0``). The codebook orders a variable's levels (the union over
the sites) numerically when every level parses as a number, otherwise
lexicographically (so give ordinal text levels a sortable spelling, e.g.
``1-low``, ``2-mid``, ``3-high``).

When sites disagree on a column's kind: a column with numeric levels at some sites
(a small site sees few distinct ages) and continuous at the others is continuous
everywhere; numeric levels categorical at some sites (two of them) and ordinal at
others are ordinal. Any other disagreement (text levels against numbers) is a
:class:`~fedstruct.errors.DataError` naming both sites and the fix
``--set kinds.COL=...``.

Manifest (YAML or JSON; :func:`read_manifest`)::

    sites:                        # required: one entry per site
      - path: h1.csv              # required; relative to the manifest's folder
        name: hospital-1          # default: the file's stem
        kinds: {stage: ordinal}   # this site's kinds (COL: kind)
        graph: h1-graph.json      # the site's own graph file (kept as a path)
        regime: target            # this site's regime column
        supervised: [label]       # columns this site supervises
      - path: h2.tsv              # a bare string "h2.tsv" is short for {path: h2.tsv}
    kinds: {age: continuous}      # every site's kinds
    missing: error                # or drop-rows, keep
    delimiter: ","                # default: sniffed from the file's head
    min_site_rows: 10             # what a site's schema may disclose (SchemaLimits):
    max_site_levels: 100          #   the defaults shown
    regime: target                # the regime column at every site that has it
    supervised: [label]           # at every site that has the column
    target: label                 # method roles, kept for the method layer:
    label: label                  #   target, label, task (a column),
    inputs: [age, sex]            #   inputs, concepts (columns),
    concepts: [c1, c2]
    task: label
    truth: truth.json             #   truth (a graph file; the path is resolved)

Any other key, at either level, is a :class:`~fedstruct.errors.ConfigError`.

A site's schema leaves the site (the federation's codebook is the union of the
sites' level names, saved with a model), so :func:`read_federation` and
:func:`describe_site` refuse a site with fewer than ``min_site_rows`` rows (default
10), a categorical or ordinal column with more than ``max_site_levels`` levels
(default 100), a level name longer than 64 characters, a column that looks like an
identifier (as many distinct values as 90 % of the rows, on a site of 10 rows or
more), and, unless the column's kind is declared (``kinds``), a column that looks like
names of people (more than 30 levels, fewer than 20 rows per level), free text or
notes held by single rows: :class:`SchemaLimits` has the rules. The message names the
column, never a value.

Column names and text values are read in Unicode's normal form C (NFC), so a name
typed with ``ö`` at one site and with ``o`` plus a combining diaeresis at another is
one column; a text row that does not split into the header's columns is refused
naming its line.

Sites that code a categorical column with no level in common (``yes``/``no`` at one,
``0``/``1`` at another) get a :class:`~fedstruct.errors.FedstructWarning` naming the
column and the sites: their levels would be merged into one codebook of 4 levels.

Missing values are what pandas reads as missing (empty fields, ``NA``, ``NaN``,
``null`` ...). They are an error naming the site, file, column and count, unless
``missing="drop-rows"``, which drops those rows and reports how many, or
``missing="keep"``, which keeps them (``-1`` codes, NaN) for a method that uses
incomplete rows. A missing label of a supervised categorical column is kept as
``-1`` (:class:`ClientData`'s "no label"). In a regime column, an empty, missing
or ``obs`` value marks an observational row; any other value must name one of the
site's columns.
"""

from fedstruct.data.sites.encoding import MISSING, EncodedSite, encode_site
from fedstruct.data.sites.federation import (
    SiteFederation,
    check_roles,
    describe_site,
    read_federation,
    read_site,
    unobserved_as_missing,
)
from fedstruct.data.sites.kinds import infer_kinds
from fedstruct.data.sites.limits import (
    IDENTIFIER_MIN_ROWS,
    IDENTIFIER_SHARE,
    MAX_SITE_LEVELS,
    MIN_SITE_ROWS,
    SchemaLimits,
)
from fedstruct.data.sites.manifest import (
    LIMIT_KEYS,
    MANIFEST_KEYS,
    ROLE_KEYS,
    SITE_KEYS,
    Manifest,
    SiteSpec,
    read_manifest,
)
from fedstruct.data.sites.merge import merge_schemas
from fedstruct.data.sites.reader import read_table, site_name
from fedstruct.data.sites.schema import (
    KINDS,
    LEVELLED,
    ColumnSchema,
    FederationSchema,
    SiteSchema,
    require_kinds,
)
from fedstruct.data.sites.table import site_schema

__all__ = [
    "IDENTIFIER_MIN_ROWS",
    "IDENTIFIER_SHARE",
    "KINDS",
    "LEVELLED",
    "LIMIT_KEYS",
    "MANIFEST_KEYS",
    "MAX_SITE_LEVELS",
    "MIN_SITE_ROWS",
    "MISSING",
    "ROLE_KEYS",
    "SITE_KEYS",
    "ColumnSchema",
    "EncodedSite",
    "FederationSchema",
    "Manifest",
    "SchemaLimits",
    "SiteFederation",
    "SiteSchema",
    "SiteSpec",
    "check_roles",
    "describe_site",
    "encode_site",
    "infer_kinds",
    "merge_schemas",
    "read_federation",
    "read_manifest",
    "read_site",
    "read_table",
    "require_kinds",
    "site_name",
    "site_schema",
    "unobserved_as_missing",
]
