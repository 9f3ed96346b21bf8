"""ENCO (Lippe et al. 2021), vectorised across variables and sampled graphs."""

from fedstruct.methods.fedcd.enco.learner import ENCO, ENCOConfig
from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks

__all__ = ["ENCO", "ConditionalNetworks", "ENCOConfig"]
