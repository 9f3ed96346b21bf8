"""The real Sachs et al. (2005) flow-cytometry data, its discretisations and ground truth.

Sachs, Perez, Pe'er, Lauffenburger & Nolan (2005), *Causal protein-signaling networks
derived from multiparameter single-cell data*, Science 308(5721):523-529. Eleven
phosphorylated proteins and phospholipids measured in 7,466 single human CD4+ T cells
under nine conditions (general stimulation, or stimulation plus one activator or
inhibitor). FedCDnv (§4.1, Table 1) learns from these data with G² tests, so after a
discretisation.

The file ``data/files/sachs_cytometry.csv.gz`` is cdt 0.6.0's ``cyto_full_data.csv``
with the columns renamed to the bnlearn ``sachs`` network's variable names and a
``condition`` column added (``data/files/README.md`` gives the provenance, the hashes
and how the conditions were recovered). Nothing is downloaded.

* :func:`load_sachs_data` — the measurements (float) or integer codes ``0..k-1``
  after :func:`quantile_codes`, :func:`log_interval_codes` or :func:`hartemink_codes`;
  all nine conditions pooled or any subset of them.
* :func:`sachs_row_conditions` — each row's condition, aligned with the data.
* :func:`sachs_ground_truth` — the 17-edge bnlearn ``sachs`` DAG (default) or the
  18-edge list cdt pairs with the data.
* :class:`RowSampler` — draws rows from a fixed table, so the real data plug into the
  partitioners (e.g. :func:`fedstruct.methods.fedcdnv.sources.variable_subset_clients`).
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng
from fedstruct.data.networks import load_network
from fedstruct.errors import ConfigError, DataError, SampleSizeError, unknown_choice_message
from fedstruct.graphs.graph import Graph

__all__ = [
    "DISCRETIZATIONS",
    "SACHS_CONDITIONS",
    "SACHS_FILE",
    "SACHS_VARIABLES",
    "RowSampler",
    "SachsCondition",
    "hartemink_codes",
    "load_sachs_data",
    "log_interval_codes",
    "quantile_codes",
    "sachs_ground_truth",
    "sachs_row_conditions",
]

#: Name of the shipped file inside ``fedstruct/data/files``.
SACHS_FILE = "sachs_cytometry.csv.gz"

#: The eleven variables, named as in the bnlearn ``sachs`` network, in that network's
#: (alphabetical) order — the column order of every frame returned here.
SACHS_VARIABLES: tuple[str, ...] = (
    "Akt", "Erk", "Jnk", "Mek", "P38", "PIP2", "PIP3", "PKA", "PKC", "Plcg", "Raf",
)  # fmt: skip

#: Sachs et al.'s (and cdt's) column names → bnlearn names (the file uses the latter).
ORIGINAL_NAMES: Mapping[str, str] = {
    "praf": "Raf",
    "pmek": "Mek",
    "plcg": "Plcg",
    "PIP2": "PIP2",
    "PIP3": "PIP3",
    "p44/42": "Erk",
    "pakts473": "Akt",
    "PKA": "PKA",
    "PKC": "PKC",
    "P38": "P38",
    "pjnk": "Jnk",
}

#: Accepted values of ``discretize`` (``None`` keeps the measurements).
DISCRETIZATIONS: tuple[str, ...] = ("quantile", "log-interval", "hartemink")


@dataclass(frozen=True)
class SachsCondition:
    """One of the nine experimental conditions (Sachs et al. 2005, Table 1 and Fig. 2).

    Attributes
    ----------
    name
        The stem of the original spreadsheet's file name, e.g. ``"cd3cd28+u0126"``.
    description
        The reagents.
    n_cells
        Number of cells (rows) measured under this condition.
    target
        The measured variable the reagent acts on (bnlearn name), or ``None`` for the
        two general-stimulation conditions. LY294002 inhibits PI3K, which is not
        measured; it is mapped to PIP3, PI3K's product.
    effect
        ``"stimulation"``, ``"inhibition"`` or ``"activation"``. Inhibitors act on the
        target's *activity*: its measured phosphorylation need not drop.
    """

    name: str
    description: str
    n_cells: int
    target: str | None
    effect: str


#: The conditions, in file order (the rows of the file are these blocks, in this order).
SACHS_CONDITIONS: tuple[SachsCondition, ...] = (
    SachsCondition("cd3cd28", "anti-CD3/CD28", 853, None, "stimulation"),
    SachsCondition("cd3cd28icam2", "anti-CD3/CD28 + ICAM-2", 902, None, "stimulation"),
    SachsCondition("cd3cd28+aktinhib", "anti-CD3/CD28 + Akt inhibitor", 911, "Akt", "inhibition"),
    SachsCondition("cd3cd28+g0076", "anti-CD3/CD28 + G06976", 723, "PKC", "inhibition"),
    SachsCondition("cd3cd28+psitect", "anti-CD3/CD28 + psitectorigenin", 810, "PIP2", "inhibition"),
    SachsCondition("cd3cd28+u0126", "anti-CD3/CD28 + U0126", 799, "Mek", "inhibition"),
    SachsCondition("cd3cd28+ly", "anti-CD3/CD28 + LY294002", 848, "PIP3", "inhibition"),
    SachsCondition("pma", "PMA", 913, "PKC", "activation"),
    SachsCondition("b2camp", "beta2cAMP", 707, "PKA", "activation"),
)

_CONDITION_NAMES = tuple(c.name for c in SACHS_CONDITIONS)

#: Aliases accepted by ``conditions``.
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "all": _CONDITION_NAMES,
    # The data set without reagent-specific perturbation that bnlearn and most
    # observational analyses use (Sachs et al.'s first file, 853 cells).
    "observational": ("cd3cd28",),
    # Both general-stimulation conditions (no targeted reagent).
    "general": ("cd3cd28", "cd3cd28icam2"),
}

#: cdt 0.6.0's ``cyto_full_target.csv`` (18 edges), mapped to bnlearn names. cdt does
#: not say where the list comes from.
CDT_EDGES: tuple[tuple[str, str], ...] = (
    ("PIP2", "PKC"), ("Plcg", "PIP2"), ("PIP3", "Plcg"), ("PIP2", "PIP3"), ("Plcg", "PKC"),
    ("PKC", "Jnk"), ("PKC", "P38"), ("PKA", "P38"), ("PKC", "Raf"), ("PKA", "Raf"),
    ("Raf", "Mek"), ("Mek", "Erk"), ("PKC", "Mek"), ("PKA", "Akt"), ("PIP3", "Akt"),
    ("PKA", "Mek"), ("PKA", "Erk"), ("PKA", "Jnk"),
)  # fmt: skip

_GROUND_TRUTHS = ("bnlearn", "cdt")


# ------------------------------------------------------------------ the file
@cache
def _read_file() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The measurements (file column order) and each row's condition index, read once."""
    source = resources.files("fedstruct.data").joinpath("files", SACHS_FILE)
    try:
        with source.open("rb") as handle, gzip.open(handle, "rt", encoding="ascii") as text:
            frame = pd.read_csv(text)
    except (OSError, EOFError, ValueError) as exc:
        raise DataError(
            f"cannot read the shipped Sachs file {SACHS_FILE!r} ({exc}); reinstall fedstruct"
        ) from None
    expected = [*ORIGINAL_NAMES.values(), "condition"]
    if list(frame.columns) != expected or len(frame) != sum(c.n_cells for c in SACHS_CONDITIONS):
        raise DataError(
            f"the shipped Sachs file {SACHS_FILE!r} has an unexpected layout; reinstall fedstruct"
        )
    index = {name: i for i, name in enumerate(_CONDITION_NAMES)}
    condition = frame["condition"].map(index).to_numpy(dtype=np.int64)
    values = frame[list(SACHS_VARIABLES)].to_numpy(dtype=np.float64)
    values.setflags(write=False)
    condition.setflags(write=False)
    return values, condition


