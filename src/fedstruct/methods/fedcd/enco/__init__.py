"""ENCO (Lippe et al. 2021), vectorised across variables and sampled graphs.

The names below are imported when first read: :class:`ENCOConfig` (FED-CD's run
settings inherit it) imports no torch.
"""

from typing import TYPE_CHECKING

from fedstruct.lazy import lazy_exports

if TYPE_CHECKING:
    from fedstruct.methods.fedcd.enco.config import ENCOConfig
    from fedstruct.methods.fedcd.enco.learner import ENCO
    from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks

__all__ = ["ENCO", "ConditionalNetworks", "ENCOConfig"]

__getattr__, __dir__ = lazy_exports(
    __name__, {"ENCO": "learner", "ConditionalNetworks": "networks", "ENCOConfig": "config"}
)
