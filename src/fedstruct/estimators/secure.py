"""The secure-aggregation policy of an estimator: what its ``secure_aggregation``
parameter asks for, and whether the method can serve it (docs/privacy.md).

A method states its policy in one class attribute, ``secure_aggregation_refusal``:
``""`` where its server needs only sums, a clause saying why not, or ``None`` (the
default) for "not supported yet"; and, where only some of its settings can be
served, in its ``check_secure_aggregation`` hook.
"""

from __future__ import annotations

from typing import Any

from fedstruct.errors import ConfigError
from fedstruct.fl.secagg import SecAggConfig

__all__ = ["secure_aggregation_config"]


def secure_aggregation_config(method: str, given: Any, refusal: str | None) -> SecAggConfig | None:
    """The run's secure-aggregation settings for ``given`` (``False``/``None``: off,
    ``None``; ``True``: the defaults; or a :class:`SecAggConfig`).

    Parameters
    ----------
    method
        The method's name, for messages.
    given
        The estimator's ``secure_aggregation`` parameter.
    refusal
        The method's ``secure_aggregation_refusal``.

    Raises
    ------
    ConfigError
        For a value that is none of these, or where the method refuses secure
        aggregation (its reason).
    """
    if given is False or given is None:
        return None
    if given is not True and not isinstance(given, SecAggConfig):
        raise ConfigError(
            f"{method}: secure_aggregation must be True, False or a SecAggConfig, got {given!r}"
        )
    if refusal is None:
        refusal = (
            f"it is not supported yet for {method} (its exchanges are not wired to the "
            "secure sum; fedavg takes it)"
        )
    if refusal:
        raise ConfigError(f"{method} refuses secure aggregation: {refusal}")
    return given if isinstance(given, SecAggConfig) else SecAggConfig()
