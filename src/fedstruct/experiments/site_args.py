"""The ``--site`` grammar of the command line: ``PATH`` or ``NAME=PATH``.

A run's settings keep the ``--site`` arguments as given (``sites`` in config.json);
:func:`parse_site_args` turns them into :class:`~fedstruct.data.sites.SiteSpec`s, the
sites the data layer reads. The data layer knows sites by name and path only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fedstruct.data.sites import SiteSpec, site_name
from fedstruct.data.sites.manifest import check_site_names
from fedstruct.errors import ConfigError

__all__ = ["parse_site_args"]


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
        name, sep, rest = item.partition("=")
        if not sep or "/" in name or "\\" in name:  # PATH alone, or an '=' inside a path
            name, rest = "", item
        elif not name.strip():
            raise ConfigError(f"--site {item!r} has an empty name; write NAME=PATH or PATH")
        if not rest.strip():
            raise ConfigError(f"--site {item!r} has no path; write NAME=PATH or PATH")
        path = Path(rest).expanduser()
        specs.append(SiteSpec(name or site_name(path), path, {}))
    check_site_names(specs)
    return tuple(specs)