def _resolve_conditions(conditions: str | Sequence[str]) -> tuple[str, ...]:
    """Condition names (file order) from an alias, one name, or a sequence of names."""
    if isinstance(conditions, str):
        key = conditions.lower()
        if key in _ALIASES:
            return _ALIASES[key]
        conditions = (conditions,)
    chosen = list(conditions)
    if not chosen:
        raise DataError("conditions is empty; name at least one Sachs condition or 'all'")
    for name in chosen:
        if name not in _CONDITION_NAMES:
            raise DataError(
                unknown_choice_message("Sachs condition", name, [*_CONDITION_NAMES, *_ALIASES])
            )
    return tuple(c for c in _CONDITION_NAMES if c in set(chosen))


def _row_mask(conditions: str | Sequence[str]) -> NDArray[np.bool_]:
    chosen = _resolve_conditions(conditions)
    _, condition = _read_file()
    ids = [_CONDITION_NAMES.index(c) for c in chosen]
    return np.isin(condition, ids)


def sachs_row_conditions(conditions: str | Sequence[str] = "all") -> pd.Series:
    """Each row's condition name, aligned with :func:`load_sachs_data` (same index).

    Parameters
    ----------
    conditions
        As in :func:`load_sachs_data`.

    Returns
    -------
    pandas.Series
        Categorical series named ``"condition"`` with the categories in file order.
    """
    mask = _row_mask(conditions)
    _, condition = _read_file()
    codes = condition[mask]
    labels = pd.Categorical.from_codes(codes, categories=list(_CONDITION_NAMES))
    return pd.Series(labels, index=np.flatnonzero(mask), name="condition")


