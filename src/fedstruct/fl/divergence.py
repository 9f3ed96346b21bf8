"""A model whose training diverged: weights or a loss that are no longer finite.

Too large a learning rate makes SGD (or Adam) overflow within a step or two; the
weights become infinite or NaN and every later round, score and prediction with
them. :func:`non_finite` finds such a weight and :func:`diverged` is the one-line
error the servers and the estimators raise (numpy only: no torch is imported).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError

__all__ = ["diverged", "non_finite"]


def non_finite(arrays: Mapping[str, NDArray]) -> str | None:
    """The name of the first array (in sorted order) holding a NaN or an infinite
    value, ``None`` when every value is finite."""
    for name in sorted(arrays):
        if not np.isfinite(np.asarray(arrays[name], dtype=np.float64)).all():
            return name
    return None


def diverged(method: str, what: str, learning_rate: float) -> ConfigError:
    """The error of ``method``'s training diverging (``what`` is no longer finite):
    one line naming the learning rate, the usual cause."""
    return ConfigError(
        f"{method} diverged: {what} is no longer finite; learning_rate = {learning_rate:g} "
        "is too large for these data: lower it"
    )
