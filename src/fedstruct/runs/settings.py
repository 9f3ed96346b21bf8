"""Run settings: typed dataclasses filled from defaults, a config file and ``--set key=value``.

Each runnable method declares one settings dataclass; every field is a setting
with a type and a default. Layers are applied in order (file, then command-line
options, then ``--set``); an unknown key is an error that lists the valid ones, and
a value of the wrong type is an error that names the key and the expected type.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fedstruct.constraints import SEED
from fedstruct.errors import ConfigError
from fedstruct.files import parse_yaml, parse_yaml_scalar, read_text
from fedstruct.fl.participation import Participation
from fedstruct.privacy.settings import CentralDPSettings, DPSGDSettings

__all__ = [
    "SEED",
    "SettingInfo",
    "apply_settings",
    "describe_settings",
    "load_config_file",
    "parameter_docs",
    "parse_assignments",
    "settings_dict",
    "subset",
]

T = TypeVar("T")


def parse_assignments(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are read as YAML 1.2 plain data (``3``,
    ``0.5``, ``1e-5``, ``true``; :func:`~fedstruct.files.parse_yaml_scalar`).

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
        out[key.strip()] = parse_yaml_scalar(raw)
    return out


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML or JSON mapping of settings (:func:`~fedstruct.files.read_text` and
    :func:`~fedstruct.files.parse_yaml`: a regular file of bounded size, YAML 1.2
    numbers, no aliases, no key given twice, bounded nesting).

    Raises
    ------
    ConfigError
        If the file is missing, not a regular file, too large, not valid YAML/JSON by
        those rules, or not a mapping.
    """
    data = parse_yaml(read_text(path, "config file"), f"config file {path}")
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
            name, dot, entry = key.partition(".")
            if name not in fields:
                valid = ", ".join(sorted(fields))
                raise ConfigError(f"unknown {method} setting {key!r}; valid settings: {valid}")
            if dot:  # one entry of a mapping setting: --set kinds.age=ordinal
                if typing.get_origin(hints[name]) is not dict or not entry:
                    raise ConfigError(
                        f"{method} setting {name!r} is not a mapping; write --set {name}=VALUE"
                    )
                current = changes.get(name, getattr(base, name))
                value = {**current, entry: value}
                key = name
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
        elif typing.get_origin(option) is tuple and isinstance(value, str):
            return (value,)
        elif typing.get_origin(option) is dict and isinstance(value, Mapping):
            if all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
                return dict(value)
    names = " or ".join(getattr(o, "__name__", str(o)) for o in options)
    raise ConfigError(f"{method} setting {key!r} must be {names}, got {value!r}")


@dataclass(frozen=True)
class SettingInfo:
    """One setting of a run: its name, type, default and one line of documentation."""

    name: str
    type: str
    default: Any
    doc: str


#: Names of the shared DP settings, which ``describe_settings`` lists after the rest.
_PRIVACY_SETTINGS = frozenset(
    f.name for shared in (DPSGDSettings, CentralDPSettings) for f in dataclasses.fields(shared)
)


def describe_settings(cls: type) -> list[SettingInfo]:
    """Every field of the settings dataclass ``cls``, documented (for ``run METHOD --help``).

    The one-line documentation of a field is the first sentence of its entry in the
    ``Parameters`` section of the numpy-style docstring of the nearest class in
    ``cls``'s MRO that documents it; the participation fields are documented by
    :class:`fedstruct.fl.Participation`, whose fields a run's settings repeat.
    A field no docstring documents gets an empty string (a test keeps there none).
    The shared privacy settings (:mod:`fedstruct.privacy.settings`), which dataclass
    inheritance puts first, are listed last, so that a method's own settings lead.
    """
    docs: dict[str, str] = parameter_docs(Participation.__doc__)
    for klass in reversed(cls.__mro__):
        docs.update(parameter_docs(klass.__doc__))
    hints = typing.get_type_hints(cls)
    out = []
    for f in sorted(dataclasses.fields(cls), key=lambda f: f.name in _PRIVACY_SETTINGS):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out.append(SettingInfo(f.name, type_name(hints[f.name]), default, docs.get(f.name, "")))
    return out


def type_name(hint: Any) -> str:
    """A type hint as a user reads it: ``int``, ``float or None``, ``int or str or None``."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    names = []
    for option in options:
        if option is type(None):
            names.append("None")
        elif typing.get_origin(option) is tuple:
            names.append("list")
        elif typing.get_origin(option) is dict:
            names.append("mapping")
        else:
            names.append(getattr(option, "__name__", str(option)))
    return " or ".join(names)


def parameter_docs(docstring: str | None) -> dict[str, str]:
    """Field name -> first sentence of its entry in a numpydoc ``Parameters`` section.

    An entry ``a, b`` documents both names; a ``name : type`` line is read as ``name``.
    """
    lines = inspect.cleandoc(docstring or "").splitlines()
    out: dict[str, str] = {}
    start = next(
        (i + 2 for i in range(len(lines) - 1)
         if lines[i].strip() == "Parameters" and _is_rule(lines[i + 1])),
        None,
    )  # fmt: skip
    if start is None:
        return out
    i = start
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _is_rule(lines[i + 1]):
            break  # the next section
        if line.strip() and not line.startswith(" "):
            names = [n.strip() for n in line.split(":")[0].split(",")]
            body: list[str] = []
            i += 1
            while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
                if not lines[i].strip() and body:
                    break
                body.append(lines[i].strip())
                i += 1
            out.update(dict.fromkeys(names, first_sentence(plain_text(" ".join(body)))))
            continue
        i += 1
    return out


def _is_rule(line: str) -> bool:
    text = line.strip()
    return bool(text) and set(text) == {"-"}


#: Words that end with a period without ending a sentence ("App. B.1", "e.g. 3").
_ABBREVIATIONS = ("App", "Alg", "Eq", "eq", "Fig", "Sec", "Tab", "e.g", "i.e", "al", "cf", "vs")


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (abbreviations such as ``App. B.1`` do not end it)."""
    for match in re.finditer(r"\.\s+(?=[A-Z(])", text):
        word = text[: match.start()].rsplit(None, 1)[-1] if text[: match.start()] else ""
        if word.rstrip(")").split("(")[-1] not in _ABBREVIATIONS:
            return text[: match.start() + 1]
    return text


def plain_text(rst: str) -> str:
    """reStructuredText inline markup removed: ``x`` -> x, :func:`~a.b` -> b."""
    text = re.sub(r":\w+:`~?([^`]*?)`", lambda m: m.group(1).rsplit(".", 1)[-1], rst)
    return text.replace("``", "").strip()
