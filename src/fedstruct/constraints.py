"""Declarative checks of a dataclass's fields: one table per class, one message format.

A class lists what each field must be (as scikit-learn's ``_parameter_constraints``)
and calls :func:`check_fields` from ``__post_init__``::

    CONSTRAINTS = {"rounds": Interval(int, 1), "model": OneOf(ARCHITECTURES)}

    def __post_init__(self) -> None:
        check_fields(self, CONSTRAINTS, "fcm")

A violation raises one :class:`~fedstruct.errors.ConfigError` (or the error class the
caller names) that says which owner and field, what it must be and what it got:
``fcm rounds must be an integer >= 1, got 0``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fedstruct.errors import ConfigError, FedstructError, unknown_choice_message

__all__ = ["SEED", "AnyOf", "Boolean", "Constraint", "Interval", "OneOf", "check_fields"]


class Constraint(ABC):
    """What one field's value must be. ``allow_none`` admits ``None`` as well."""

    allow_none: bool = False

    @abstractmethod
    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (not ``None``) satisfies the constraint."""

    @abstractmethod
    def describe(self) -> str:
        """What a valid value is, for messages (e.g. ``"an integer >= 1"``)."""

    def message(self, what: str, value: Any) -> str:
        """The one-line error for ``value`` of field ``what``."""
        also = " (or null)" if self.allow_none else ""
        return f"{what} must be {self.describe()}{also}, got {value!r}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (``int`` or ``float``) in an interval.

    Parameters
    ----------
    kind
        ``int`` accepts integers only; ``float`` accepts any finite real number.
    low, high
        The bounds; ``None`` for no bound.
    closed
        Which bounds belong to the interval: ``"both"``, ``"left"``, ``"right"`` or
        ``"neither"``.
    allow_none
        Whether ``None`` is valid too.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"
    allow_none: bool = False

    def accepts(self, value: Any) -> bool:
        if not _is_number(value) or not math.isfinite(float(value)):
            return False
        if self.kind is int and not isinstance(value, int | np.integer):
            return False
        if self.low is not None:
            inside = value >= self.low if self.closed in ("both", "left") else value > self.low
            if not inside:
                return False
        if self.high is not None:
            inside = value <= self.high if self.closed in ("both", "right") else value < self.high
            if not inside:
                return False
        return True

    def describe(self) -> str:
        noun = "an integer" if self.kind is int else "a number"
        left_closed = self.closed in ("both", "left")
        right_closed = self.closed in ("both", "right")
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            opening, closing = "[" if left_closed else "(", "]" if right_closed else ")"
            return f"{noun} in {opening}{low}, {high}{closing}"
        if self.low is not None:
            return f"{noun} {'>=' if left_closed else '>'} {low}"
        if self.high is not None:
            return f"{noun} {'<=' if right_closed else '<'} {high}"
        return f"a finite {'integer' if self.kind is int else 'number'}"


#: A run's or a sampler's seed: what numpy and torch both take (``--seed``, ``seed=``).
SEED = Interval(int, 0, 2**32 - 1)


def _bound(value: float | None) -> str:
    """A bound as a user reads it: ``4294967295`` for a large integer, else ``0.5``."""
    if value is None:
        return ""
    if isinstance(value, int | np.integer):
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of a fixed set of options (names, modes)."""

    options: tuple[Any, ...]
    allow_none: bool = False

    def __init__(self, options: Iterable[Any], allow_none: bool = False) -> None:
        object.__setattr__(self, "options", tuple(options))
        object.__setattr__(self, "allow_none", allow_none)

    def accepts(self, value: Any) -> bool:
        try:
            return value in self.options
        except TypeError:  # an unhashable value against a dict's keys
            return False

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def message(self, what: str, value: Any) -> str:
        return unknown_choice_message(what, value, self.options)


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (not 0 or 1)."""

    allow_none: bool = False

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class AnyOf(Constraint):
    """Valid when any of several constraints is (e.g. an integer or ``"auto"``)."""

    options: tuple[Constraint, ...]
    allow_none: bool = False

    def __init__(self, *options: Constraint, allow_none: bool = False) -> None:
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "allow_none", allow_none)

    def accepts(self, value: Any) -> bool:
        return any(option.accepts(value) for option in self.options)

    def describe(self) -> str:
        return " or ".join(option.describe() for option in self.options)


def check_fields(
    obj: Any,
    constraints: Mapping[str, Constraint],
    owner: str,
    error: type[FedstructError] = ConfigError,
) -> None:
    """Check ``obj``'s attributes against ``constraints``, in the table's order.

    Parameters
    ----------
    obj
        The object (usually a dataclass instance in its ``__post_init__``).
    constraints
        Field name -> what it must be.
    owner
        Prefix of the field's name in messages (e.g. ``"fcm"``); empty for none.
    error
        The exception class to raise.

    Raises
    ------
    FedstructError
        ``error``, for the first field that violates its constraint.
    """
    for name, constraint in constraints.items():
        value = getattr(obj, name)
        if value is None and constraint.allow_none:
            continue
        if value is None or not constraint.accepts(value):
            what = f"{owner} {name}" if owner else name
            raise error(constraint.message(what, value))
