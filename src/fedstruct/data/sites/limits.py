"""What a site's schema may disclose (:class:`SchemaLimits`): it leaves the site."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedstruct.data.sites.schema import LEVELLED, SiteSchema
from fedstruct.errors import ConfigError, DataError, SampleSizeError

MIN_SITE_ROWS = 10
#: The most level names a site may report for one column (``max_site_levels``).
MAX_SITE_LEVELS = 100
#: A column with at least this share of distinct values per row is an identifier ...
IDENTIFIER_SHARE = 0.9
#: ... on a site with at least this many rows (on fewer, every column would be one).
IDENTIFIER_MIN_ROWS = 10


@dataclass(frozen=True)
class SchemaLimits:
    """What a site's schema may disclose: it leaves the site in the schema handshake.

    A site's schema carries every level name of its categorical and ordinal columns
    and its row count; the federation's codebook (saved with a model, in
    ``model.json``) is their union. So a site is refused

    - with fewer than ``min_rows`` rows (a one-row site's schema *is* its row);
    - with a categorical or ordinal column of more than ``max_levels`` levels;
    - with a column that looks like an identifier: at least
      :data:`IDENTIFIER_SHARE` (90 %) as many distinct values as rows, on a site of
      at least :data:`IDENTIFIER_MIN_ROWS` rows (a name, an ID, a date-time as text).

    Parameters
    ----------
    min_rows
        The fewest rows a site's file may hold (default :data:`MIN_SITE_ROWS`).
    max_levels
        The most levels one column may report (default :data:`MAX_SITE_LEVELS`).

    Raises
    ------
    ConfigError
        If either is not a positive integer.
    """

    min_rows: int = MIN_SITE_ROWS
    max_levels: int = MAX_SITE_LEVELS

    def __post_init__(self) -> None:
        for name, key in (("min_rows", "min_site_rows"), ("max_levels", "max_site_levels")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ConfigError(f"{key} must be a positive integer, got {value!r}")

    @classmethod
    def of(
        cls,
        min_site_rows: int | None = None,
        max_site_levels: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> SchemaLimits:
        """The limits given (``None``: the manifest ``options``' key, else the default)."""
        options = options or {}
        return cls(
            min_site_rows if min_site_rows is not None
            else options.get("min_site_rows", MIN_SITE_ROWS),
            max_site_levels if max_site_levels is not None
            else options.get("max_site_levels", MAX_SITE_LEVELS),
        )  # fmt: skip

    def check(
        self, site: str, n_rows: int, levels: Mapping[str, Sequence[str]], where: str = ""
    ) -> None:
        """Refuse a site's row count and level names if they disclose too much.

        Parameters
        ----------
        site
            The site's name.
        n_rows
            Its number of rows.
        levels
            Column -> its level names (categorical and ordinal columns).
        where
            Added after the site's name in messages (e.g. `` (file h1.csv)``).

        Raises
        ------
        SampleSizeError
            Fewer rows than ``min_rows``.
        DataError
            A column with more than ``max_levels`` levels, or one that looks like an
            identifier (naming the site and the column).
        """
        owner = f"site {site!r}{where}"
        if n_rows < self.min_rows:
            raise SampleSizeError(
                f"{owner} has {n_rows} rows, fewer than the {self.min_rows} a site needs so "
                "that its schema (level names, row count) does not give its rows away; add "
                "rows, join it with another site, or lower --set min_site_rows=N"
            )
        for column, names in levels.items():
            count = len(names)
            if count > self.max_levels:
                raise DataError(
                    f"column {column!r} of {owner} has {count} levels, more than the "
                    f"{self.max_levels} a site may report (every level name leaves the site); "
                    "group rare levels, remove the column, or raise --set max_site_levels=N"
                )
            if n_rows >= IDENTIFIER_MIN_ROWS and count >= IDENTIFIER_SHARE * n_rows:
                raise DataError(
                    f"column {column!r} of {owner} looks like an identifier ({count} distinct "
                    f"values in {n_rows} rows), and every level name leaves the site; remove "
                    f"it from the file, or set kinds.{column}=continuous if it holds measurements"
                )

    def check_schema(self, schema: SiteSchema, where: str = "") -> None:
        """:meth:`check` on a :class:`SiteSchema`."""
        levels = {c.name: c.levels for c in schema.columns if c.kind in LEVELLED}
        self.check(schema.site, schema.n_rows, levels, where)
