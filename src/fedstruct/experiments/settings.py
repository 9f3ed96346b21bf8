"""Run settings: typed dataclasses filled from defaults, a config file and ``--set key=value``.

Each runnable method declares one settings dataclass; every field is a setting
with a type and a default. Layers are applied in order (file, then command-line
options, then ``--set``); an unknown key is an error that lists the valid ones, and
a value of the wrong type is an error that names the key and the expected type.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from fedstruct.errors import ConfigError

__all__ = [
    "apply_settings",
    "load_config_file",
    "parse_assignments",
    "settings_dict",
    "subset",
]

T = TypeVar("T")


def parse_assignments(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are read as YAML scalars (``3``, ``0.5``, ``true``).

    Raises
    ------
    ConfigError
        If an item has no ``=``.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r} is not key=value; write e.g. --set rounds=10")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML or JSON mapping of settings.

    Raises
    ------
    ConfigError
        If the file is missing, unreadable, or not a mapping.
    """
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; check the path given to --config")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"config file {path} is not valid YAML/JSON: {exc}".splitlines()[0]
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of key: value settings")
    return data


def apply_settings(base: T, *layers: Mapping[str, Any], method: str) -> T:
    """Return ``base`` (a settings dataclass) with the layers' values applied in order.

    Parameters
    ----------
    base
        The defaults.
    layers
        Mappings of setting name -> value (only the settings to change).
    method
        The method's name, for messages.

    Raises
    ------
    ConfigError
        For an unknown key (listing the valid ones) or a value of the wrong type.
    """
    fields = {f.name: f for f in dataclasses.fields(base)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(type(base))
    changes: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key not in fields:
                valid = ", ".join(sorted(fields))
                raise ConfigError(f"unknown {method} setting {key!r}; valid settings: {valid}")
            changes[key] = _coerce(key, value, hints[key], method)
    return dataclasses.replace(base, **changes)  # type: ignore[type-var]


def subset(settings: Any, cls: type[T], **extra: Any) -> T:
    """Build ``cls`` (a dataclass) from the same-named fields of ``settings`` plus ``extra``.

    Run settings are flat (one namespace for ``--set``) and hold the fields of the
    method's config, the participation model and so on; this picks one of those out.
    """
    names = [f.name for f in dataclasses.fields(cls) if f.name not in extra]  # type: ignore[arg-type]
    return cls(**{n: getattr(settings, n) for n in names}, **extra)


def settings_dict(settings: Any) -> dict[str, Any]:
    """A settings dataclass as a JSON-ready dict."""
    return json.loads(json.dumps(dataclasses.asdict(settings), default=str))


def _coerce(key: str, value: Any, hint: Any, method: str) -> Any:
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None:
        if type(None) in options:
            return None
        raise ConfigError(f"{method} setting {key!r} cannot be empty")
    for option in options:
        if option is type(None):
            continue
        if option is bool:
            if isinstance(value, bool):
                return value
        elif option is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        elif option is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        elif option is str:
            if isinstance(value, str):
                return value
        elif typing.get_origin(option) is tuple and isinstance(value, (list, tuple)):
            return tuple(value)
    names = " or ".join(getattr(o, "__name__", str(o)) for o in options)
    raise ConfigError(f"{method} setting {key!r} must be {names}, got {value!r}")
