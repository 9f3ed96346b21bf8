"""The batched G²/χ² counts as products on a torch device (``device=`` of the test).

:meth:`~fedstruct.discovery.discrete.DiscreteTest.compute_many` counts the tables of many
conditioning sets at once as products of the rows' 0/1 indicator matrix ``H`` (one
column per variable and nonzero value): per cell ``(x, y)`` of the tested pair, the
column sums of ``H`` restricted to the cell's rows (sets of one variable) and ``Hᵀ H``
over them (sets of two; module docstring of :mod:`~fedstruct.discovery.discrete`). On
a wide table these products are most of a search's time (pigs, 441 variables: two
thirds). :class:`DeviceCounts` holds ``H`` on a torch device, copied once, and computes
the same products there.

The counts are identical on every device: ``H`` holds 0 and 1 (exact in float32 and in
TF32's 10-bit mantissa), every partial sum is an integer below 2²⁴ (float32 holds those
exactly, whatever the order of the additions, atomics included), and only the counts
come back to the CPU, where the statistics and p-values are computed as without a
device. A search on a device therefore finds the graph of the CPU search, test for test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from fedstruct.fl.device import resolve_device

if TYPE_CHECKING:
    import torch

__all__ = ["DeviceCounts"]


class DeviceCounts:
    """The indicator matrix ``H`` on a torch device, and its per-cell products.

    Parameters
    ----------
    onehot
        ``(rows, columns)`` 0/1 indicators, float32 (rows below 2²⁴) or float64.
    device
        A device setting (:func:`~fedstruct.fl.device.resolve_device`: ``auto``,
        ``cpu``, ``cuda`` or ``cuda:N``).

    Raises
    ------
    ConfigError
        For a device this machine does not have.
    """

    def __init__(self, onehot: NDArray[np.floating], device: str) -> None:
        import torch

        self.device = resolve_device(device)
        self._onehot = torch.from_numpy(np.ascontiguousarray(onehot)).to(self.device)

    def _rows(self, columns: NDArray[np.intp] | None, order: torch.Tensor | None = None):
        import torch

        rows = self._onehot if order is None else self._onehot.index_select(0, order)
        if columns is None:
            return rows
        return rows.index_select(1, torch.from_numpy(columns).to(self.device))

    def cell_sums(
        self, xy: NDArray[np.int64], cells: int, columns: NDArray[np.intp] | None
    ) -> NDArray[np.floating]:
        """``(cells, width)``: per cell ``c``, the column sums of ``H[:, columns]`` over
        the rows with ``xy == c`` (``columns=None``: every column)."""
        import torch

        rows = self._rows(columns)
        out = torch.zeros((cells, rows.shape[1]), dtype=rows.dtype, device=self.device)
        out.index_add_(0, torch.from_numpy(xy).to(self.device), rows)
        return out.cpu().numpy()

    def cell_grams(
        self, xy: NDArray[np.int64], cells: int, columns: NDArray[np.intp] | None
    ) -> NDArray[np.floating]:
        """``(cells, width, width)``: per cell ``c``, ``Hᵀ H`` over the rows with
        ``xy == c`` and the ``columns`` of ``H`` (``None``: every column)."""
        import torch

        order = np.argsort(xy, kind="stable")
        sizes = np.bincount(xy, minlength=cells)
        bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
        rows = self._rows(columns, torch.from_numpy(order).to(self.device))
        width = rows.shape[1]
        out = torch.empty((cells, width, width), dtype=rows.dtype, device=self.device)
        for c in range(cells):
            part = rows[bounds[c] : bounds[c + 1]]
            torch.matmul(part.T, part, out=out[c])
        return out.cpu().numpy()