# ------------------------------------------------------------- discretisers
def _check_levels(n_levels: object, what: str = "n_levels") -> int:
    if isinstance(n_levels, bool) or not isinstance(n_levels, int | np.integer) or n_levels < 2:
        raise ConfigError(f"{what} must be an integer >= 2, got {n_levels!r}")
    return int(n_levels)


def quantile_codes(values: ArrayLike, n_levels: int = 3) -> NDArray[np.int64]:
    """Equal-frequency codes: cut at the empirical ``l / n_levels`` quantiles.

    The cut points are ``np.quantile``'s default (linear interpolation, R's type 7, as
    bnlearn's ``discretize(method = "quantile")``); bins are right-closed,
    ``(c_{l}, c_{l+1}]``, the lowest one including the minimum. Equal values always get
    the same code, so heavy ties can unbalance the bins; repeated cut points are merged
    (fewer levels, codes stay contiguous from 0).

    Parameters
    ----------
    values
        One variable's values, shape ``(n,)``.
    n_levels
        Number of bins wanted.

    Returns
    -------
    ndarray of int64
        Codes ``0..n_levels-1`` in increasing order of value.
    """
    k = _check_levels(n_levels)
    x = np.asarray(values, dtype=np.float64)
    cuts = np.unique(np.quantile(x, np.arange(1, k) / k))
    return np.searchsorted(cuts, x, side="left").astype(np.int64)


def log_interval_codes(values: ArrayLike, n_levels: int = 3) -> NDArray[np.int64]:
    """Equal-width codes on the log scale: ``n_levels`` intervals of ``log(x)``'s range.

    Interval discretisation (bnlearn's ``method = "interval"``) after a log transform:
    the measurements are positive and right-skewed over four orders of magnitude, so
    equal widths on the raw scale would put almost every cell in the lowest bin.
    Bins are right-closed; the lowest includes the minimum.

    Raises
    ------
    DataError
        If a value is not positive.
    """
    k = _check_levels(n_levels)
    x = np.asarray(values, dtype=np.float64)
    if x.size and x.min() <= 0:
        raise DataError("log_interval_codes needs positive values; use quantile_codes instead")
    logx = np.log(x)
    lo, hi = float(logx.min()), float(logx.max())
    cuts = lo + (hi - lo) * np.arange(1, k) / k
    return np.searchsorted(cuts, logx, side="left").astype(np.int64)


def _row_information(table: NDArray[np.float64], col_sums: NDArray[np.float64]) -> NDArray:
    """Per row ``r`` of a contingency table, ``h_r = Σ_b N_rb log(N_rb n / (N_r· N_·b))``.

    ``Σ_r h_r = n · I(x; y)`` (the plug-in mutual information, in nats), with ``n`` the
    table's total and ``col_sums`` its column totals ``N_·b``; ``table`` may also hold
    merged rows over the same columns.
    """
    n = col_sums.sum()
    row_sums = table.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table * np.log(table * n / (row_sums * col_sums)), 0.0)
    return terms.sum(axis=1)


