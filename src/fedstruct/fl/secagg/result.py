"""What a summation returns (:func:`fedstruct.fl.summation.send_and_sum`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from numpy.typing import NDArray

__all__ = ["SumResult"]


@dataclass(frozen=True)
class SumResult:
    """The sum of a summable request's replies.

    Attributes
    ----------
    arrays, metrics
        Per name, the sum over the contributing nodes (weighted by the weight metric
        when one was named; the weight metric itself is the sum of the weights).
    nodes
        The nodes whose replies are in the sum, sorted.
    dropped
        Nodes that sent their shares but no answer (their masks were removed).
    withheld
        Answers left out because fewer than ``min_clients`` answered (secure
        aggregation only: a smaller sum would show one client's value).
    """

    arrays: dict[str, NDArray[Any]] = field(default_factory=dict)
    metrics: dict[str, float | int] = field(default_factory=dict)
    nodes: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    withheld: int = 0
