"""Flower backends: run any fedstruct federation on Flower (simulation or deployment).

Needs the ``flower`` extra (``pip install fedstruct[flower]``): flwr[simulation] 1.41.
"""

from fedstruct.fl.flower.client_app import make_client_app, partition_of
from fedstruct.fl.flower.deployment import FlowerDeploymentBackend
from fedstruct.fl.flower.grid import HELLO, MESSAGE_TYPE, FlowerGrid
from fedstruct.fl.flower.records import from_records, to_records
from fedstruct.fl.flower.simulation import FlowerSimBackend

__all__ = [
    "HELLO",
    "MESSAGE_TYPE",
    "FlowerDeploymentBackend",
    "FlowerGrid",
    "FlowerSimBackend",
    "from_records",
    "make_client_app",
    "partition_of",
    "to_records",
]
