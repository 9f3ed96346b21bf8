"""The ``--site`` grammar of the command line: ``PATH`` or ``NAME=PATH``.

A run's settings keep the ``--site`` arguments in the form given, each path made
absolute when the run starts (``sites`` in config.json: :func:`absolute_site_args`);
:func:`parse_site_args` turns them into :class:`~fedstruct.data.sites.SiteSpec`s, the
sites the data layer reads. The data layer knows sites by name and path only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fedstruct.data.sites import SiteSpec, site_name
from fedstruct.data.sites.manifest import check_site_names
from fedstruct.errors import ConfigError

__all__ = ["absolute_site_args", "parse_site_args"]


def parse_site_args(items: Sequence[str]) -> tuple[SiteSpec, ...]:
    """Sites from ``--site`` arguments: ``PATH`` or ``NAME=PATH``.

    The name defaults to the file's stem (``h1.csv.gz`` -> ``h1``).

    Raises
    ------
    ConfigError
        For an empty name or path, or two sites of the same name.
    """
    specs = []
    for item in items:
        name, rest = _split(item)
        if name is not None and not name.strip():
            raise ConfigError(f"--site {item!r} has an empty name; write NAME=PATH or PATH")
        if not rest.strip():
            raise ConfigError(f"--site {item!r} has no path; write NAME=PATH or PATH")
        path = Path(rest).expanduser()
        specs.append(SiteSpec(name or site_name(path), path, {}))
    check_site_names(specs)
    return tuple(specs)


def absolute_site_args(items: Sequence[str]) -> tuple[str, ...]:
    """``--site`` arguments with each path made absolute (against the current folder,
    links not followed, so a site keeps the name of its file's stem), in the form given:
    a run records them so, and ``--resume`` from another folder reads the same files.
    An argument :func:`parse_site_args` refuses is left as it is (refused there)."""
    absolute = []
    for item in items:
        name, rest = _split(item)
        if (name is not None and not name.strip()) or not rest.strip():
            absolute.append(item)
            continue
        path = os.path.abspath(Path(rest).expanduser())
        absolute.append(path if name is None else f"{name}={path}")
    return tuple(absolute)


def _split(item: str) -> tuple[str | None, str]:
    """A ``--site`` argument as its name (``None`` for ``PATH`` alone) and its path."""
    name, sep, rest = item.partition("=")
    if not sep or "/" in name or "\\" in name:  # PATH alone, or an '=' inside a path
        return None, item
    return name, rest
