"""A federation manifest (YAML or JSON): the sites, their files and options.

The format is described in :mod:`fedstruct.data.sites`. Any unknown key, at either
level, is a :class:`~fedstruct.errors.ConfigError` naming it and the valid keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fedstruct.data.checks import require_regular_file
from fedstruct.data.sites.encoding import MISSING
from fedstruct.data.sites.reader import one_line, site_name
from fedstruct.data.sites.schema import check_kind
from fedstruct.errors import ConfigError, DataError

#: Keys of one site in a manifest.
SITE_KEYS = ("path", "name", "kinds", "graph", "regime", "supervised")
#: Method roles a manifest may name (kept for the method layer).
ROLE_KEYS = ("target", "label", "inputs", "concepts", "task", "truth")
#: Keys of a manifest that set what a site's schema may disclose (:class:`SchemaLimits`).
LIMIT_KEYS = ("min_site_rows", "max_site_levels")
#: Top-level keys of a manifest.
MANIFEST_KEYS = (
    "sites", "kinds", "missing", "delimiter", "regime", "supervised", *LIMIT_KEYS, *ROLE_KEYS
)  # fmt: skip


@dataclass(frozen=True)
class SiteSpec:
    """One site of a federation: its name, its file and its own options.

    Parameters
    ----------
    name
        The site's name.
    path
        Its table file.
    options
        Per-site options from a manifest: ``kinds``, ``graph`` (a resolved path
        string), ``regime``, ``supervised``.
    """

    name: str
    path: Path
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """A federation manifest: the sites and the options for all of them.

    Parameters
    ----------
    sites
        One :class:`SiteSpec` per site.
    options
        Top-level options (``kinds``, ``missing``, ``delimiter``, ``regime``,
        ``supervised``) and method roles (:data:`ROLE_KEYS`; ``truth`` resolved).
    path
        The manifest file, named in messages.
    """

    sites: tuple[SiteSpec, ...]
    options: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def read_manifest(path: str | Path) -> Manifest:
    """Read a YAML or JSON federation manifest (format in the module docstring).

    Raises
    ------
    DataError
        If the manifest file is missing or unreadable.
    ConfigError
        For invalid YAML/JSON, an unknown key (naming it, the file and the valid keys),
        a missing or malformed value, or two sites of the same name.
    """
    path = Path(path)
    require_regular_file(path, "manifest")
    if not path.is_file():
        raise DataError(f"manifest {path} does not exist; check the path given to --sites")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"manifest {path} is not readable YAML/JSON: {one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"manifest {path} must be a mapping with a 'sites' list")
    _check_keys(data, MANIFEST_KEYS, f"manifest {path}")
    entries = data.get("sites")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"manifest {path}: 'sites' must be a non-empty list of sites")
    folder = path.parent
    sites = tuple(_site_spec(entry, j, folder, path) for j, entry in enumerate(entries))
    check_site_names(sites)
    options = _options(data, f"manifest {path}")
    if "truth" in options:
        options["truth"] = str(_resolve(options["truth"], folder))
    return Manifest(sites, options, path)


def _site_spec(entry: Any, index: int, folder: Path, manifest: Path) -> SiteSpec:
    if isinstance(entry, str):
        entry = {"path": entry}
    what = f"site {index + 1} of manifest {manifest}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{what} must be a mapping with a 'path' (or a path string)")
    _check_keys(entry, SITE_KEYS, what)
    if not isinstance(entry.get("path"), str) or not entry["path"]:
        raise ConfigError(f"{what} needs a 'path' to its table file")
    file = _resolve(entry["path"], folder)
    name = entry.get("name", site_name(file))
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what}: 'name' must be a non-empty string")
    options = _options({k: v for k, v in entry.items() if k not in ("path", "name")}, what)
    if "graph" in options:
        options["graph"] = str(_resolve(options["graph"], folder))
    return SiteSpec(name, file, options)


def _options(data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Validate option values (all keys known already)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "sites":
            continue
        if key == "kinds":
            if not isinstance(value, dict):
                raise ConfigError(f"{what}: 'kinds' must be a mapping COLUMN: KIND")
            for col, kind in value.items():
                check_kind(kind, str(col))
            out[key] = {str(col): kind for col, kind in value.items()}
        elif key == "missing":
            if value not in MISSING:
                raise ConfigError(f"{what}: missing must be one of {', '.join(MISSING)}")
            out[key] = value
        elif key in ("supervised", "inputs", "concepts"):
            out[key] = _names(value, key, what)
        elif key in LIMIT_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{what}: {key!r} must be a positive integer, got {value!r}")
            out[key] = value
        else:
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{what}: {key!r} must be a non-empty string")
            out[key] = value
    return out


def _names(value: Any, key: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{what}: {key!r} must be a column name or a list of names")


def _check_keys(data: Mapping[str, Any], valid: Sequence[str], what: str) -> None:
    for key in data:
        if key not in valid:
            raise ConfigError(f"unknown key {key!r} in {what}; valid keys: {', '.join(valid)}")


def _resolve(value: str, folder: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else folder / path


def check_site_names(sites: Sequence[SiteSpec]) -> None:
    """Refuse two sites of one name (:class:`~fedstruct.errors.ConfigError`)."""
    seen: dict[str, Path] = {}
    for s in sites:
        if s.name in seen:
            raise ConfigError(
                f"two sites are named {s.name!r} ({seen[s.name]} and {s.path}); "
                "give them distinct names (NAME=PATH, or name: in a manifest)"
            )
        seen[s.name] = s.path
