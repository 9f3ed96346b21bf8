"""What a site's schema may disclose (:class:`SchemaLimits`): it leaves the site.

Level names are the part of a schema that could carry a person: a name, a record
number, a note. Besides the counts (too few rows, too many levels, a distinct value in
nearly every row), :meth:`SchemaLimits.check` refuses a column whose level names read
as text about people rather than as categories (the rules are listed there). It names
the column and the site, never a level: a refused column's values are printed nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
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
#: The longest level name a site may report, in characters: a longer one is text.
MAX_LEVEL_CHARS = 64
#: A column of more than this many levels ...
RARE_LEVELS = 30
#: ... that has fewer rows than this per level on average names people, not groups.
MIN_ROWS_PER_LEVEL = 20
#: A level of at least this many words, with a digit and a punctuation mark, is free text.
FREE_TEXT_WORDS = 5
#: A level of at least this many words held by a single row is a note about that row.
NOTE_WORDS = 3
#: Punctuation of sentences: ``; : ! ? … # @``, and a ``,`` or ``.`` that is not between
#: two digits (``25,000`` and ``2.5`` are numbers).
_SENTENCE_MARK = re.compile(r"[;:!?\u2026#@]|(?<!\d)[,.]|[,.](?!\d)")


@dataclass(frozen=True)
class SchemaLimits:
    """What a site's schema may disclose: it leaves the site in the schema handshake.

    A site's schema carries every level name of its categorical and ordinal columns
    and its row count; the federation's codebook (saved with a model, in
    ``model.json``, and sent back to every node of a deployment) is their union. So
    a site is refused

    - with fewer than ``min_rows`` rows (a one-row site's schema *is* its row);
    - with a categorical or ordinal column of more than ``max_levels`` levels;
    - with a column that has a level name longer than :data:`MAX_LEVEL_CHARS` (64)
      characters (text, not a category);
    - with a column that looks like an identifier: at least
      :data:`IDENTIFIER_SHARE` (90 %) as many distinct values as rows, on a site of
      at least :data:`IDENTIFIER_MIN_ROWS` rows (an ID, a date-time as text);

    and, unless the site's owner declared the column's kind (``declared``, below):

    - with a column of more than :data:`RARE_LEVELS` (30) levels and fewer than
      :data:`MIN_ROWS_PER_LEVEL` (20) rows per level on average (the site's rows
      over its levels): names or codes of people, e.g. 60 names over 1,000 rows;
    - with a column that has a level of free text: at least
      :data:`FREE_TEXT_WORDS` (5) words (separated by white space) with a digit and
      a punctuation mark of sentences (``; : ! ? … # @``, or a ``,`` or ``.`` not
      between two digits), e.g. ``Jane Doe, MRN 4471-22, HIV positive``;
    - with a column of notes (known where the rows are, ``counts``): at least two of
      its levels, and more than half of them, have :data:`NOTE_WORDS` (3) words or
      more and are held by a single row each.

    A level name of ordinary categories (``yes``, ``Female``, ``HIGH``,
    ``Bosnia and Herzegovina``, ``$25,000 to $49,999``, ``1 to 2 times a week``)
    passes every rule.

    Parameters
    ----------
    min_rows
        The fewest rows a site's file may hold (default :data:`MIN_SITE_ROWS`).
    max_levels
        The most levels one column may report (default :data:`MAX_SITE_LEVELS`).
    owner_kinds
        Whether the kinds given to the reader are the site owner's, so that a kind
        given to a column declares it (a run on files one holds); False on a deployed
        node, whose run's kinds are the coordinator's.

    Raises
    ------
    ConfigError
        If either is not a positive integer.
    """

    min_rows: int = MIN_SITE_ROWS
    max_levels: int = MAX_SITE_LEVELS
    owner_kinds: bool = True

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
        self,
        site: str,
        n_rows: int,
        levels: Mapping[str, Sequence[str]],
        where: str = "",
        *,
        counts: Mapping[str, Mapping[str, int]] | None = None,
        declared: Collection[str] | None = None,
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
        counts
            Column -> level name -> its rows, where the rows are known (the site's own
            reading; a column left out is not checked for notes).
        declared
            The columns whose kind the site's owner declared (``kinds``): exempt from
            the rules on rare levels, free text and notes (the class docstring).
            ``None`` where no declaration can count (a deployed node's audit of its
            description: the run's kinds are the coordinator's, not the owner's).

        Raises
        ------
        SampleSizeError
            Fewer rows than ``min_rows``.
        DataError
            A column that breaks a rule (the class docstring), naming the site and the
            column, never a level.
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
            longest = max((len(name) for name in names), default=0)
            if longest > MAX_LEVEL_CHARS:
                raise DataError(
                    f"column {column!r} of {owner} has a level of {longest:,} characters, "
                    f"more than the {MAX_LEVEL_CHARS} a level name may have (every level name "
                    "leaves the site): it holds text, not categories; remove it from the "
                    "file, or recode its values as short category names"
                )
            if n_rows >= IDENTIFIER_MIN_ROWS and count >= IDENTIFIER_SHARE * n_rows:
                raise DataError(
                    f"column {column!r} of {owner} looks like an identifier ({count} distinct "
                    f"values in {n_rows} rows), and every level name leaves the site; remove "
                    f"it from the file, or set kinds.{column}=continuous if it holds measurements"
                )
            if declared is None or column not in declared:
                found = _personal(names, n_rows, None if counts is None else counts.get(column))
                if found:
                    raise DataError(
                        f"column {column!r} of {owner} {found}, and every level name leaves "
                        f"the site; {_fix(column, declared is not None)}"
                    )

    def check_schema(
        self,
        schema: SiteSchema,
        where: str = "",
        *,
        counts: Mapping[str, Mapping[str, int]] | None = None,
        declared: Collection[str] | None = None,
    ) -> None:
        """:meth:`check` on a :class:`SiteSchema`."""
        levels = {c.name: c.levels for c in schema.columns if c.kind in LEVELLED}
        self.check(schema.site, schema.n_rows, levels, where, counts=counts, declared=declared)


def _personal(names: Sequence[str], n_rows: int, counts: Mapping[str, int] | None) -> str:
    """What makes a column's level names look like people's data (the rules on rare
    levels, free text and notes of :class:`SchemaLimits`), or ``""``: never a level."""
    count = len(names)
    if count > RARE_LEVELS and n_rows < MIN_ROWS_PER_LEVEL * count:
        return (
            f"looks like names or codes of people ({count} levels in {n_rows} rows, "
            f"{n_rows / count:.1f} rows per level; a column of more than {RARE_LEVELS} "
            f"levels needs {MIN_ROWS_PER_LEVEL} rows per level on average)"
        )
    text = next((len(name.split()) for name in names if free_text(name)), 0)
    if text:
        return f"looks like free text (a level of {text} words with digits and punctuation)"
    if counts is not None:
        notes = sum(
            1 for name in names if counts.get(name) == 1 and len(name.split()) >= NOTE_WORDS
        )
        if notes >= 2 and 2 * notes > count:
            return (
                f"looks like free text ({notes} of its {count} levels are {NOTE_WORDS} words "
                "or more held by a single row each)"
            )
    return ""


def free_text(level: str) -> bool:
    """Whether a level name reads like free text: at least :data:`FREE_TEXT_WORDS`
    words, a digit and a punctuation mark of sentences (:class:`SchemaLimits`)."""
    return (
        len(level.split()) >= FREE_TEXT_WORDS
        and any(ch.isdigit() for ch in level)
        and _SENTENCE_MARK.search(level) is not None
    )


def may_have_notes(names: Sequence[str]) -> bool:
    """Whether any level name has :data:`NOTE_WORDS` words or more (only such a column
    needs its level counts for the rule on notes)."""
    return any(len(name.split()) >= NOTE_WORDS for name in names)


def _fix(column: str, declarable: bool) -> str:
    """How an owner resolves a refused column."""
    if declarable:
        return (
            "remove it from the file, recode its values into categories, or declare it "
            f"with --set kinds.{column}=categorical if its level names may leave the site"
        )
    return (
        "remove it from the site's file or recode its values into categories (a deployed "
        "node does not take the run's kinds as its owner's declaration)"
    )
