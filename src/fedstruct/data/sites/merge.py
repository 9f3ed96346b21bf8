"""Every site's schema joined into one federation codebook (:func:`merge_schemas`).

When sites disagree on a column's inferred kind: a column categorical or ordinal with
numeric levels at some sites and continuous at the others is continuous everywhere; one
of numeric levels categorical at some sites (two levels there) and ordinal at others is
ordinal (the inference's rule, :mod:`~fedstruct.data.sites.kinds`, on the union of the
levels); any other disagreement is a :class:`~fedstruct.errors.DataError` naming both
sites and the fix.
Sites that share no level of a categorical column (or of an ordinal column of text
levels: an ordinal column of numbers may well hold other numbers at each site, ages 20-40
at one and 60-80 at another), and a categorical or ordinal column with a single level at
every site, get a :class:`~fedstruct.errors.FedstructWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from fedstruct.data.sites.schema import (
    LEVELLED,
    ColumnSchema,
    FederationSchema,
    SiteSchema,
    as_number,
    check_kind,
    sorted_levels,
)
from fedstruct.errors import DataError, FedstructWarning, UnknownVariableError


def merge_schemas(
    schemas: Sequence[SiteSchema], kinds: Mapping[str, str] | None = None
) -> FederationSchema:
    """Join every site's schema into one codebook.

    Parameters
    ----------
    schemas
        One per site.
    kinds
        Variable -> kind set by the user; these win. A variable set categorical or
        ordinal must have been read so at every site that has it (its levels are
        needed); one set continuous must have numeric levels wherever it was read as
        categorical.

    Returns
    -------
    FederationSchema
        Variables in first-seen order; levels the union over the sites, sorted
        numerically if every level is a number, else lexicographically. A variable
        categorical with numeric levels at some sites and continuous at the others is
        continuous.

    Raises
    ------
    DataError
        For no sites, two sites of the same name, or kinds that disagree otherwise
        (naming both sites and the fix).
    UnknownVariableError
        If ``kinds`` names a variable no site has.
    """
    if not schemas:
        raise DataError("a federation needs at least one site")
    names = [s.site for s in schemas]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"site names must be unique; repeated: {repeated}")
    columns: dict[str, dict[str, ColumnSchema]] = {}
    for s in schemas:
        for c in s.columns:
            columns.setdefault(c.name, {})[s.site] = c
    explicit = dict(kinds or {})
    unknown = [v for v in explicit if v not in columns]
    if unknown:
        raise UnknownVariableError(
            f"kinds names {unknown}, which no site has; the variables are {list(columns)}"
        )
    kind_of = {v: _merged_kind(v, by_site, explicit.get(v)) for v, by_site in columns.items()}
    for v, by_site in columns.items():
        numbers = all(_all_numeric(c.levels) for c in by_site.values())
        if kind_of[v] == "categorical" or (kind_of[v] == "ordinal" and not numbers):
            _warn_disjoint_levels(v, by_site)
    levels = {
        v: sorted_levels([lv for c in columns[v].values() for lv in c.levels])
        for v in columns
        if kind_of[v] in LEVELLED
    }
    _warn_single_level(levels)
    return FederationSchema(
        variables=tuple(columns),
        kinds=kind_of,
        levels=levels,
        sites={s.site: s.names for s in schemas},
        rows={s.site: int(s.n_rows) for s in schemas},
    )


def _warn_single_level(levels: Mapping[str, Sequence[str]]) -> None:
    """Warn for each categorical or ordinal column with one level at every site: it
    carries no information (no test can relate it to anything, no model learn from it)."""
    for variable, found in levels.items():
        if len(found) == 1:
            warnings.warn(
                f"column {variable!r} has the single level {found[0]!r} at every site, so "
                "it carries no information; remove it from the sites' files (FedCDnv "
                "leaves it out of each site's graph, constant_columns='exclude')",
                FedstructWarning,
                stacklevel=3,
            )


def _warn_disjoint_levels(variable: str, by_site: Mapping[str, ColumnSchema]) -> None:
    """Warn when two sites share no level of ``variable`` (the first such pair):
    ``yes``/``no`` at one and ``1``/``0`` at the other would merge into 4 levels."""
    items = [(site, frozenset(c.levels)) for site, c in by_site.items()]
    for i, (site_a, a) in enumerate(items):
        for site_b, b in items[i + 1 :]:
            if a.isdisjoint(b):
                shown = [sorted_levels(list(levels))[:5] for levels in (a, b)]
                warnings.warn(
                    f"column {variable!r}: sites {site_a!r} (levels {list(shown[0])}) and "
                    f"{site_b!r} (levels {list(shown[1])}) share no level, so the codebook "
                    f"holds both sets; if they code the same values differently (yes/no and "
                    "1/0), recode one site's file",
                    FedstructWarning,
                    stacklevel=2,
                )
                return


def _merged_kind(variable: str, by_site: Mapping[str, ColumnSchema], explicit: str | None) -> str:
    if explicit is not None:
        check_kind(explicit, variable)
        for site, c in by_site.items():
            _check_readable_as(variable, site, c, explicit)
        return explicit
    kinds = {c.kind for c in by_site.values()}
    if len(kinds) == 1:
        return kinds.pop()
    numeric = all(_all_numeric(c.levels) for c in by_site.values() if c.kind in LEVELLED)
    if "continuous" in kinds and numeric:
        return "continuous"
    if kinds == {"categorical", "ordinal"} and numeric:
        return "ordinal"  # whole numbers: two levels at a site, more at another
    (site_a, a), (site_b, b) = _two_disagreeing(by_site)
    raise DataError(
        f"column {variable!r} is {a.kind} at site {site_a!r} and {b.kind} at site "
        f"{site_b!r}; give it one kind for every site, e.g. --set kinds.{variable}={a.kind}"
    )


def _check_readable_as(variable: str, site: str, column: ColumnSchema, kind: str) -> None:
    if kind in LEVELLED and column.kind == "continuous":
        raise DataError(
            f"column {variable!r} of site {site!r} was read as continuous, so it reported no "
            f"levels; read every site with kinds {variable}={kind}"
        )
    if kind == "continuous" and not _all_numeric(column.levels):
        raise DataError(
            f"column {variable!r} of site {site!r} holds text levels "
            f"{list(column.levels)[:5]}, so it cannot be continuous; fix the values or "
            f"set kinds.{variable}=categorical"
        )


def _two_disagreeing(
    by_site: Mapping[str, ColumnSchema],
) -> tuple[tuple[str, ColumnSchema], tuple[str, ColumnSchema]]:
    items = list(by_site.items())
    first = items[0]
    second = next(item for item in items if item[1].kind != first[1].kind)
    return first, second


def _all_numeric(levels: Sequence[str]) -> bool:
    return all(as_number(level) is not None for level in levels)
