"""DP-SGD sites' ε, asked after a round whose updates were summed.

A summed round (:func:`~fedstruct.fl.summation.send_and_sum`, with or without secure
aggregation) cannot say what each site spent; the server asks the sites of the sum
for it in one more message, a site's own public accounting (one number), answered in
the clear (docs/privacy.md, "Differential privacy").
"""

from __future__ import annotations

from collections.abc import Sequence

from fedstruct.fl.grid import Grid
from fedstruct.fl.message import Message
from fedstruct.privacy.dp import spent_epsilons

__all__ = ["ask_spent_epsilons"]


def ask_spent_epsilons(grid: Grid, nodes: Sequence[int], kind: str) -> dict[str, float]:
    """``dp_epsilon_<site>`` of each node in ``nodes`` that answers ``kind`` with an
    ``epsilon`` metric (:func:`~fedstruct.privacy.dp.spent_epsilons`)."""
    if not nodes:
        return {}
    replies = grid.send_and_receive({n: Message(kind) for n in nodes})
    return spent_epsilons((grid.node_name(n), m.metrics) for n, m in sorted(replies.items()))
