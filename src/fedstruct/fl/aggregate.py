"""Pure aggregation helpers shared by server algorithms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError
from fedstruct.fl.grid import LateReply
from fedstruct.fl.message import Message

__all__ = ["answers_with_late", "weighted_average"]


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


def answers_with_late(
    replies: Mapping[int, Message],
    late: Sequence[LateReply],
    kind: str,
    staleness_exponent: float | None,
) -> list[tuple[Message, float]]:
    """The round's answers with their aggregation weights, late ones included.

    A fresh answer weighs its sample count ``n_k`` (``metrics["n"]``); an answer of
    ``kind`` computed ``s`` rounds earlier weighs ``n_k (1 + s)^-a`` with
    ``a = staleness_exponent`` (asynchronous FL's polynomial staleness discount, Xie
    et al. 2019, FedAsync); with ``None`` late answers are left out. Fresh answers
    come first, in node order, so the sum is the same on every backend.
    """
    out = [(r, float(r.metrics["n"])) for _, r in sorted(replies.items())]
    if staleness_exponent is not None:
        out += [
            (
                lr.message,
                float(lr.message.metrics["n"]) * (1.0 + lr.staleness) ** -staleness_exponent,
            )
            for lr in late
            if lr.message.kind == kind
        ]
    return out
