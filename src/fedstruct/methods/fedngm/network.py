"""The neural view of an NGM: an MLP from all encoded features to all of them.

Shrivastava & Chajewska (2023), *Neural Graphical Models*, §3 (the "neural view"); the
FedNGM paper, eq. (1): the product of the absolute weight matrices ``Π_l |W_l|`` maps
paths from input to output units; an output does not depend on an input when their
entry is zero. Stitching (§2.4) grows the view with new input/output columns and new
hidden units while the old weights stay frozen.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Self

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from fedstruct.fl.device import host_array

__all__ = ["NeuralView", "group_matrix", "routing_masks", "variable_paths"]


class NeuralView(nn.Module):
    """``x -> W_L relu(... relu(W_1 x + b_1) ...) + b_L``, ``n_columns`` in and out.

    Parameters
    ----------
    n_columns
        Encoded feature count ``D`` (inputs and outputs).
    hidden
        Widths of the hidden layers (§3: one hidden layer, "2-layer neural view").
    seed
        Seed of the initial weights (PyTorch's default ``Linear`` initialisation).
    """

    def __init__(self, n_columns: int, hidden: Sequence[int], seed: int) -> None:
        super().__init__()
        widths = [int(n_columns), *(int(h) for h in hidden), int(n_columns)]
        gen = torch.Generator().manual_seed(int(seed))
        layers = []
        for a, b in itertools.pairwise(widths):
            layer = nn.Linear(a, b)
            bound = 1.0 / np.sqrt(a)
            with torch.no_grad():
                layer.weight.uniform_(-bound, bound, generator=gen)
                layer.bias.uniform_(-bound, bound, generator=gen)
            layers.append(layer)
        self.layers = nn.ModuleList(layers)
        self.routing: list[torch.Tensor] | None = None

    def route(self, masks: Sequence[NDArray]) -> None:
        """Fix a 0/1 mask on every weight matrix: the layer uses ``W ⊙ M`` (the hard
        alternative to the path penalty, see :func:`routing_masks`)."""
        device = self.layers[0].weight.device
        self.routing = [
            torch.as_tensor(np.asarray(m, dtype=np.float32), device=device) for m in masks
        ]

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> Self:
        """``.to(device)`` moves the routing masks with the weights."""
        super()._apply(fn, recurse)
        if self.routing is not None:
            self.routing = [fn(m) for m in self.routing]
        return self

    def weight(self, i: int) -> torch.Tensor:
        """Layer ``i``'s effective weight matrix (masked if routed)."""
        w = self.layers[i].weight
        return w if self.routing is None else w * self.routing[i]

    @property
    def widths(self) -> list[int]:
        """Input, hidden and output widths."""
        return [self.layers[0].in_features, *(layer.out_features for layer in self.layers)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Raw outputs: values of continuous columns, logits of one-hot groups."""
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = torch.nn.functional.linear(x, self.weight(i), layer.bias)
            if i < last:
                x = torch.relu(x)
        return x

    def path_matrix(self) -> torch.Tensor:
        """``|W_L| ... |W_1|``, shape ``(D out, D in)`` (eq. 1's path product)."""
        path = self.weight(0).abs()
        for i in range(1, len(self.layers)):
            path = self.weight(i).abs() @ path
        return path

    # ------------------------------------------------------------- freezing
    def freeze(self, trainable: Sequence[tuple[NDArray, NDArray]]) -> None:
        """Train only the entries marked in ``trainable`` (per layer: weight mask, bias
        mask); the others keep their values exactly (their gradients are zeroed, so
        Adam never moves them)."""
        for layer, (wm, bm) in zip(self.layers, trainable, strict=True):
            w = torch.as_tensor(np.asarray(wm, dtype=np.float32))
            b = torch.as_tensor(np.asarray(bm, dtype=np.float32))
            # .to(g.device): the view may train on another device (a no-op on the CPU)
            layer.weight.register_hook(lambda g, m=w: g * m.to(g.device))
            layer.bias.register_hook(lambda g, m=b: g * m.to(g.device))

    # ------------------------------------------------------------- transfer
    def to_arrays(self) -> dict[str, NDArray[np.float32]]:
        """Named effective weights (``w0, b0, w1, b1, ...``) as numpy arrays (a routed
        view's masked entries are exported as zeros: the same function)."""
        out = {}
        for i, layer in enumerate(self.layers):
            out[f"w{i}"] = host_array(self.weight(i), f"weight w{i}")
            out[f"b{i}"] = host_array(layer.bias, f"bias b{i}")
        return out

    def load_arrays(self, arrays: dict[str, NDArray]) -> None:
        """Set the weights from :meth:`to_arrays`'s output."""
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                layer.weight.copy_(torch.as_tensor(np.asarray(arrays[f"w{i}"])))
                layer.bias.copy_(torch.as_tensor(np.asarray(arrays[f"b{i}"])))

    @classmethod
    def from_arrays(cls, arrays: dict[str, NDArray]) -> NeuralView:
        """A view with the shapes and values of ``arrays``."""
        n_layers = sum(1 for k in arrays if k.startswith("w"))
        hidden = [np.asarray(arrays[f"w{i}"]).shape[0] for i in range(n_layers - 1)]
        view = cls(np.asarray(arrays["w0"]).shape[1], hidden, seed=0)
        view.load_arrays(arrays)
        return view


def group_matrix(widths: Sequence[int]) -> torch.Tensor:
    """``(V, D)`` indicator of which encoded column belongs to which variable."""
    owner = np.repeat(np.arange(len(widths)), widths)
    g = np.zeros((len(widths), len(owner)), dtype=np.float32)
    g[owner, np.arange(len(owner))] = 1.0
    return torch.from_numpy(g)


def variable_paths(view: NeuralView, groups: torch.Tensor) -> torch.Tensor:
    """Path strength between variables: ``G P Gᵀ``, entry ``[i, j]`` the summed paths
    from variable ``j``'s input columns to variable ``i``'s output columns (a one-hot
    group acts as one node of the graph)."""
    return groups @ view.path_matrix() @ groups.T


def routing_masks(
    widths: Sequence[int], adjacency: NDArray[np.bool_], units: int, layers: int = 1
) -> list[NDArray[np.float32]]:
    """Masks that route hidden units by neighbourhood (METHODS.md's hard alternative
    to eq. 1's penalty).

    Every variable ``i`` owns ``units`` units in each hidden layer; its units in the
    first layer see only the input columns of ``i``'s neighbours, hidden layers
    connect a variable's units to its own units only, and ``i``'s output columns read
    only from its units. The path matrix is then exactly zero between non-adjacent
    variables and from a variable to itself: the graph constraint holds by
    construction.

    Parameters
    ----------
    widths
        Encoded columns per variable.
    adjacency
        ``(V, V)`` graph (symmetrised here; the diagonal is ignored).
    units
        Hidden units per variable and layer.
    layers
        Number of hidden layers.
    """
    a = np.asarray(adjacency, dtype=bool)
    a = (a | a.T) & ~np.eye(len(a), dtype=bool)
    owner = np.repeat(np.arange(len(widths)), widths)
    hidden_owner = np.repeat(np.arange(len(widths)), units)
    first = a[hidden_owner][:, owner].astype(np.float32)
    middle = (hidden_owner[:, None] == hidden_owner[None, :]).astype(np.float32)
    last = (owner[:, None] == hidden_owner[None, :]).astype(np.float32)
    return [first, *([middle] * (layers - 1)), last]
