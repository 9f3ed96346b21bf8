"""What a site reports about its table, and the federation's codebook: metadata only.

:class:`ColumnSchema` and :class:`SiteSchema` are what one site reports (names,
kinds, level names, row count); :class:`FederationSchema` is their merge
(:func:`~fedstruct.data.sites.merge.merge_schemas`), the federation-wide codebook.
Level names are strings (:func:`level_name`), ordered numerically when every level
is a number, else lexicographically (:func:`sorted_levels`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedstruct.errors import ConfigError, DataError

#: The kinds of a column.
KINDS = ("categorical", "ordinal", "continuous")
#: The kinds coded as levels 0..k-1 (``FederationSchema.levels`` holds their names).
LEVELLED = ("categorical", "ordinal")


@dataclass(frozen=True)
class ColumnSchema:
    """One column of a site: metadata only, never rows.

    Parameters
    ----------
    name
        The column's name.
    kind
        One of :data:`KINDS`.
    levels
        Categorical and ordinal columns: the level names (as ``str``) in code order;
        empty for continuous columns.
    """

    name: str
    kind: str
    levels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_kind(self.kind, self.name)
        object.__setattr__(self, "levels", tuple(str(v) for v in self.levels))
        if self.kind in LEVELLED and not self.levels:
            raise DataError(f"{self.kind} column {self.name!r} needs at least one level")
        if self.kind == "continuous" and self.levels:
            raise DataError(f"continuous column {self.name!r} has no levels; got {self.levels}")


@dataclass(frozen=True)
class SiteSchema:
    """What a site reports about its file: names, kinds, level names, row count.

    Parameters
    ----------
    site
        The site's name.
    n_rows
        Number of rows of its file.
    columns
        One :class:`ColumnSchema` per variable, in file order.
    """

    site: str
    n_rows: int
    columns: tuple[ColumnSchema, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        check_unique([c.name for c in self.columns], f"site {self.site!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(c.name for c in self.columns)

    def to_config(self) -> dict[str, Any]:
        """A flat JSON-able dict (str, int, lists of str) to send in a message.

        Keys: ``site``, ``n_rows``, ``columns``, ``kinds`` (aligned with ``columns``)
        and ``levels.<column>`` for each categorical or ordinal column.
        """
        config: dict[str, Any] = {
            "site": self.site,
            "n_rows": int(self.n_rows),
            "columns": list(self.names),
            "kinds": [c.kind for c in self.columns],
        }
        for c in self.columns:
            if c.kind in LEVELLED:
                config[f"levels.{c.name}"] = list(c.levels)
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SiteSchema:
        """Rebuild a schema from :meth:`to_config`'s dict.

        Raises
        ------
        ConfigError
            If a key is missing or the columns and kinds do not line up.
        """
        names = _config_list(config, "columns", "site schema")
        kinds = _config_list(config, "kinds", "site schema")
        if len(names) != len(kinds):
            raise ConfigError("site schema: 'columns' and 'kinds' must have the same length")
        columns = tuple(
            ColumnSchema(name, kind, tuple(config.get(f"levels.{name}", ())))
            for name, kind in zip(names, kinds, strict=True)
        )
        site = str(_config_get(config, "site", "site schema"))
        return cls(site, int(_config_get(config, "n_rows", "site schema")), columns)


@dataclass(frozen=True)
class FederationSchema:
    """The merge of every site's schema: one federation-wide codebook.

    Parameters
    ----------
    variables
        Every variable, in first-seen order over the sites.
    kinds
        Variable -> kind.
    levels
        Categorical and ordinal variable -> level names in code order.
    sites
        Site -> its variables, in its file's order.
    rows
        Site -> its number of rows.
    """

    variables: tuple[str, ...]
    kinds: dict[str, str]
    levels: dict[str, tuple[str, ...]]
    sites: dict[str, tuple[str, ...]]
    rows: dict[str, int]

    def cardinalities(self) -> dict[str, int]:
        """Categorical and ordinal variable -> number of levels."""
        return {v: len(levels) for v, levels in self.levels.items()}

    def inputs(self) -> dict[str, Any]:
        """What a model learned from these sites reads, as ``model.json``'s ``data``
        saves it: the variables, their kinds and level names (in code order)."""
        return {
            "variables": list(self.variables),
            "kinds": dict(self.kinds),
            "levels": {v: list(levels) for v, levels in self.levels.items()},
        }

    def codebook(self, variable: str) -> dict[str, int]:
        """Level name -> code of a categorical or ordinal variable."""
        return {level: code for code, level in enumerate(self.levels[variable])}

    def unobserved(self, site: str) -> tuple[str, ...]:
        """The variables ``site`` does not observe (its file lacks them, or misses them
        at every row), in the schema's order."""
        observed = set(self.sites[site])
        return tuple(v for v in self.variables if v not in observed)

    def to_config(self) -> dict[str, Any]:
        """A flat JSON-able dict (str, int, lists of str) to send in a message.

        Keys: ``variables``, ``kinds`` (aligned), ``levels.<variable>``, ``sites``,
        ``site_variables.<site>`` and ``rows.<site>``.
        """
        config: dict[str, Any] = {
            "variables": list(self.variables),
            "kinds": [self.kinds[v] for v in self.variables],
            "sites": list(self.sites),
        }
        for v, levels in self.levels.items():
            config[f"levels.{v}"] = list(levels)
        for site, names in self.sites.items():
            config[f"site_variables.{site}"] = list(names)
            config[f"rows.{site}"] = int(self.rows[site])
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FederationSchema:
        """Rebuild a schema from :meth:`to_config`'s dict.

        Raises
        ------
        ConfigError
            If a key is missing or the variables and kinds do not line up.
        """
        what = "federation schema"
        variables = tuple(_config_list(config, "variables", what))
        kinds = _config_list(config, "kinds", what)
        if len(variables) != len(kinds):
            raise ConfigError(f"{what}: 'variables' and 'kinds' must have the same length")
        kind_of = dict(zip(variables, kinds, strict=True))
        levels = {
            v: tuple(_config_list(config, f"levels.{v}", what))
            for v in variables
            if kind_of[v] in LEVELLED
        }
        sites = _config_list(config, "sites", what)
        return cls(
            variables=variables,
            kinds=kind_of,
            levels=levels,
            sites={s: tuple(_config_list(config, f"site_variables.{s}", what)) for s in sites},
            rows={s: int(_config_get(config, f"rows.{s}", what)) for s in sites},
        )


