"""G² (likelihood-ratio) and Pearson χ² conditional-independence tests for discrete data.

For ``X ⊥ Y | Z`` the rows are counted in a three-way table ``n[z, x, y]`` (``z`` one
configuration of the conditioning set) and compared with the counts expected under
conditional independence, ``E[z, x, y] = n[z, x, +] n[z, +, y] / n[z, +, +]``
(Agresti 2002, *Categorical Data Analysis*, 2nd ed., §3.2.1 and §6.3 for the
stratified form; Spirtes, Glymour & Scheines 2000, §5.4.2.1):

- G² (``"g2"``): ``2 Σ n log(n / E)``, computed as
  ``2 [Σ n_zxy log n_zxy - Σ n_zx log n_zx - Σ n_zy log n_zy + Σ n_z log n_z]``
  with ``0 log 0 = 0`` (a table lookup of ``k log k``);
- Pearson χ² (``"chi2"``): ``Σ (n - E)² / E`` over the cells with ``E > 0``.

The p-value is the upper tail of the χ² distribution with the degrees of freedom
below (``scipy.special.chdtrc``); ``df = 0`` gives ``p = 1``.

Degrees of freedom (``dof``):

- ``"adjusted"`` (default; causal-learn, Tetrad, the Causal Learner toolbox): each
  non-empty stratum ``z`` contributes ``(r_z - 1)(c_z - 1)`` with ``r_z``, ``c_z`` the
  numbers of values of ``X`` and ``Y`` that occur in it; empty strata contribute 0.
- ``"plain"`` (pcalg's default): ``(|X| - 1)(|Y| - 1) ∏ |Z_k|``.

Counting is vectorised: each row's cell is one mixed-radix integer code
(``((z · |X|) + x) · |Y| + y``). A table of at most ``max(4096, 2n)`` cells is counted
densely with ``numpy.bincount``; a larger one (many configurations of ``Z``, most of
them empty) is reduced to its occupied cells by sorting the codes
(:func:`sparse_statistics`), which gives the same statistic and degrees of freedom
in ``O(n log n)``.

The small-sample rule (:class:`SmallSampleRule`) decides, before counting, whether a
test is performed at all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from fedstruct.errors import ConfigError, DataError, unknown_choice_message
from fedstruct.methods.fedcdnv.local.citest import CITest
from fedstruct.methods.fedcdnv.local.dataset import DataLike, as_matrix

__all__ = [
    "DOF_CONVENTIONS",
    "SMALL_SAMPLE_RULES",
    "DiscreteTest",
    "SmallSampleRule",
    "contingency_table",
    "resolve_small_sample_rule",
    "sparse_statistics",
    "stratum_codes",
    "table_statistics",
    "xlogx_table",
]

DOF_CONVENTIONS = ("adjusted", "plain")
"""Degrees-of-freedom conventions (module docstring)."""

#: Tables with at most max(this, 2 n) cells are counted densely, larger ones sparsely.
_DENSE_CELLS = 4096
#: Mixed-radix codes of Z are renumbered before they could exceed this (int64 safety).
_MAX_CODE = 1 << 40
#: Bytes of stratum codes a test keeps (each conditioning set's codes take ``8 n``).
_STRATA_CACHE_BYTES = 50_000_000


@dataclass(frozen=True)
class SmallSampleRule:
    """When a discrete test has too few rows to be performed, and what is assumed then.

    The test of ``X ⊥ Y | Z`` is performed iff ``n >= min_ratio * size``, where
    ``size`` is the number of cells ``|X||Y|∏|Z_k|`` (``per="cell"``) or the plain
    degrees of freedom ``(|X|-1)(|Y|-1)∏|Z_k|`` (``per="df"``), computed from the
    cardinalities (not from the observed table). A test not performed returns the
    ``verdict``: ``"dependent"`` (p = 0) or ``"independent"`` (p = 1), and counts as
    skipped (:attr:`CITest.n_skipped`).

    Attributes
    ----------
    min_ratio
        Required rows per cell (or per degree of freedom); ``0`` performs every test.
    per
        ``"cell"`` or ``"df"``.
    verdict
        ``"dependent"`` or ``"independent"``.
    """

    min_ratio: float
    per: Literal["cell", "df"] = "cell"
    verdict: Literal["dependent", "independent"] = "dependent"

    def __post_init__(self) -> None:
        if not self.min_ratio >= 0:
            raise ConfigError(f"min_ratio must be >= 0, got {self.min_ratio}")
        if self.per not in ("cell", "df"):
            raise ConfigError(unknown_choice_message("small-sample unit", self.per, ("cell", "df")))
        if self.verdict not in ("dependent", "independent"):
            raise ConfigError(
                unknown_choice_message("verdict", self.verdict, ("dependent", "independent"))
            )


SMALL_SAMPLE_RULES: dict[str, SmallSampleRule] = {
    # Causal Learner toolbox (Ling et al. 2021), my_g2_test: n / (|X||Y|prod|Z|) >= 5,
    # else p = NaN, read as dependence by its PC-style skeleton searches.
    "toolbox": SmallSampleRule(5.0, "cell", "dependent"),
    # pcalg (Kalisch et al. 2012) gSquareDis: n < 10 * df  =>  p = 1 ("treated as independence").
    "pcalg": SmallSampleRule(10.0, "df", "independent"),
    # causal-learn: no rule; every test is performed.
    "none": SmallSampleRule(0.0, "cell", "dependent"),
}
"""Named small-sample rules; ``"toolbox"`` is the default (see docs/local_learners.md)."""


def resolve_small_sample_rule(rule: str | SmallSampleRule) -> SmallSampleRule:
    """A :class:`SmallSampleRule` from itself or from a name of :data:`SMALL_SAMPLE_RULES`.

    Raises
    ------
    ConfigError
        For an unknown name.
    """
    if isinstance(rule, SmallSampleRule):
        return rule
    if rule not in SMALL_SAMPLE_RULES:
        raise ConfigError(unknown_choice_message("small-sample rule", rule, SMALL_SAMPLE_RULES))
    return SMALL_SAMPLE_RULES[rule]


# ------------------------------------------------------------------ pure maths
def stratum_codes(
    z: Sequence[NDArray[np.int64]], card_z: Sequence[int]
) -> tuple[NDArray[np.int64] | None, int]:
    """Mixed-radix code of each row's configuration of ``Z`` and the number of codes.

    The first variable is the most significant digit. Before a code could exceed
    ``2**40`` the configurations seen so far are renumbered densely (so the codes
    stay exact in int64). ``(None, 1)`` for an empty ``Z``.
    """
    strata = 1
    code: NDArray[np.int64] | None = None
    for col, card in zip(z, card_z, strict=True):
        if code is not None and strata * card > _MAX_CODE:
            _, code = np.unique(code, return_inverse=True)
            strata = int(code.max()) + 1
        code = col.copy() if code is None else code * card + col
        strata *= card
    return code, strata


def contingency_table(
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    z: Sequence[NDArray[np.int64]],
    card_x: int,
    card_y: int,
    card_z: Sequence[int],
) -> NDArray[np.int64]:
    """Counts ``n[s, a, b]`` of the rows with ``X = a``, ``Y = b`` in stratum ``s``.

    Strata are the configurations of ``Z`` (:func:`stratum_codes`); when there are
    more configurations than the rows can fill, only the observed ones are kept
    (renumbered in increasing code order), so the first axis has at most
    ``min(∏ card_z, n)`` strata. With an empty ``Z`` the first axis has length 1.

    Parameters
    ----------
    x, y
        Integer codes ``0..card-1`` of the two variables (1-D, length ``n``).
    z
        Codes of the conditioning variables.
    card_x, card_y, card_z
        Cardinalities.
    """
    n = x.shape[0]
    code, strata = stratum_codes(z, card_z)
    cells_xy = card_x * card_y
    xy = x * card_y + y
    if code is None:
        return np.bincount(xy, minlength=cells_xy).reshape(1, card_x, card_y)
    if strata > n:
        if strata <= 64 * max(n, 1024):
            present = np.bincount(code, minlength=strata) > 0
            code = (np.cumsum(present) - 1)[code]
            strata = int(present.sum())
        else:
            _, code = np.unique(code, return_inverse=True)
            strata = int(code.max()) + 1
    counts = np.bincount(code * cells_xy + xy, minlength=strata * cells_xy)
    return counts.reshape(strata, card_x, card_y)


def _run_starts(sorted_codes: NDArray[np.int64]) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Start positions of the runs of equal values in a sorted array, and the run flags."""
    new = np.empty(sorted_codes.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(sorted_codes[1:], sorted_codes[:-1], out=new[1:])
    return np.flatnonzero(new), new


def sparse_statistics(
    code_z: NDArray[np.int64] | None,
    x: NDArray[np.int64],
    y: NDArray[np.int64],
    card_x: int,
    card_y: int,
    statistic: str = "g2",
    xlogx: NDArray[np.float64] | None = None,
) -> tuple[float, int]:
    """G² or Pearson χ² and the adjusted degrees of freedom, from the occupied cells only.

    The same numbers as :func:`table_statistics` of the dense table, in
    ``O(n log n)`` whatever the number of configurations of ``Z``: the rows' cell
    codes are sorted once; the cells, the ``(z, x)`` and the ``z`` margins are runs of
    the sorted codes, the ``(z, y)`` margins runs after one more sort. Pearson's χ² is
    ``Σ_{n>0} n² n_z / (n_zx n_zy) - N`` (the cells with ``n = 0`` contribute ``E`` and
    ``Σ E = N``).

    Returns
    -------
    tuple
        ``(statistic, adjusted degrees of freedom)``.
    """
    n = x.shape[0]
    cells_xy = card_x * card_y
    f = x * card_y + y
    if code_z is not None:
        f = f + code_z * cells_xy
    f = np.sort(f)
    starts, _ = _run_starts(f)
    cell = f[starts]
    n_cell = np.diff(np.append(starts, n))
    # (z, x) margins and the z margin: runs of cell // |Y|, then of that // |X|.
    zx = cell // card_y
    zx_starts, zx_new = _run_starts(zx)
    n_zx = np.add.reduceat(n_cell, zx_starts)
    z_of_zx = zx[zx_starts] // card_x
    z_starts, z_new = _run_starts(z_of_zx)
    n_z = np.add.reduceat(n_zx, z_starts)
    rows = np.diff(np.append(z_starts, zx_starts.shape[0]))
    # (z, y) margins: one more sort.
    zy = (cell // cells_xy) * card_y + cell % card_y
    order = np.argsort(zy, kind="stable")
    zy_sorted = zy[order]
    zy_starts, zy_new = _run_starts(zy_sorted)
    n_zy = np.add.reduceat(n_cell[order], zy_starts)
    z2_starts, _ = _run_starts(zy_sorted[zy_starts] // card_y)
    cols = np.diff(np.append(z2_starts, zy_starts.shape[0]))
    df = int((np.maximum(rows - 1, 0) * np.maximum(cols - 1, 0)).sum())
    if statistic == "g2":
        if xlogx is None:
            xlogx = xlogx_table(n)
        g = 2.0 * (
            float(xlogx[n_cell].sum())
            - float(xlogx[n_zx].sum())
            - float(xlogx[n_zy].sum())
            + float(xlogx[n_z].sum())
        )
        return max(g, 0.0), df
    zx_run = np.cumsum(zx_new) - 1
    z_run = (np.cumsum(z_new) - 1)[zx_run]
    zy_run = np.empty(cell.shape[0], dtype=np.intp)
    zy_run[order] = np.cumsum(zy_new) - 1
    weight = n_z[z_run] / (n_zx[zx_run].astype(np.float64) * n_zy[zy_run])
    return max(float((n_cell.astype(np.float64) ** 2 * weight).sum()) - n, 0.0), df


def xlogx_table(n: int) -> NDArray[np.float64]:
    """``k log k`` for ``k = 0..n`` (``0 log 0 = 0``), the lookup table of G²."""
    k = np.arange(n + 1, dtype=np.float64)
    out = np.zeros(n + 1)
    out[1:] = k[1:] * np.log(k[1:])
    return out


def table_statistics(
    table: NDArray[np.int64],
    statistic: str = "g2",
    dof: str = "adjusted",
    card_z: Sequence[int] = (),
    xlogx: NDArray[np.float64] | None = None,
) -> tuple[float, int]:
    """G² or Pearson χ² of a ``(strata, |X|, |Y|)`` count table, and its degrees of freedom.

    Parameters
    ----------
    table
        Counts ``n[z, x, y]`` (:func:`contingency_table`).
    statistic
        ``"g2"`` or ``"chi2"`` (module docstring).
    dof
        ``"adjusted"`` or ``"plain"`` (module docstring); ``"plain"`` needs ``card_z``,
        since the strata of ``table`` may be only the observed configurations of ``Z``.
    xlogx
        Optional :func:`xlogx_table` of at least ``n + 1`` entries.

    Returns
    -------
    tuple
        ``(statistic, degrees of freedom)``.
    """
    _, cx, cy = table.shape
    add = np.add.reduce
    n_zx = add(table, axis=2)
    n_zy = add(table, axis=1)
    n_z = add(n_zx, axis=1)
    if dof == "plain":
        df = (cx - 1) * (cy - 1) * int(np.prod(card_z, dtype=np.int64))
    else:
        rows = add(n_zx > 0, axis=1)
        cols = add(n_zy > 0, axis=1)
        df = int(add(np.maximum(rows - 1, 0) * np.maximum(cols - 1, 0)))
    if statistic == "g2":
        if xlogx is None:
            xlogx = xlogx_table(int(add(n_z)))
        g = 2.0 * (
            float(add(xlogx[table], axis=None))
            - float(add(xlogx[n_zx], axis=None))
            - float(add(xlogx[n_zy], axis=None))
            + float(add(xlogx[n_z]))
        )
        return max(g, 0.0), df
    # Σ (n - E)² / E over the cells with E > 0 is Σ n² n_z / (n_zx n_zy) - N (cells
    # with n > 0 have E > 0, and Σ E = N): one pass, as in sparse_statistics.
    denominator = n_zx[:, :, None].astype(np.float64) * n_zy[:, None, :]
    ratio = np.divide(
        np.square(table, dtype=np.float64) * n_z[:, None, None],  # no int64 overflow
        denominator,
        out=np.zeros(table.shape),
        where=denominator > 0,
    )
    return max(float(add(ratio, axis=None)) - float(add(n_z)), 0.0), df


# ------------------------------------------------------------------- the test
class DiscreteTest(CITest):
    """G² or Pearson χ² test of conditional independence on integer-coded data.

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array of state codes ``0..k-1``
        (integer-valued floats are accepted).
    statistic
        ``"g2"`` (likelihood ratio, default) or ``"chi2"`` (Pearson).
    names
        Variable names for an array (default ``X0, X1, ...``).
    cardinalities
        Number of states per variable, as a mapping name -> k or a sequence in column
        order; default ``max code + 1`` of each column (a state that never occurs
        still counts, so give the true cardinalities when they are known).
    small_sample
        A :class:`SmallSampleRule` or the name of one in :data:`SMALL_SAMPLE_RULES`;
        default ``"toolbox"`` (at least 5 rows per cell, else dependent).
    dof
        ``"adjusted"`` (default) or ``"plain"`` degrees of freedom.

    Raises
    ------
    DataError
        For non-integer values (use Fisher-z or discretise), negative codes, a code
        not below the given cardinality, a constant column, a non-numeric column.
    NonFiniteDataError
        For NaN or infinite values.
    ConfigError
        For an unknown statistic, rule or convention.
    """

    def __init__(
        self,
        data: DataLike,
        *,
        statistic: str = "g2",
        names: Sequence[str] | None = None,
        cardinalities: Mapping[str, int] | Sequence[int] | None = None,
        small_sample: str | SmallSampleRule = "toolbox",
        dof: str = "adjusted",
    ) -> None:
        if statistic not in ("g2", "chi2"):
            raise ConfigError(
                unknown_choice_message("discrete statistic", statistic, ("g2", "chi2"))
            )
        if dof not in DOF_CONVENTIONS:
            raise ConfigError(unknown_choice_message("dof convention", dof, DOF_CONVENTIONS))
        matrix = as_matrix(data, names)
        codes = _integer_codes(matrix.values, matrix.names, matrix.where)
        n = codes.shape[0]
        super().__init__(matrix.names, statistic, n)
        self._cards = _cardinalities(codes, matrix.names, cardinalities, matrix.where)
        self._columns = [np.ascontiguousarray(codes[:, k]) for k in range(codes.shape[1])]
        self._rule = resolve_small_sample_rule(small_sample)
        self._dof = dof
        self._xlogx = xlogx_table(n)
        self._dense_cells = max(_DENSE_CELLS, 2 * n)
        self._pair: tuple[int, int] | None = None
        self._xy = np.zeros(0, dtype=np.int64)  # the pair's cell codes, set with _pair
        self._strata_capacity = max(8, min(256, _STRATA_CACHE_BYTES // (8 * max(n, 1))))
        self._strata: OrderedDict[tuple[int, ...], tuple[NDArray[np.int64] | None, int]] = (
            OrderedDict()
        )

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of states of each variable, in index order."""
        return tuple(self._cards)

    @property
    def small_sample(self) -> SmallSampleRule:
        """The small-sample rule in force."""
        return self._rule

    @property
    def dof(self) -> str:
        """The degrees-of-freedom convention."""
        return self._dof

    def max_testable_size(self, i: int, j: int, candidates: Sequence[int]) -> int:
        """See :meth:`CITest.max_testable_size`: with a "dependent" rule, the largest
        ``k`` for which the ``k`` candidates of smallest cardinality pass the rule."""
        rule = self._rule
        if rule.min_ratio == 0 or rule.verdict != "dependent":
            return len(candidates)
        cards = self._cards
        size = (cards[i] - 1) * (cards[j] - 1) if rule.per == "df" else cards[i] * cards[j]
        budget = self._n_samples / rule.min_ratio  # type: ignore[operator]
        if size > budget:
            return -1
        k = 0
        for card in sorted(cards[v] for v in candidates):
            size *= card
            if size > budget:
                break
            k += 1
        return k

    def _stratum_codes(self, z: tuple[int, ...]) -> tuple[NDArray[np.int64] | None, int]:
        """:func:`stratum_codes` of ``Z``, cached (the least recently used dropped first).

        Tests that share a conditioning set (every pair tried given the same subset of
        a Possible-D-SEP or neighbour set) reuse its codes, and a set extends the cached
        codes of its prefix by one digit when that keeps them below ``2**40``: the
        same codes as computing them afresh.
        """
        cache = self._strata
        if z in cache:
            cache.move_to_end(z)
            return cache[z]
        prefix = cache.get(z[:-1]) if len(z) > 1 else None
        card = self._cards[z[-1]] if z else 1
        if prefix is not None and prefix[0] is not None and prefix[1] * card <= _MAX_CODE:
            out = (prefix[0] * card + self._columns[z[-1]], prefix[1] * card)
        else:
            out = stratum_codes([self._columns[k] for k in z], [self._cards[k] for k in z])
        cache[z] = out
        if len(cache) > self._strata_capacity:
            cache.popitem(last=False)
        return out

    def _pair_codes(self, i: int, j: int) -> NDArray[np.int64]:
        """``x * |Y| + y`` per row, kept for the last pair (the searches test one pair
        given many sets in a row)."""
        if self._pair != (i, j):
            self._pair = (i, j)
            self._xy = self._columns[i] * self._cards[j] + self._columns[j]
        return self._xy

    def _performed(self, i: int, j: int, z: tuple[int, ...]) -> bool:
        rule = self._rule
        if rule.min_ratio == 0:
            return True
        cards = self._cards
        size = (cards[i] - 1) * (cards[j] - 1) if rule.per == "df" else cards[i] * cards[j]
        for k in z:
            size *= cards[k]
        return self._n_samples >= rule.min_ratio * size  # type: ignore[operator]

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        if not self._performed(i, j, z):
            return (0.0 if self._rule.verdict == "dependent" else 1.0), True
        cols, cards = self._columns, self._cards
        card_z = [cards[k] for k in z]
        code, strata = self._stratum_codes(z)
        cx, cy = cards[i], cards[j]
        if strata * cx * cy <= self._dense_cells:
            xy = self._pair_codes(i, j)
            flat = xy if code is None else code * (cx * cy) + xy
            table = np.bincount(flat, minlength=strata * cx * cy).reshape(strata, cx, cy)
            stat, df = table_statistics(table, self._kind, self._dof, card_z, self._xlogx)
        else:
            stat, df = sparse_statistics(code, cols[i], cols[j], cx, cy, self._kind, self._xlogx)
            if self._dof == "plain":
                df = (cx - 1) * (cy - 1) * int(np.prod(card_z, dtype=np.int64))
        if df <= 0:
            return 1.0, False
        return float(chdtrc(df, stat)), False


def _integer_codes(values: NDArray, names: tuple[str, ...], where: str) -> NDArray[np.int64]:
    if values.dtype != np.int64:
        frac = values != np.round(values)
        if frac.any():
            col = int(np.flatnonzero(frac.any(axis=0))[0])
            example = values[np.flatnonzero(frac[:, col])[0], col]
            raise DataError(
                f"{where}variable {names[col]!r} has non-integer values (e.g. {example:g}); G² "
                "and χ² need integer state codes 0..k-1: use test='fisherz' for continuous "
                "data, or discretise the column first"
            )
        values = values.astype(np.int64)
    negative = (values < 0).any(axis=0)
    if negative.any():
        col = int(np.flatnonzero(negative)[0])
        raise DataError(
            f"{where}variable {names[col]!r} has the negative code {int(values[:, col].min())}; "
            "state codes must be 0..k-1 (drop rows with missing values, or recode)"
        )
    return values


def _cardinalities(
    codes: NDArray[np.int64],
    names: tuple[str, ...],
    given: Mapping[str, int] | Sequence[int] | None,
    where: str,
) -> list[int]:
    observed = (codes.max(axis=0) + 1).tolist()
    if given is None:
        return [int(c) for c in observed]
    if isinstance(given, Mapping):
        missing = [n for n in names if n not in given]
        if missing:
            raise DataError(
                f"{where}cardinalities miss the variable {missing[0]!r}; give one per column"
            )
        cards = [int(given[n]) for n in names]
    else:
        cards = [int(c) for c in given]
        if len(cards) != len(names):
            raise DataError(
                f"{where}{len(cards)} cardinalities for {len(names)} variables; give one per column"
            )
    for name, card, seen in zip(names, cards, observed, strict=True):
        if seen > card:
            raise DataError(
                f"{where}variable {name!r} has the code {seen - 1} but cardinality {card}; "
                "codes must be 0..k-1"
            )
    return cards
