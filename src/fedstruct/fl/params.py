"""A torch module's parameters as named numpy arrays: what crosses the wire."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from fedstruct.errors import DataError
from fedstruct.fl.device import host_array

__all__ = ["get_params", "set_params"]


def get_params(model: nn.Module) -> dict[str, NDArray[np.float32]]:
    """The model's parameters (its ``state_dict``) as named float32 arrays: CPU copies,
    wherever the model computes (:func:`~fedstruct.fl.device.host_array`).

    Raises
    ------
    DataError
        If a parameter is on the ``meta`` device (it has no values).
    """
    return {k: host_array(v, f"parameter {k!r}") for k, v in model.state_dict().items()}


def set_params(model: nn.Module, params: Mapping[str, NDArray]) -> None:
    """Load named arrays into the model (every parameter, nothing else), onto whatever
    device its parameters are on.

    Raises
    ------
    DataError
        If names or shapes do not match the model.
    """
    own = model.state_dict()
    if set(own) != set(params):
        raise DataError(f"parameter names {sorted(params)} do not match the model's {sorted(own)}")
    for k, v in params.items():
        if tuple(own[k].shape) != tuple(np.shape(v)):
            raise DataError(
                f"parameter {k!r} has shape {np.shape(v)}, the model expects {tuple(own[k].shape)}"
            )
    model.load_state_dict(
        {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in params.items()}
    )
