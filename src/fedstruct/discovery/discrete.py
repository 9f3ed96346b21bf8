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

Batched counting (:meth:`DiscreteTest.compute_many`): the searches test one pair
``X, Y`` given many conditioning sets of one or two variables drawn from one pool
(a neighbour or Possible-D-SEP set). With ``H`` the rows' one-hot codes of the pool's
variables, restricted to the rows of one cell ``(x, y)``, the counts of every pair of
pool variables in that cell are ``Hᵀ H`` (one matrix product per cell; the counts of
single variables are column sums of ``H``), so the tables of all ``|pool|²/2`` sets
cost about as much as a few single tests; the statistics are then computed for all
sets at once (:func:`batch_statistics`). Same counts, statistic, degrees of freedom
and p-value rules as the single test; the sums run in another order, so the numbers
agree to floating-point rounding.

The small-sample rule (:class:`SmallSampleRule`) decides, before counting, whether a
test is performed at all.

Evidence per row (:attr:`CITest.evidence`, 1 unless set): the statistic is multiplied
by it before its p-value is read — the statistic of the same table with every count so
multiplied, since G² and Pearson's χ² are proportional to the counts. A bootstrap
resample's rows count ``1/2`` (:meth:`fedstruct.data.ClientData.resampled`).

Missing values (``missing="testwise"``, a code ``-1`` or NaN): a test whose variables
all have a value in every row runs as above; any other test counts the rows complete
on ``X``, ``Y`` and ``Z`` (the AND of the variables' observed-row masks,
:mod:`fedstruct.discovery.missing`), one test at a time, with the small-sample rule
applied to that number of rows, so its p-value is the one the same test gives on
those rows alone; with no complete row it is skipped (whatever the rule). Batched
counting is used only on data without missing values.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from fedstruct.discovery.blas import one_blas_thread
from fedstruct.discovery.centre_tables import CentreTests, centre_tests
from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike, as_matrix
from fedstruct.discovery.missing import RowMasks
from fedstruct.discovery.small_sample import (
    SMALL_SAMPLE_RULES,
    SmallSampleRule,
    resolve_small_sample_rule,
    rule_max_size,
    rule_performs,
    skipped_pvalue,
)
from fedstruct.discovery.table_statistics import (
    batch_statistics,
    segment_statistics,
    table_statistics,
    xlogx_table,
)
from fedstruct.errors import ConfigError, DataError, unknown_choice_message
from fedstruct.fl.device import resolve_device

if TYPE_CHECKING:
    from fedstruct.discovery.device_counts import DeviceCounts

__all__ = [
    "DOF_CONVENTIONS",
    "SMALL_SAMPLE_RULES",
    "DiscreteTest",
    "SmallSampleRule",
    "batch_statistics",
    "contingency_table",
    "resolve_small_sample_rule",
    "rule_performs",
    "segment_statistics",
    "skipped_pvalue",
    "sparse_statistics",
    "stratum_codes",
    "table_statistics",
    "xlogx_table",
]

DOF_CONVENTIONS = ("adjusted", "plain")
"""Degrees-of-freedom conventions (module docstring)."""

_Stat = TypeVar("_Stat", float, NDArray[np.float64])

#: Tables with at most max(this, 2 n) cells are counted densely, larger ones sparsely.
_DENSE_CELLS = 4096
#: Mixed-radix codes of Z are renumbered before they could exceed this (int64 safety).
_MAX_CODE = 1 << 40
#: Bytes of stratum codes a test keeps (each conditioning set's codes take ``8 n``).
_STRATA_CACHE_BYTES = 50_000_000
#: Largest one-hot matrix (rows x variables x largest cardinality, 4 bytes each) or
#: column matrix (rows x variables, 8 bytes) batched counting keeps; larger data fall
#: back to one test at a time.
_ONEHOT_BYTES = 400_000_000
#: Row codes one ``bincount`` of :meth:`DiscreteTest.compute_many` counts at most.
_BATCH_CODES = 2_000_000
#: Largest pool count array (cells x (pool x largest cardinality)^2) of one batch.
_POOL_CELLS = 40_000_000


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


