"""G² and Pearson χ² of count tables: one table, a batch of tables, stacked tables.

The pure maths of the discrete tests (Agresti 2002, *Categorical Data Analysis*, 2nd
ed., §3.2.1 and §6.3; the formulas: :mod:`~fedstruct.discovery.discrete`'s module
docstring), shared by the one-process tests (:mod:`~fedstruct.discovery.discrete`), the
centre tables of a level (:mod:`~fedstruct.discovery.centre_tables`) and the pooled
tests (:mod:`~fedstruct.discovery.from_statistics`): a table is ``(strata, |X|, |Y|)``
counts, ``n[z, x, y]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["batch_statistics", "segment_statistics", "table_statistics", "xlogx_table"]


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


def batch_statistics(
    tables: NDArray[np.int64],
    statistic: str = "g2",
    xlogx: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """:func:`table_statistics` of many tables at once, with the adjusted degrees of freedom.

    Parameters
    ----------
    tables
        ``(batch, strata, |X|, |Y|)`` counts; strata that no row fills (padding)
        contribute nothing, as empty strata do in :func:`table_statistics`.
    statistic
        ``"g2"`` or ``"chi2"``.
    xlogx
        :func:`xlogx_table` of at least ``n + 1`` entries (needed for ``"g2"``).

    Returns
    -------
    tuple
        ``(statistics, adjusted degrees of freedom)``, one per table.
    """
    n_zx = tables.sum(axis=3)
    n_zy = tables.sum(axis=2)
    n_z = n_zx.sum(axis=2)
    rows = (n_zx > 0).sum(axis=2)
    cols = (n_zy > 0).sum(axis=2)
    df = (np.maximum(rows - 1, 0) * np.maximum(cols - 1, 0)).sum(axis=1)
    if statistic == "g2":
        if xlogx is None:
            xlogx = xlogx_table(int(n_z[0].sum()) if n_z.shape[0] else 0)
        g = 2.0 * (
            xlogx[tables].sum(axis=(1, 2, 3))
            - xlogx[n_zx].sum(axis=(1, 2))
            - xlogx[n_zy].sum(axis=(1, 2))
            + xlogx[n_z].sum(axis=1)
        )
        return np.maximum(g, 0.0), df
    denominator = n_zx[:, :, :, None].astype(np.float64) * n_zy[:, :, None, :]
    ratio = np.divide(
        np.square(tables, dtype=np.float64) * n_z[:, :, None, None],
        denominator,
        out=np.zeros(tables.shape),
        where=denominator > 0,
    )
    chi = ratio.sum(axis=(1, 2, 3)) - n_z.sum(axis=1)
    return np.maximum(chi, 0.0), df


def segment_statistics(
    tables: NDArray[np.int64],
    starts: NDArray[np.int64],
    statistic: str = "g2",
    xlogx: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """:func:`table_statistics` of many tables stacked along their strata.

    ``tables`` is ``(strata, |X|, |Y|)`` with the strata of test ``k`` from
    ``starts[k]`` to ``starts[k + 1]`` (each test at least one stratum). Every stratum's
    contribution is computed at once, then summed per test; returns
    ``(statistics, adjusted degrees of freedom)``.
    """
    n_zx = tables.sum(axis=2)
    n_zy = tables.sum(axis=1)
    n_z = n_zx.sum(axis=1)
    rows = (n_zx > 0).sum(axis=1)
    cols = (n_zy > 0).sum(axis=1)
    df = np.add.reduceat(np.maximum(rows - 1, 0) * np.maximum(cols - 1, 0), starts)
    if statistic == "g2":
        if xlogx is None:
            xlogx = xlogx_table(int(n_z.max(initial=0)))
        part = (
            xlogx[tables].sum(axis=(1, 2))
            - xlogx[n_zx].sum(axis=1)
            - xlogx[n_zy].sum(axis=1)
            + xlogx[n_z]
        )
        return np.maximum(2.0 * np.add.reduceat(part, starts), 0.0), df
    denominator = n_zx[:, :, None].astype(np.float64) * n_zy[:, None, :]
    ratio = np.divide(
        np.square(tables, dtype=np.float64) * n_z[:, None, None],
        denominator,
        out=np.zeros(tables.shape),
        where=denominator > 0,
    )
    chi = np.add.reduceat(ratio.sum(axis=(1, 2)) - n_z, starts)
    return np.maximum(chi, 0.0), df
