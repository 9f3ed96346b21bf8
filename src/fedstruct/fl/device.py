"""Where torch trains: one device setting for every torch-trained method.

``device`` (``--device``; ``device=`` in Python) is ``auto`` (a CUDA GPU when torch
finds one, else the CPU), ``cpu``, ``cuda`` (the current GPU) or ``cuda:N``. Each
node resolves it for itself (:func:`resolve_device`; a deployed SuperNode may override
it, ``fedstruct flower supernode --device``), so the setting says where a node
computes, never what crosses: messages, checkpoints and saved models carry CPU numpy
arrays only (:func:`host_array`).

This module imports no torch at import time: method configs check the setting's
spelling (:class:`DeviceName`) without loading torch.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.constraints import Constraint
from fedstruct.errors import ConfigError, DataError

if TYPE_CHECKING:
    import torch

__all__ = ["AUTO", "DeviceName", "host_array", "is_cuda", "resolve_device", "seed_device"]

#: The default device setting: CUDA when available, else the CPU.
AUTO = "auto"
_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


class DeviceName(Constraint):
    """A device setting: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (checked without torch)."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and _PATTERN.fullmatch(value) is not None

    def describe(self) -> str:
        return "'auto', 'cpu', 'cuda' or 'cuda:N' (N: a GPU's index)"


def resolve_device(name: str) -> torch.device:
    """The torch device a setting names, checked against what this machine has.

    Parameters
    ----------
    name
        ``auto`` (CUDA when ``torch.cuda.is_available()``, else the CPU), ``cpu``,
        ``cuda`` or ``cuda:N``.

    Raises
    ------
    ConfigError
        One line, for a misspelt setting, for ``cuda`` on a machine where torch finds
        no CUDA GPU, or for a GPU index this machine does not have.
    """
    import torch

    if not DeviceName().accepts(name):
        raise ConfigError(f"device {name!r}: give {DeviceName().describe()}")
    if name == AUTO:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device {name!r}: torch finds no CUDA GPU on this machine "
                f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
                "set the device to cpu or auto (--set device=cpu)"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise ConfigError(
                f"device {name!r}: this machine has {count} CUDA GPU(s), cuda:0 to "
                f"cuda:{count - 1}; give one of them, or cuda"
            )
    return device


def is_cuda(device: torch.device) -> bool:
    """Whether ``device`` is a CUDA GPU."""
    return device.type == "cuda"


def seed_device(seed: int, device: torch.device) -> None:
    """Seed the CUDA generators too when ``device`` is a GPU (a no-op on the CPU, so
    CPU runs draw exactly what they drew before devices existed)."""
    if is_cuda(device):
        import torch

        torch.cuda.manual_seed_all(int(seed) % (2**63))


def host_array(tensor: torch.Tensor, name: str = "tensor") -> NDArray[Any]:
    """A CPU numpy copy of ``tensor``, wherever it lives: what leaves a node.

    Raises
    ------
    DataError
        If ``tensor`` is on the ``meta`` device (a shape without values: a model built
        for its shapes only cannot be sent or saved).
    """
    if tensor.is_meta:
        raise DataError(
            f"{name} is on the 'meta' device: it has a shape but no values, so it cannot "
            "be sent or saved; build the model on 'cpu' or 'cuda' and train it first"
        )
    return np.array(tensor.detach().cpu().numpy(), copy=True)
