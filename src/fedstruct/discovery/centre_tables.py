"""Every G²/χ² test of one conditioning variable around a centre, from a few products.

The first level of an adjacency search tests each adjacent pair ``x, y`` given each
single neighbour ``z`` of ``x`` (then of ``y``): with ``d`` variables of degree ``k``
that is about ``d k²`` tests, each a count of ``(z, x, y)`` over every row. Around a
*centre* ``x`` they share everything but ``y`` and ``z``: with ``H`` the rows' level
indicators of ``x``'s neighbours (one column per level of each), the product
``H_aᵀ H_a`` over the rows with ``x = a`` holds the counts of every pair of neighbours'
levels among those rows, so the tables of **all** tests ``(x, y | z)``, ``y, z`` two
neighbours of ``x``, come from one product per level of ``x`` (exact integers in
float32 below 2²⁴ rows). Their statistics are then computed for all pairs ``(y, z)``
at once, over tables padded to the largest number of levels among the neighbours
(padded levels have no row and drop out of every sum, as the empty strata and
unobserved levels of a table do).

Same counts, statistic, degrees of freedom (``"adjusted"``: per stratum, the levels
of ``x`` and ``y`` seen there; ``"plain"``: from the cardinalities), small-sample rule
and evidence weighting as :class:`~fedstruct.discovery.discrete.DiscreteTest`'s one
test at a time (Agresti 2002, §3.2.1 and §6.3); the sums run in another order, so the
values agree to floating-point rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from fedstruct.discovery.blas import one_blas_thread
from fedstruct.discovery.small_sample import SmallSampleRule, skipped_pvalue
from fedstruct.discovery.table_statistics import batch_statistics

__all__ = ["CentreTests", "centre_tests"]

#: The widest neighbourhood (sum of its variables' levels) one product covers; a wider
#: centre is left to the one-pair batches (its product would cost more than they do).
MAX_WIDTH = 1500
#: The most cells of a centre's padded tables (int64 each) computed at once.
MAX_CELLS = 30_000_000


class CentreTests:
    """The p-values of every test ``(centre, y | z)`` over ``y, z`` two neighbours.

    Attributes
    ----------
    position
        ``(d,)``: a variable's place among the neighbours, ``-1`` for the others.
    pvalues, skipped
        ``(k, k)``: the test of ``(centre, y | z)`` at ``[position[y], position[z]]``
        (the diagonal is no test).
    """

    def __init__(
        self, position: NDArray[np.intp], pvalues: NDArray[np.float64], skipped: NDArray[np.bool_]
    ) -> None:
        self.position, self.pvalues, self.skipped = position, pvalues, skipped

    def get(self, y: int, z: int) -> tuple[float, bool] | None:
        """``(p, skipped)`` of ``(centre, y | z)``, or ``None`` when ``y`` or ``z`` is not
        a neighbour."""
        a, b = self.position[y], self.position[z]
        if a < 0 or b < 0 or a == b:
            return None
        return float(self.pvalues[a, b]), bool(self.skipped[a, b])


def centre_tests(
    columns: Sequence[NDArray[np.int64]],
    cards: Sequence[int],
    centre: int,
    neighbours: Sequence[int],
    *,
    statistic: str,
    dof: str,
    rule: SmallSampleRule,
    xlogx: NDArray[np.float64],
    evidence: float = 1.0,
) -> CentreTests | None:
    """The tests ``(centre, y | z)`` for every two ``neighbours`` ``y != z`` (module
    docstring); ``None`` when the neighbourhood is too wide for one product.

    Parameters
    ----------
    columns, cards
        Every variable's codes (complete rows) and number of levels.
    centre, neighbours
        ``x`` and its neighbours (sorted, without ``x``).
    statistic, dof, rule, xlogx, evidence
        As :class:`~fedstruct.discovery.discrete.DiscreteTest`'s.
    """
    nb = np.asarray(neighbours, dtype=np.intp)
    k = len(nb)
    nb_cards = np.asarray([cards[v] for v in nb], dtype=np.intp)
    width = int(nb_cards.sum())
    if k < 2 or width > MAX_WIDTH:
        return None
    top = int(nb_cards.max())
    cx = cards[centre]
    if cx * (k * top) ** 2 > MAX_CELLS:
        return None
    n = len(columns[centre])
    offsets = np.concatenate(([0], np.cumsum(nb_cards)[:-1]))
    codes = np.stack([columns[v] for v in nb], axis=1)  # (n, k)
    indicators = np.zeros((n, width), dtype=np.float32 if n < 1 << 24 else np.float64)
    indicators[np.arange(n)[:, None], offsets + codes] = 1.0
    # each exact column's slot in the padded layout (k blocks of `top` levels)
    slot = (np.arange(k) * top)[np.repeat(np.arange(k), nb_cards)] + (
        np.arange(width) - np.repeat(offsets, nb_cards)
    )
    tables = np.zeros((cx, k * top, k * top), dtype=np.int64)
    x = columns[centre]
    with one_blas_thread():
        for a in range(cx):
            rows = indicators[x == a]
            if not len(rows):
                continue
            counts = rows.T @ rows
            tables[a][np.ix_(slot, slot)] = np.rint(counts).astype(np.int64)
    # (a, y, b, z, c) -> (y, z, strata c, x levels a, y levels b), a batch of k² tables
    tables = tables.reshape(cx, k, top, k, top).transpose(1, 3, 4, 0, 2)
    stat, df = batch_statistics(tables.reshape(k * k, top, cx, top), statistic, xlogx)
    stat, df = stat.reshape(k, k), df.reshape(k, k)
    card_y = nb_cards[:, None]
    card_z = nb_cards[None, :]
    if dof == "plain":
        df = (cx - 1) * (card_y - 1) * card_z
    size = (cx - 1) * (card_y - 1) if rule.per == "df" else cx * card_y
    performed = (n >= rule.min_ratio * size * card_z) if rule.min_ratio else np.ones((k, k), bool)
    if n == 0:
        performed = np.zeros((k, k), dtype=bool)
    weighed = stat if evidence == 1.0 else stat * evidence
    pvalues = np.where(df > 0, chdtrc(np.maximum(df, 1), weighed), 1.0)
    pvalues = np.where(performed, pvalues, skipped_pvalue(rule, n))
    position = np.full(len(cards), -1, dtype=np.intp)
    position[nb] = np.arange(k)
    return CentreTests(position, pvalues, ~performed)
