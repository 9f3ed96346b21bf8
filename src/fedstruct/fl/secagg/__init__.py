"""Secure aggregation (SecAgg+): the server learns the sum of the clients' replies,
not one of them.

A handler whose reply the server needs only as a sum declares it
(``@handles(kind, max_entries=..., summable=True)``); the server asks for the sum with
:func:`fedstruct.fl.summation.send_and_sum`, which runs this protocol (:mod:`.server`,
:mod:`.client`) when the run's grid has a :class:`SecAggConfig`, so that the server
only ever holds masked vectors.
"""

from fedstruct.fl.secagg.config import SecAggConfig, neighbour_graph
from fedstruct.fl.secagg.protocol import PREFIX
from fedstruct.fl.secagg.result import SumResult

__all__ = ["PREFIX", "SecAggConfig", "SumResult", "neighbour_graph"]
