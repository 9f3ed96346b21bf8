"""Feature extractors and the classification network the harness trains.

Backbones (the issue: "a small CNN for 8x8, 28x28 and 32x32 inputs, and an MLP"):

* ``cnn``: two blocks of 3x3 convolution (32 then 64 channels, padding 1), ReLU and
  2x2 max-pooling, then a linear layer to ``feature_dim`` and ReLU. Any input whose
  height and width are multiples of 4 works (8x8 digits, 28x28 MNIST, 32x32 CIFAR).
* ``mlp``: flatten, a 256-unit hidden layer and a linear layer to ``feature_dim``,
  both with ReLU.
* ``auto`` (the default): ``cnn`` for images, ``mlp`` for a table.

A table's row enters as the harness's images do, shaped ``(1, 1, D)`` (one channel,
one row of the ``D`` encoded inputs of :mod:`fedstruct.fl.features`: one-hot
categorical columns, standardised continuous ones, missing indicators); the ``mlp``
backbone flattens it back to the vector, so the classifier, the drift directions and
every baseline work on tables unchanged. Only the ``cnn``, which convolves an image's
neighbouring pixels, has no meaning there and is refused.

Features are non-negative (ReLU), like the ResNet features of Tang et al. (2020):
their batch mean is the common "momentum" direction CAFE removes.

The classifier on top is CAFE's cosine classifier (``weight``, no bias;
:mod:`.classifier`) or, for the baselines, a linear layer. MOON adds its two-layer
projection head (Li, He & Song 2021, §4.1).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from fedstruct.errors import ConfigError
from fedstruct.methods.cafe.config import CafeConfig

__all__ = ["DriftNet", "build_backbone", "is_table_shape", "table_shape"]


def table_shape(width: int) -> tuple[int, int, int]:
    """The input shape of a table's rows encoded into ``width`` numbers: ``(1, 1, width)``."""
    return (1, 1, int(width))


def is_table_shape(shape: tuple[int, int, int]) -> bool:
    """Whether ``shape`` is a table row's (:func:`table_shape`: one channel, height 1)."""
    return shape[0] == 1 and shape[1] == 1


def build_backbone(name: str, shape: tuple[int, int, int], feature_dim: int) -> nn.Module:
    """The ``cnn`` or ``mlp`` feature extractor for images of ``shape = (C, H, W)``
    (``auto``: the ``mlp`` for a table's rows, :func:`table_shape`, else the ``cnn``).

    Raises
    ------
    ConfigError
        For the ``cnn`` on a table's rows, or on images whose sides are not
        multiples of 4.
    """
    c, h, w = shape
    if name == "auto":
        name = "mlp" if is_table_shape(shape) else "cnn"
    if name == "cnn" and is_table_shape(shape):
        raise ConfigError(
            "the cnn backbone convolves images, and a table's rows are vectors: use "
            "--set backbone=mlp (or auto)"
        )
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(c * h * w, 256),
            nn.ReLU(),
            nn.Linear(256, feature_dim),
            nn.ReLU(),
        )
    if h % 4 or w % 4:
        raise ConfigError(
            f"the cnn backbone needs image sides divisible by 4, got {h}x{w}; "
            "use --set backbone=mlp"
        )
    return nn.Sequential(
        nn.Conv2d(c, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * (h // 4) * (w // 4), feature_dim),
        nn.ReLU(),
    )


class DriftNet(nn.Module):
    """Backbone + classifier (+ MOON's projection head).

    Parameters
    ----------
    shape
        ``(C, H, W)`` of the input images.
    n_classes
        Number of classes.
    config
        The harness's hyper-parameters (algorithm, backbone, widths).
    seed
        Seed of the initial weights (every client starts from the server's).
    """

    def __init__(
        self, shape: tuple[int, int, int], n_classes: int, config: CafeConfig, seed: int
    ) -> None:
        super().__init__()
        d = config.feature_dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.backbone = build_backbone(config.backbone, shape, d)
            if config.causal:
                # Tang et al. (2020): uniform(-1/sqrt(D), 1/sqrt(D)) class weights.
                bound = d**-0.5
                self.weight = nn.Parameter(torch.empty(n_classes, d).uniform_(-bound, bound))
            else:
                self.linear = nn.Linear(d, n_classes)
            if config.algorithm == "moon":
                self.projection = nn.Sequential(
                    nn.Linear(d, d), nn.ReLU(), nn.Linear(d, config.moon_projection)
                )

    def forward(self, x: Tensor) -> Tensor:
        """The feature vectors ``(N, D)`` of images ``(N, C, H, W)``."""
        return self.backbone(x)
