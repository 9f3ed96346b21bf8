"""An estimator's parameters: the names its explicit ``__init__`` takes, checked
against the method's config dataclass when the class is defined, and a name that is
none of them refused in one line.

scikit-learn reads the parameters from ``__init__``'s signature
(``BaseEstimator._get_param_names``) and the values from the attributes of the same
names, so ``__init__`` lists every field of the method's config as a keyword
parameter with the field's default, and stores each argument unchanged. The config
dataclass stays the one place a default is chosen: :func:`check_signature` refuses a
class whose ``__init__`` lacks a field or gives it another default.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from typing import Any

from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = ["RUN_PARAMETERS", "check_parameter_names", "check_signature", "parameter_names"]

#: The parameters of every estimator besides its config's fields.
RUN_PARAMETERS = ("seed", "participation", "secure_aggregation")


def parameter_names(cls: Any) -> tuple[str, ...]:
    """The names ``cls.__init__`` takes, in its order (without ``self``)."""
    return tuple(inspect.signature(cls.__init__).parameters)[1:]


def check_parameter_names(cls: Any, names: Iterable[str]) -> None:
    """Refuse a name that is not one of ``cls``'s parameters (``__init__`` and
    ``set_params`` share this check).

    Raises
    ------
    ConfigError
        Naming the first unknown name, the closest valid one if it looks like a
        typo, and every valid name.
    """
    valid = parameter_names(cls)
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise ConfigError(
            unknown_choice_message(f"{cls.method} parameter", unknown[0], valid, suggest=True)
        )


def check_signature(cls: Any) -> None:
    """Check that ``cls.__init__`` takes every field of ``cls.config_class`` with the
    field's default, and the run parameters (:data:`RUN_PARAMETERS`), and no
    ``*args`` or ``**kwargs`` (which scikit-learn cannot list).

    Raises
    ------
    TypeError
        When the class is defined, naming what is missing or different.
    """
    parameters = inspect.signature(cls.__init__).parameters
    variadic = [str(p) for p in parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    fields = {f.name: _default(f) for f in dataclasses.fields(cls.config_class)}
    missing = [name for name in [*fields, *RUN_PARAMETERS] if name not in parameters]
    different = [
        f"{name} = {parameters[name].default!r} (the config's: {default!r})"
        for name, default in fields.items()
        if name in parameters and not _same(parameters[name].default, default)
    ]
    problems = [
        f"it takes {variadic[0]}" if variadic else "",
        f"it lacks {', '.join(missing)}" if missing else "",
        f"its defaults differ: {'; '.join(different)}" if different else "",
    ]
    if any(problems):
        raise TypeError(
            f"{cls.__name__}.__init__ must take every field of "
            f"{cls.config_class.__name__} as a keyword parameter with its default, and "
            f"{', '.join(RUN_PARAMETERS)}: {'; '.join(p for p in problems if p)} "
            "(docs/architecture.md, 'Adding a method')"
        )


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return inspect.Parameter.empty


def _same(a: Any, b: Any) -> bool:
    """Whether two defaults are the same value of the same type (``1`` is not ``1.0``)."""
    return type(a) is type(b) and a == b