def require_kinds(
    schema: FederationSchema,
    allowed: Sequence[str],
    *,
    method: str,
    variables: Sequence[str] | None = None,
) -> None:
    """Check that every variable's kind is one a method can use.

    Parameters
    ----------
    schema
        The federation's schema.
    allowed
        The kinds the method handles (e.g. ``("continuous",)`` for a Fisher-z test).
    method
        The method's name, for the message.
    variables
        The variables to check (default: all of the schema's).

    Raises
    ------
    DataError
        Naming the first variable of another kind, its level names and the fix.
    """
    for v in schema.variables if variables is None else variables:
        kind = schema.kinds[v]
        if kind not in allowed:
            shown = list(schema.levels.get(v, ()))[:5]
            fix = (
                f"bin its values into a few classes in the sites' files (e.g. low/high), "
                f"set --set kinds.{v}={allowed[0]} if it holds a few codes, or leave it out"
                if kind == "continuous"
                else f"set --set kinds.{v}={allowed[0]} if its values are numbers, or leave it out"
            )
            raise DataError(
                f"{method} needs {' or '.join(allowed)} variables, but {v!r} is {kind}"
                + (f" (levels {shown})" if shown else "")
                + f"; {fix}"
            )


def check_kind(kind: str, column: str) -> None:
    """Refuse a kind not in :data:`KINDS` (:class:`~fedstruct.errors.ConfigError`)."""
    if kind not in KINDS:
        raise ConfigError(
            f"column {column!r}: unknown kind {kind!r}; valid kinds: {', '.join(KINDS)}"
        )


def check_unique(names: Sequence[str], owner: str) -> None:
    """Refuse a column name that appears twice (:class:`~fedstruct.errors.DataError`)."""
    seen = set()
    for name in names:
        if name in seen:
            raise DataError(f"{owner}: column name {name!r} appears twice; rename one")
        seen.add(name)


def level_name(value: Any) -> str:
    """A level's name: ``str`` of the value, integral numbers without a decimal point."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, float | np.floating) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


def as_number(level: str) -> float | None:
    try:
        return float(level)
    except ValueError:
        return None


def sorted_levels(levels: Sequence[str]) -> tuple[str, ...]:
    """Numerically when every level parses as a number, else lexicographically."""
    unique = set(levels)
    numbers = {level: as_number(level) for level in unique}
    if all(x is not None and not math.isnan(x) for x in numbers.values()):
        return tuple(sorted(unique, key=lambda level: (numbers[level], level)))
    return tuple(sorted(unique))


def _config_get(config: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in config:
        raise ConfigError(f"{what}: key {key!r} is missing")
    return config[key]


def _config_list(config: Mapping[str, Any], key: str, what: str) -> list[str]:
    value = _config_get(config, key, what)
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{what}: {key!r} must be a list")
    return [str(v) for v in value]
