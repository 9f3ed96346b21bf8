"""Data sets, samplers, synthetic generators and partitioners (bottom layer)."""

from fedstruct.data.client import OBSERVATIONAL, ClientData, check_federation
from fedstruct.data.schedule import Schedule

__all__ = ["OBSERVATIONAL", "ClientData", "Schedule", "check_federation"]