def hartemink_codes(
    values: ArrayLike, n_levels: int = 3, *, initial_levels: int = 60
) -> NDArray[np.int64]:
    """Jointly discretise all columns, keeping as much pairwise information as possible.

    Hartemink (2001), *Principled computational methods for the validation and
    discovery of genetic regulatory networks*, PhD thesis, MIT, ch. 3: start from a
    fine quantile discretisation (:func:`quantile_codes` with ``initial_levels`` bins,
    as bnlearn's ``discretize(method = "hartemink", ibreaks = 60, idisc =
    "quantile")``), then repeatedly merge two *adjacent* bins of one variable, choosing
    the merge that keeps the largest sum of mutual informations ``Σ_{y≠x} I(x; y)``
    between that variable and all the others (at their current discretisation). The
    level count goes down one at a time, ``initial_levels - 1, …, n_levels``; at each
    count every variable that has that many bins is merged once, in column order.
    Sachs et al. (2005, supporting material) discretised their data into three levels
    with this method. Ties between merges go to the lowest bins; the result is
    deterministic.

    Merging rows ``a`` and ``a+1`` of ``x``'s table against ``y`` changes
    ``n·I(x; y)`` by ``h(N_a + N_{a+1}) − h(N_a) − h(N_{a+1})`` (see
    :func:`_row_information`; ``y``'s column totals do not change), so all candidate
    merges are scored from one table per pair.

    Parameters
    ----------
    values
        ``(n, p)`` array, one column per variable, ``p >= 2``.
    n_levels
        Final number of bins per variable.
    initial_levels
        Bins of the starting quantile discretisation (fewer if a variable has heavy
        ties); must be at least ``n_levels``.

    Returns
    -------
    ndarray of int64
        ``(n, p)`` codes ``0..n_levels-1`` in increasing order of value per column.
    """
    k = _check_levels(n_levels)
    k0 = _check_levels(initial_levels, "initial_levels")
    if k0 < k:
        raise ConfigError(f"initial_levels ({k0}) must be at least n_levels ({k})")
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise DataError(f"hartemink_codes needs an (n, p) array with p >= 2, got {x.shape}")
    p = x.shape[1]
    codes = np.column_stack([quantile_codes(x[:, j], k0) for j in range(p)])
    levels = codes.max(axis=0) + 1
    for level in range(int(levels.max()), k, -1):
        for j in np.flatnonzero(levels == level):
            gain = np.zeros(level - 1)
            for c in range(p):
                if c == j:
                    continue
                kc = int(levels[c])
                table = np.bincount(codes[:, j] * kc + codes[:, c], minlength=level * kc)
                table = table.reshape(level, kc).astype(np.float64)
                col_sums = table.sum(axis=0)
                h = _row_information(table, col_sums)
                gain += _row_information(table[:-1] + table[1:], col_sums) - h[:-1] - h[1:]
            a = int(np.argmax(gain))
            codes[:, j] = np.where(codes[:, j] > a, codes[:, j] - 1, codes[:, j])
            levels[j] -= 1
    return codes.astype(np.int64)


def _discretize(values: NDArray[np.float64], method: str, n_levels: int) -> NDArray[np.int64]:
    """Codes of every column of ``values`` by one of :data:`DISCRETIZATIONS`."""
    if method == "hartemink":
        return hartemink_codes(values, n_levels)
    per_column = quantile_codes if method == "quantile" else log_interval_codes
    return np.column_stack([per_column(column, n_levels) for column in values.T])


# ------------------------------------------------------------------- loader
def load_sachs_data(
    discretize: str | None = "quantile",
    *,
    conditions: str | Sequence[str] = "all",
    n_levels: int = 3,
) -> pd.DataFrame:
    """The Sachs et al. (2005) flow-cytometry data, raw or discretised.

    Parameters
    ----------
    discretize
        ``None``: the measurements as ``float64``. Otherwise integer codes
        ``0..n_levels-1`` (``int64``, low → high), computed on the selected rows:

        * ``"quantile"`` (default): equal-frequency bins per variable
          (:func:`quantile_codes`); each level holds a third of the rows. Balanced
          levels keep every cell of a G² contingency table as full as the sample
          allows, which decides results for clients with ~100 rows (FedCDnv's
          ``n_k ∈ [100, 2000]``) under a minimum-count rule; it is bnlearn's default
          method, needs no transform (invariant to monotone ones, log included) and
          is univariate, so a row's codes do not depend on the other variables.
        * ``"log-interval"``: equal-width bins of ``log(x)`` (:func:`log_interval_codes`);
          unbalanced (most cells in the middle level).
        * ``"hartemink"``: Sachs et al.'s own choice, Hartemink's (2001)
          information-preserving merge from 60 quantile bins (:func:`hartemink_codes`);
          joint over the variables, unbalanced, ~0.6 s on all rows.

        docs/data.md ("Sachs flow-cytometry data") compares the three with FCI.
    conditions
        ``"all"`` (default: the nine conditions pooled, 7,466 rows, as cdt ships them),
        ``"observational"`` (``cd3cd28`` only, 853 rows: general stimulation, no
        targeted reagent; bnlearn's observational Sachs data), ``"general"``
        (``cd3cd28`` and ``cd3cd28icam2``, 1,755 rows), one condition name or a
        sequence of them (see :data:`SACHS_CONDITIONS`).
    n_levels
        Bins per variable when discretising (the bnlearn ``sachs`` network has 3 states
        per variable: LOW, AVG, HIGH).

    Returns
    -------
    pandas.DataFrame
        One row per cell, columns :data:`SACHS_VARIABLES` (the bnlearn network's order);
        the index is the row's position in the file (0..7465), shared with
        :func:`sachs_row_conditions`.

    Raises
    ------
    DataError
        For an unknown discretisation or condition.
    ConfigError
        If ``n_levels`` is not an integer >= 2.
    """
    if discretize is not None and discretize not in DISCRETIZATIONS:
        raise DataError(unknown_choice_message("discretization", discretize, DISCRETIZATIONS))
    mask = _row_mask(conditions)
    index = np.flatnonzero(mask)
    if discretize is None:
        values, _ = _read_file()
        return pd.DataFrame(values[mask], columns=list(SACHS_VARIABLES), index=index)
    codes = _codes(_resolve_conditions(conditions), discretize, _check_levels(n_levels))
    return pd.DataFrame(codes.copy(), columns=list(SACHS_VARIABLES), index=index)