def _cell_grams(
    onehot: NDArray[np.floating],
    xy: NDArray[np.int64],
    sizes: NDArray[np.int64],
    columns: NDArray[np.intp] | None,
    *,
    presorted: bool = False,
) -> NDArray[np.floating]:
    """``(cells, width, width)``: per cell ``c``, ``Hᵀ H`` over the rows with ``xy == c``
    and the ``columns`` of ``H`` (``None``: every column); ``presorted``: the rows are
    already in cell order (one cell)."""
    if presorted:
        rows = onehot if columns is None else onehot[:, columns]
    else:
        order = np.argsort(xy, kind="stable")
        rows = onehot[order] if columns is None else onehot[np.ix_(order, columns)]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    width = rows.shape[1]
    out = np.empty((len(sizes), width, width), dtype=rows.dtype)
    with one_blas_thread():
        for c in range(len(sizes)):
            part = rows[bounds[c] : bounds[c + 1]]
            np.matmul(part.T, part, out=out[c])
    return out


def _full_tables(
    single: NDArray[np.floating],
    pairs: NDArray[np.floating],
    sizes: NDArray[np.int64],
    first: NDArray[np.intp],
    second: NDArray[np.intp],
    card_x: int,
    card_y: int,
) -> NDArray[np.int64]:
    """The ``(batch, strata, |X|, |Y|)`` tables of the sets ``(first[k],)`` (``pairs``
    empty) or ``(first[k], second[k])`` from :meth:`DiscreteTest._counts_over`'s counts.

    Value 0 of a variable is what its other values leave of the margin: with ``G`` the
    counts of two nonzero values, ``S`` of one and ``N`` the cell's rows,
    ``n[0, v] = S_b[v] - Σ_u G[u, v]``, ``n[u, 0] = S_a[u] - Σ_v G[u, v]``,
    ``n[0, 0] = N - Σ S_a - Σ S_b + Σ G`` (exact integers). Strata are the values of
    ``Z`` in mixed radix with the largest cardinality ``cm`` (a padded value has no rows).
    """
    cells, _, h = single.shape
    cm = h + 1
    batch = first.shape[0]
    s_a = single[:, first, :].transpose(1, 0, 2)  # (batch, cells, h)
    if pairs.size == 0:
        full = np.empty((batch, cells, cm))
        full[:, :, 1:] = s_a
        full[:, :, 0] = sizes - s_a.sum(axis=2)
        strata = cm
    else:
        g = pairs[:, first, :, second, :]  # (batch, cells, h, h)
        s_b = single[:, second, :].transpose(1, 0, 2)
        full = np.empty((batch, cells, cm, cm))
        full[:, :, 1:, 1:] = g
        full[:, :, 0, 1:] = s_b - g.sum(axis=2)
        full[:, :, 1:, 0] = s_a - g.sum(axis=3)
        full[:, :, 0, 0] = sizes - s_a.sum(axis=2) - s_b.sum(axis=2) + g.sum(axis=(2, 3))
        strata = cm * cm
    tables = np.rint(full.reshape(batch, cells, strata).transpose(0, 2, 1)).astype(np.int64)
    return tables.reshape(batch, strata, card_x, card_y)


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
    missing
        ``"testwise"`` (default: ``-1`` codes and NaN are missing values, each test on
        the rows complete on its variables; module docstring) or ``"error"``.
    device
        ``None`` (default): the batched counts in numpy on the CPU; a device setting
        (``"cuda"``, ``"cuda:N"``, ``"cpu"``, ``"auto"``): their products in torch there
        (:mod:`~fedstruct.discovery.device_counts`; the same counts, p-values and
        graph).

    Raises
    ------
    DataError
        For non-integer values (use Fisher-z or discretise), negative codes, a code
        not below the given cardinality, a constant column, a non-numeric column.
    NonFiniteDataError
        For infinite values, or NaN with ``missing="error"``.
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
        missing: str = "testwise",
        device: str | None = None,
    ) -> None:
        if statistic not in ("g2", "chi2"):
            raise ConfigError(
                unknown_choice_message("discrete statistic", statistic, ("g2", "chi2"))
            )
        if dof not in DOF_CONVENTIONS:
            raise ConfigError(unknown_choice_message("dof convention", dof, DOF_CONVENTIONS))
        matrix = as_matrix(data, names, missing)
        codes = _integer_codes(matrix.values, matrix.names, matrix.where)
        n = codes.shape[0]
        super().__init__(matrix.names, statistic, n)
        if matrix.observed is not None:
            self._masks = RowMasks(matrix.observed)
        self._cards = _cardinalities(codes, matrix.names, cardinalities, matrix.where)
        self._columns = [np.ascontiguousarray(codes[:, k]) for k in range(codes.shape[1])]
        self._rule = resolve_small_sample_rule(small_sample)
        self._dof = dof
        self._xlogx = xlogx_table(n)
        self._dense_cells = max(_DENSE_CELLS, 2 * n)
        self._card_array = np.asarray(self._cards, dtype=np.float64)
        #: Level 1's centre tables (:meth:`prepare_level`), when the search is there.
        self._level_neighbours: Sequence[Sequence[int]] | None = None
        self._centres: dict[int, CentreTests | None] = {}
        self._pair: tuple[int, int] | None = None
        self._xy = np.zeros(0, dtype=np.int64)  # the pair's cell codes, set with _pair
        self._strata_capacity = max(8, min(256, _STRATA_CACHE_BYTES // (8 * max(n, 1))))
        self._strata: OrderedDict[tuple[int, ...], tuple[NDArray[np.int64] | None, int]] = (
            OrderedDict()
        )
        self._onehot: NDArray[np.floating] | None = None  # built by the first batch
        self._column_matrix: NDArray[np.int64] | None = None  # (variables, n), ditto
        self._pool_key: tuple[int, int, tuple[int, ...], int] | None = None
        self._pool_counts: NDArray[np.floating] = np.zeros(0)
        self._single_key: tuple[int, int, tuple[int, ...], int] | None = None
        self._single_counts: NDArray[np.floating] = np.zeros(0)
        if device is not None:
            resolve_device(device)  # a device this machine lacks: refused before a search
        self._device = device
        self._device_counts: DeviceCounts | None = None
        self.forks = device is None

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
        ``k`` for which the ``k`` candidates of smallest cardinality pass the rule
        (:func:`~fedstruct.discovery.small_sample.rule_max_size`)."""
        return rule_max_size(self._rule, self._card_array, i, j, candidates, self._n_samples or 0)

    def prepare_level(self, level: int, neighbours: Sequence[Sequence[int]]) -> None:
        """At level 1 of the adjacency search (complete rows only), the tests given one
        neighbour are computed a centre at a time, each centre's all at once when its
        first is asked (:mod:`~fedstruct.discovery.centre_tables`); any other level
        drops them."""
        self._centres = {}
        self._level_neighbours = neighbours if level == 1 and self._masks is None else None

    def _centre_test(self, i: int, j: int, z: int) -> tuple[float, bool] | None:
        """The test ``(i, j | z)`` from the centre tables of ``i`` or ``j``, if any."""
        for centre, other in ((i, j), (j, i)):
            if centre not in self._centres:
                self._centres[centre] = centre_tests(
                    self._columns,
                    self._cards,
                    centre,
                    self._level_neighbours[centre],  # type: ignore[index]
                    statistic=self._kind,
                    dof=self._dof,
                    rule=self._rule,
                    xlogx=self._xlogx,
                    evidence=self.evidence,
                )
            found = self._centres[centre]
            if found is not None:
                value = found.get(other, z)
                if value is not None:
                    return value
        return None

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

    def compute_many(
        self, i: int, j: int, sets: Sequence[tuple[int, ...]], pool: Sequence[int] = ()
    ) -> list[tuple[float, bool]] | None:
        """See :meth:`CITest.compute_many`: batched counting of sets of one or two
        variables (module docstring); ``None`` for larger sets or too large data."""
        if not sets:
            return []
        if self._masks is not None:
            return None  # one test at a time, each on its complete rows
        size = len(sets[0])
        if any(len(s) != size for s in sets):
            return None
        if size == 1 and self._level_neighbours is not None:
            found = [self._centre_test(i, j, s[0]) for s in sets]
            if all(f is not None for f in found):
                return found  # type: ignore[return-value]
        if size not in (1, 2):
            return self._bincount_many(i, j, sets)
        if size == 1:
            members = tuple(range(len(self._cards)))  # one product for all, kept per pair
        else:
            members = tuple(sorted({v for s in sets for v in s}))
            if pool and (self._pool_key == (i, j, tuple(pool), 2) or 2 * len(members) >= len(pool)):
                members = tuple(pool)  # counted once for this pair's later batches too
        counted = self._counts_over(i, j, members, size)
        if counted is None:
            return self._bincount_many(i, j, sets)
        performed = [self._performed(i, j, s) for s in sets]
        verdict = 0.0 if self._rule.verdict == "dependent" else 1.0
        out: list[tuple[float, bool]] = [(verdict, True)] * len(sets)
        todo = [s for s, ok in zip(sets, performed, strict=True) if ok]
        if not todo:
            return out
        position = {v: k for k, v in enumerate(members)}
        first = np.array([position[s[0]] for s in todo], dtype=np.intp)
        second = np.array([position[s[-1]] for s in todo], dtype=np.intp)
        tables = _full_tables(*counted, first, second, self._cards[i], self._cards[j])
        stat, df = batch_statistics(tables, self._kind, self._xlogx)
        if self._dof == "plain":
            cx, cy, cards = self._cards[i], self._cards[j], self._cards
            df = np.array([(cx - 1) * (cy - 1) * int(np.prod([cards[k] for k in s])) for s in todo])
        pvalues = np.where(df > 0, chdtrc(np.maximum(df, 1), self._weighed(stat)), 1.0).tolist()
        done = iter(pvalues)
        return [(next(done), False) if ok else o for ok, o in zip(performed, out, strict=True)]

    def compute_unconditional(
        self, pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[float, bool]] | None:
        """See :meth:`CITest.compute_unconditional`: every pair's table from one product
        of all variables' indicators (module docstring), ``None`` when too large."""
        if not pairs:
            return []
        if self._masks is not None:
            return None
        d = len(self._cards)
        counted = self._counts_over(0, 1, tuple(range(d)), 2, unconditional=True)
        if counted is None:
            return None
        single, both, sizes = counted
        first = np.array([a for a, _ in pairs], dtype=np.intp)
        second = np.array([b for _, b in pairs], dtype=np.intp)
        cm = single.shape[2] + 1
        # As tables of Z = (a, b) given an empty pair: X = a, Y = b, one stratum (values
        # past a variable's cardinality have no rows and drop out of every sum).
        tables = _full_tables(single, both, sizes, first, second, 1, 1).reshape(-1, 1, cm, cm)
        stat, df = batch_statistics(tables, self._kind, self._xlogx)
        cards = self._cards
        if self._dof == "plain":
            df = np.array([(cards[a] - 1) * (cards[b] - 1) for a, b in pairs])
        pvalues = np.where(df > 0, chdtrc(np.maximum(df, 1), self._weighed(stat)), 1.0).tolist()
        verdict = 0.0 if self._rule.verdict == "dependent" else 1.0
        return [
            (p, False) if self._performed(a, b, ()) else (verdict, True)
            for p, (a, b) in zip(pvalues, pairs, strict=True)
        ]

    def _bincount_many(
        self, i: int, j: int, sets: Sequence[tuple[int, ...]]
    ) -> list[tuple[float, bool]] | None:
        """Batched counting of any sets whose tables are dense (``strata·|X||Y|`` at most
        ``max(4096, 2n)``, as the single test): the rows' cell codes of every set, offset
        by the set's place in the batch, counted by one ``bincount`` (module docstring).
        ``None`` when a table would be sparse."""
        cards = self._cards
        cx, cy = cards[i], cards[j]
        cells = cx * cy
        performed = [self._performed(i, j, s) for s in sets]
        strata = [math.prod(cards[k] for k in s) for s in sets]
        n_rows = self._n_samples or 0
        if max(strata) * cells > self._dense_cells or n_rows * len(cards) * 8 > _ONEHOT_BYTES:
            return None  # a sparse table, or data too large for the column matrix
        verdict = 0.0 if self._rule.verdict == "dependent" else 1.0
        out: list[tuple[float, bool]] = [(verdict, True)] * len(sets)
        todo = [(s, k) for s, k, ok in zip(sets, strata, performed, strict=True) if ok]
        if not todo:
            return out
        n = max(self._n_samples or 0, 1)
        xy = self._pair_codes(i, j)
        step = max(1, _BATCH_CODES // n)  # sets per bincount: bounded memory
        stats, dfs = [], []
        for start in range(0, len(todo), step):
            part = todo[start : start + step]
            offsets = np.cumsum([0] + [k for _, k in part])
            codes = self._batch_codes([s for s, _ in part])
            codes += offsets[:-1, None]
            codes *= cells
            codes += xy
            counts = np.bincount(codes.ravel(), minlength=int(offsets[-1]) * cells)
            tables = counts.reshape(-1, cx, cy)
            stat_part, df_part = segment_statistics(tables, offsets[:-1], self._kind, self._xlogx)
            stats.append(stat_part)
            dfs.append(df_part)
        stat, df = np.concatenate(stats), np.concatenate(dfs)
        if self._dof == "plain":
            df = np.array([(cx - 1) * (cy - 1) * k for _, k in todo])
        pvalues = np.where(df > 0, chdtrc(np.maximum(df, 1), self._weighed(stat)), 1.0).tolist()
        done = iter(pvalues)
        return [(next(done), False) if ok else o for ok, o in zip(performed, out, strict=True)]

    def _batch_codes(self, sets: list[tuple[int, ...]]) -> NDArray[np.int64]:
        """``(len(sets), n)`` mixed-radix stratum codes of sets of one size, built a
        digit at a time for all sets together (any numbering of the strata gives the
        same statistic; each set's codes stay below the product of its cardinalities)."""
        n = self._n_samples or 0
        if not sets[0]:
            return np.zeros((len(sets), n), dtype=np.int64)
        if self._column_matrix is None:
            self._column_matrix = np.stack(self._columns)
        members = np.array(sets, dtype=np.intp)
        cards = np.asarray(self._cards, dtype=np.int64)
        codes = self._column_matrix[members[:, 0]]
        for k in range(1, members.shape[1]):
            codes *= cards[members[:, k]][:, None]
            codes += self._column_matrix[members[:, k]]
        return codes

    def _counts_over(
        self, i: int, j: int, pool: tuple[int, ...], size: int, unconditional: bool = False
    ) -> tuple[NDArray[np.floating], NDArray[np.floating], NDArray[np.int64]] | None:
        """Counts per cell ``(x, y)`` of the pool's variables' nonzero values.

        Returns ``(single, pairs, cell sizes)``: ``single[c, a, u]`` rows of cell ``c``
        with ``Z_a = u + 1``; ``pairs[c, a, u, b, v]`` (``size`` 2, else empty) those
        with ``Z_a = u + 1`` and ``Z_b = v + 1``; values past a variable's cardinality
        count zero. The counts of value 0 follow from the margins
        (:func:`_full_tables`), so the products run over ``Σ (|Z_k| - 1)`` columns, half
        of the one-hot codes for binary variables. The last result of each size is
        kept. ``None`` when too large. ``unconditional``: one cell holding every row
        (``i``, ``j`` ignored; the pairs' counts of the pool, not kept).
        """
        key = (i, j, pool, size)
        if self._pool_key == key and not unconditional:
            return self._pool_counts
        if size == 1 and self._single_key == key:
            return self._single_counts
        n = self._n_samples or 0
        d = len(self._cards)
        h = max(max(self._cards) - 1, 1)
        cells = self._cards[i] * self._cards[j]
        width = len(pool) * h
        if unconditional:
            cells = 1
        if n * d * h * 4 > _ONEHOT_BYTES or (size == 2 and cells * width**2 > _POOL_CELLS):
            return None
        if self._onehot is None:
            dtype = np.float32 if n < 1 << 24 else np.float64  # exact integer sums
            codes = np.stack(self._columns, axis=1)
            rows, cols = np.nonzero(codes)
            onehot = np.zeros((n, d * h), dtype=dtype)
            onehot[rows, cols * h + codes[rows, cols] - 1] = 1
            self._onehot = onehot
        if unconditional:
            cells = 1
            xy = np.zeros(n, dtype=np.int64)
        else:
            xy = self._pair_codes(i, j)
        sizes = np.bincount(xy, minlength=cells)
        columns = (np.asarray(pool, dtype=np.intp)[:, None] * h + np.arange(h)).ravel()
        chosen = None if len(pool) == d else columns
        on_device = self._on_device()
        if size == 1:  # cell indicators' product with the indicators of the values
            if on_device is not None:
                single = on_device.cell_sums(xy, cells, chosen)
            else:
                cell = np.zeros((n, cells), dtype=self._onehot.dtype)
                cell[np.arange(n), xy] = 1
                rows = self._onehot if chosen is None else self._onehot[:, chosen]
                with one_blas_thread():
                    single = cell.T @ rows
            counted = (single.reshape(cells, len(pool), h), np.zeros(0), sizes)
            self._single_key, self._single_counts = key, counted
            return counted
        if on_device is not None:
            out = on_device.cell_grams(xy, cells, chosen)
        else:
            out = _cell_grams(self._onehot, xy, sizes, chosen, presorted=unconditional)
        pairs = out.reshape(cells, len(pool), h, len(pool), h)
        diagonal = out.reshape(cells, width * width)[:, :: width + 1]  # indicator² = itself
        counted = (diagonal.reshape(cells, len(pool), h), pairs, sizes)
        if not unconditional:
            self._pool_key, self._pool_counts = key, counted
        return counted

    def _on_device(self) -> DeviceCounts | None:
        """The indicator matrix on the test's torch device (copied there once), or
        ``None`` without a device (:mod:`~fedstruct.discovery.device_counts`)."""
        if self._device is None or self._onehot is None:
            return None
        if self._device_counts is None:
            from fedstruct.discovery.device_counts import DeviceCounts

            self._device_counts = DeviceCounts(self._onehot, self._device)
        return self._device_counts

    def _weighed(self, stat: _Stat) -> _Stat:
        """The statistic counted at :attr:`~CITest.evidence` per row (itself at 1): G²
        and Pearson's χ² are proportional to the counts, so this is the statistic of the
        same table with every count multiplied by the evidence."""
        return stat if self.evidence == 1.0 else stat * self.evidence

    def _performed(self, i: int, j: int, z: tuple[int, ...], n: int | None = None) -> bool:
        """Whether the small-sample rule performs the test on ``n`` rows (default: all)."""
        n = self._n_samples if n is None else n
        return rule_performs(self._rule, self._cards, i, j, z, n)  # type: ignore[arg-type]

    def _compute(self, i: int, j: int, z: tuple[int, ...]) -> tuple[float, bool]:
        if self._level_neighbours is not None and len(z) == 1:
            found = self._centre_test(i, j, z[0])
            if found is not None:
                return found
        rows = None if self._masks is None else self._masks.rows((i, j, *z))
        if rows is not None:
            return self._compute_on(rows, i, j, z)
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
        return float(chdtrc(df, self._weighed(stat))), False

    def _compute_on(
        self, rows: NDArray[np.bool_], i: int, j: int, z: tuple[int, ...]
    ) -> tuple[float, bool]:
        """The test on the rows ``rows`` marks (test-wise deletion): the same counts,
        rule and statistic as the test on those rows alone. No row: skipped, dependent
        (there is no evidence either way, and a skipped test never removes an edge)."""
        n = int(np.count_nonzero(rows))
        if not self._performed(i, j, z, n):
            return skipped_pvalue(self._rule, n), True
        cols, cards = self._columns, self._cards
        card_z = [cards[k] for k in z]
        code, strata = self._stratum_codes(z)
        cx, cy = cards[i], cards[j]
        if code is not None:
            code = code[rows]
        if strata * cx * cy <= self._dense_cells:
            xy = self._pair_codes(i, j)[rows]
            flat = xy if code is None else code * (cx * cy) + xy
            table = np.bincount(flat, minlength=strata * cx * cy).reshape(strata, cx, cy)
            stat, df = table_statistics(table, self._kind, self._dof, card_z, self._xlogx)
        else:
            stat, df = sparse_statistics(
                code, cols[i][rows], cols[j][rows], cx, cy, self._kind, self._xlogx
            )
            if self._dof == "plain":
                df = (cx - 1) * (cy - 1) * int(np.prod(card_z, dtype=np.int64))
        if df <= 0:
            return 1.0, False
        return float(chdtrc(df, self._weighed(stat))), False


def _integer_codes(values: NDArray, names: tuple[str, ...], where: str) -> NDArray[np.int64]:
    if values.dtype != np.int64:
        frac = values != np.round(values)
        if frac.any():
            col = int(np.flatnonzero(frac.any(axis=0))[0])
            example = values[np.flatnonzero(frac[:, col])[0], col]
            raise DataError(
                f"{where}variable {names[col]!r} has non-integer values (e.g. {example:g}); G² "
                "and χ² need integer state codes 0..k-1: let the kinds choose the test "
                "(ci_test='auto', --set ci_test=auto), or discretise the column first"
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
