"""Pure aggregation helpers shared by server algorithms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError

__all__ = ["weighted_average"]


def weighted_average(
    updates: Sequence[tuple[Mapping[str, NDArray], float]],
) -> dict[str, NDArray]:
    """Average named arrays, each over the updates that contain it, with weights.

    With every update holding every name this is FedAvg's aggregation
    ``sum_k (n_k / n) w_k`` (McMahan et al. 2017, Algorithm 1). With partial
    updates (clients that trained only some modules) each array is averaged over
    the clients that sent it, weights renormalised per array — module-wise
    aggregation. Updates are summed in the order given, so a fixed order gives a
    bit-identical result.

    Parameters
    ----------
    updates
        Pairs ``(arrays, weight)``; weights must be positive.

    Returns
    -------
    dict
        Name -> averaged array (float64 promoted to the inputs' float type).

    Raises
    ------
    ProtocolError
        For an empty list, a non-positive weight, or shapes that disagree.
    """
    if not updates:
        raise ProtocolError("nothing to aggregate: no client update arrived")
    sums: dict[str, NDArray] = {}
    totals: dict[str, float] = {}
    for arrays, weight in updates:
        if not weight > 0:
            raise ProtocolError(f"aggregation weight must be positive, got {weight}")
        for name, arr in arrays.items():
            a = np.asarray(arr, dtype=np.float64)
            if name in sums:
                if sums[name].shape != a.shape:
                    raise ProtocolError(
                        f"update {name!r} has shape {a.shape}, others {sums[name].shape}"
                    )
                sums[name] += weight * a
                totals[name] += weight
            else:
                sums[name] = weight * a
                totals[name] = float(weight)
    dtypes = {}
    for arrays, _ in updates:
        for name, arr in arrays.items():
            dtypes.setdefault(name, np.asarray(arr).dtype)
    return {
        name: (sums[name] / totals[name]).astype(
            dtypes[name] if dtypes[name].kind == "f" else np.float64
        )
        for name in sums
    }
