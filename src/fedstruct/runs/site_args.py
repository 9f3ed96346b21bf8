"""The ``--site`` grammar of the command line: ``PATH`` or ``NAME=PATH``; and
``--node-site SITE`` or ``SITE:DATASET`` (:func:`split_node_sites`).

A run's settings keep the ``--site`` arguments in the form given, each path made
absolute when the run starts (``sites`` in config.json: :func:`absolute_site_args`);
:func:`parse_site_args` turns them into :class:`~fedstruct.data.sites.SiteSpec`s, the
sites the data layer reads. The data layer knows sites by name and path only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from fedstruct.data.sites import SiteSpec, site_name
from fedstruct.data.sites.manifest import check_site_names
from fedstruct.errors import ConfigError

__all__ = ["absolute_site_args", "parse_site_args", "split_node_sites"]


def parse_site_args(items: Sequence[str], flag: str = "--site") -> tuple[SiteSpec, ...]:
    """Sites from ``--site`` arguments (or another ``flag``'s): ``PATH`` or ``NAME=PATH``.

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
            raise ConfigError(f"{flag} {item!r} has an empty name; write NAME=PATH or PATH")
        if not rest.strip():
            raise ConfigError(f"{flag} {item!r} has no path; write NAME=PATH or PATH")
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


def split_node_sites(
    items: Sequence[str], datasets: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The sites of ``--node-site`` arguments (``SITE``, or ``SITE:DATASET`` for the
    data set the run uses at a node that offers several) and the data set named for
    each site, with those of ``datasets`` (the ``node_datasets`` setting).

    Raises
    ------
    ConfigError
        For an empty site or data-set name, a site given two data sets, or a data set
        named for a site the run does not name.
    """
    sites: list[str] = []
    chosen = dict(datasets)
    for item in items:
        site, sep, dataset = item.partition(":")
        site, dataset = site.strip(), dataset.strip()
        if not site or (sep and not dataset):
            raise ConfigError(
                f"--node-site {item!r} names no site or no data set; write SITE or SITE:DATASET"
            )
        if sep:
            if chosen.get(site, dataset) != dataset:
                raise ConfigError(
                    f"site {site!r} is given two data sets, {chosen[site]!r} and {dataset!r}; "
                    "give it one"
                )
            chosen[site] = dataset
        sites.append(site)
    stray = sorted(set(chosen) - set(sites))
    if stray:
        raise ConfigError(
            f"node_datasets names sites {stray}, which --node-site does not name; the run's "
            f"sites are {sites}"
        )
    return tuple(sites), chosen