@cache
def _codes(conditions: tuple[str, ...], method: str, n_levels: int) -> NDArray[np.int64]:
    """The codes of the rows of ``conditions`` by ``method``, computed once per process
    (Hartemink's merge takes ~0.6 s; every run on the real data asks for the same)."""
    values, _ = _read_file()
    codes = _discretize(values[_row_mask(conditions)], method, n_levels)
    codes.setflags(write=False)
    return codes


def sachs_ground_truth(source: str = "bnlearn") -> Graph:
    """The reference signalling network over :data:`SACHS_VARIABLES`.

    Parameters
    ----------
    source
        ``"bnlearn"`` (default): the bnlearn repository's ``sachs`` DAG, 17 edges — the
        network Sachs et al. (2005, Fig. 3A) learned from these data, and the one every
        other fedstruct benchmark uses (``load_network("sachs").graph``).
        ``"cdt"``: the 18 edges cdt 0.6.0 pairs with the data. It has ``PIP3 -> Akt``,
        ``PIP2 -> PKC`` and ``Plcg -> PKC`` instead of bnlearn's ``Erk -> Akt`` and
        ``PKC -> PKA``, and reverses ``Plcg -> PIP3`` and ``PIP3 -> PIP2``; 13 directed
        edges are shared (15 adjacencies). It is *not* a DAG: it has the feedback cycle
        ``Plcg -> PIP2 -> PIP3 -> Plcg``, so use it for skeleton scores only.

    Returns
    -------
    Graph
        A directed graph over :data:`SACHS_VARIABLES`, in that order (a DAG for
        ``"bnlearn"``).
    """
    if source == "bnlearn":
        graph = load_network("sachs").graph
        if graph.names != SACHS_VARIABLES:
            raise DataError(
                f"the bnlearn sachs network's variables {graph.names} differ from "
                f"{SACHS_VARIABLES}; reinstall pgmpy>=1.0,<1.1"
            )
        return graph
    if source == "cdt":
        return Graph.from_edges(SACHS_VARIABLES, CDT_EDGES)
    raise DataError(unknown_choice_message("Sachs ground truth", source, _GROUND_TRUTHS))


# ------------------------------------------------------------------ sampler
class RowSampler:
    """Draw rows of a fixed table, like a network's ``sample`` (a partitioner ``Sampler``).

    Each call draws ``n`` distinct rows uniformly without replacement from the table
    (different calls are independent, so two clients may share rows) and returns them
    in the drawn order with a fresh ``0..n-1`` index. Real data cannot be sampled under
    an intervention: select the condition's rows when building the table instead
    (e.g. ``load_sachs_data(conditions="cd3cd28+u0126")``).

    Parameters
    ----------
    table
        The rows to draw from (kept as given; not copied).

    Examples
    --------
    >>> sampler = RowSampler(load_sachs_data())
    >>> sampler.sample(100, seed=0).shape
    (100, 11)
    """

    def __init__(self, table: pd.DataFrame) -> None:
        if not isinstance(table, pd.DataFrame) or len(table) == 0:
            raise DataError("RowSampler needs a non-empty pandas DataFrame")
        self.table = table

    @property
    def names(self) -> tuple[str, ...]:
        """The table's column names."""
        return tuple(str(c) for c in self.table.columns)

    def sample(
        self, n: int, *, seed: SeedLike, interventions: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """``n`` distinct rows drawn uniformly at random.

        Raises
        ------
        SampleSizeError
            If ``n`` is not a positive integer or exceeds the table's rows.
        DataError
            If ``interventions`` is given.
        """
        n = check_sample_size(n)
        if interventions:
            raise DataError(
                "real data cannot be sampled under an intervention; build the sampler "
                "on the rows of the matching condition instead"
            )
        if n > len(self.table):
            raise SampleSizeError(
                f"cannot draw {n} distinct rows from a table of {len(self.table)}; "
                "ask for fewer rows"
            )
        rng = make_rng(seed)
        rows = rng.choice(len(self.table), size=n, replace=False)
        return self.table.iloc[rows].reset_index(drop=True)
