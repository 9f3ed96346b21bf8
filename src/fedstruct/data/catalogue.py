"""What a node offers: its named data sets, and what its catalogue says of each.

A SuperNode may offer several data sets (``fedstruct flower supernode --data
NAME=PATH`` repeated, or ``--manifest FILE``); the coordinator lists them before any
run (``fedstruct flower catalogue``). A node's manifest has the format of a
federation manifest (:mod:`fedstruct.data.sites`), each site entry one of the node's
data sets, with the keys ``path``, ``name``, ``graph`` and ``share``::

    sites:
      - path: admissions.csv        # relative to the manifest's folder
        name: admissions            # default: the file's stem
        share: [levels, missing]    # what the catalogue may say beyond the default
      - path: scans/                # an image folder (or an .npz)
        name: scans

``share`` is the data set's owner's policy (:data:`SHARES`); by default a catalogue
says of a data set only its name, its columns' names and kinds and its row count
(an image set: its shape and image count):

- ``levels``: the level names of its categorical and ordinal columns (an image
  set's class names);
- ``counts``: those level names and the rows holding each;
- ``missing``: how many values each column misses;
- ``moments``: the mean and standard deviation of each continuous column.

Level names leave the node only within :class:`~fedstruct.data.sites.SchemaLimits`,
as in a run's schema handshake: the levels of a column that looks like an identifier,
names of people, free text or notes are never listed, whatever ``share`` says (the
column is named under ``withheld``), and a data set of fewer rows than a site needs
is not described at all. A description never holds a row.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.data.sites import SchemaLimits, SiteSpec, site_name
from fedstruct.data.sites.federation import read_site_table
from fedstruct.data.sites.manifest import _check_keys, _resolve, check_site_names
from fedstruct.data.sites.schema import LEVELLED, sorted_levels
from fedstruct.errors import ConfigError, DataError, SampleSizeError
from fedstruct.files import parse_json, parse_yaml, read_text

__all__ = [
    "AGGREGATE_KEYS",
    "DATASET_KEYS",
    "SHARES",
    "describe_dataset",
    "read_node_manifest",
]

#: What a data set's owner may let its catalogue say beyond names, kinds and rows.
SHARES = ("levels", "counts", "missing", "moments")
#: Keys of one data set in a node's manifest.
DATASET_KEYS = ("path", "name", "graph", "share")
#: The keys of a description that hold real numbers (aggregates over the data set's
#: rows, ``share: [moments]``); the privacy audit allows them there only.
AGGREGATE_KEYS = ("mean.", "std.")


def read_node_manifest(path: Path) -> tuple[SiteSpec, ...]:
    """A node's data sets from its manifest (module docstring): each a
    :class:`~fedstruct.data.sites.SiteSpec` whose ``options`` may hold ``graph`` (a
    resolved path) and ``share`` (a tuple of :data:`SHARES`).

    Raises
    ------
    ConfigError
        One line naming the manifest (and the data set): not a regular file, not
        YAML/JSON, a key other than ``sites`` or :data:`DATASET_KEYS`, no data set, a
        ``share`` not in :data:`SHARES`, two data sets of one name, or a file that does
        not exist.
    """
    where = f"node manifest {path}"
    text = read_text(path, "node manifest")
    data = (parse_json if path.suffix.lower() == ".json" else parse_yaml)(text, where)
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping with a 'sites' list (the node's data sets)")
    _check_keys(data, ("sites",), where)
    entries = data.get("sites")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}: 'sites' must be a non-empty list of data sets")
    specs = tuple(_dataset(entry, k, path) for k, entry in enumerate(entries, 1))
    check_site_names(specs)
    return specs


def _dataset(entry: Any, number: int, manifest: Path) -> SiteSpec:
    """One data set of a node's manifest, its files checked."""
    what = f"data set {number} of node manifest {manifest}"
    if isinstance(entry, str):
        entry = {"path": entry}
    if not isinstance(entry, dict):
        raise ConfigError(f"{what} must be a mapping with a 'path' (or a path string)")
    _check_keys(entry, DATASET_KEYS, what)
    if not isinstance(entry.get("path"), str) or not entry["path"]:
        raise ConfigError(f"{what} needs a 'path' to its file")
    file = _resolve(entry["path"], manifest.parent)
    name = entry.get("name", site_name(file))
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{what}: 'name' must be a non-empty string")
    options: dict[str, Any] = {}
    share = entry.get("share", [])
    share = [share] if isinstance(share, str) else share
    if not isinstance(share, list) or any(s not in SHARES for s in share):
        raise ConfigError(f"{what}: 'share' must be a list of {', '.join(SHARES)}, not {share!r}")
    if share:
        options["share"] = tuple(dict.fromkeys(share))
    files = {"path": file}
    if "graph" in entry:
        if not isinstance(entry["graph"], str) or not entry["graph"]:
            raise ConfigError(f"{what}: 'graph' must be the path of a graph file")
        files["graph"] = _resolve(entry["graph"], manifest.parent)
        options["graph"] = str(files["graph"])
    for key, target in files.items():
        if not target.exists():
            raise ConfigError(
                f"data set {name!r} of node manifest {manifest}: its {key} {target} does not "
                "exist; fix the path"
            )
    return SiteSpec(name.strip(), file, options)


def describe_dataset(
    spec: SiteSpec, share: Collection[str] = (), limits: SchemaLimits | None = None
) -> dict[str, Any]:
    """What a node's catalogue says of data set ``spec`` (module docstring): JSON-able
    metadata, never a row.

    Parameters
    ----------
    spec
        The data set: its name and file (a table, an image folder or an ``.npz``).
    share
        What its owner lets the catalogue say beyond names, kinds and rows
        (:data:`SHARES`).
    limits
        What level names may leave the node (default: :class:`SchemaLimits`').

    Returns
    -------
    dict
        ``dataset``, ``format`` (``table`` or ``images``), ``n_rows``; a table's
        ``columns`` and ``kinds``, an image set's ``shape``; and what ``share``
        allows: ``levels.<column>``, ``counts.<column>`` (aligned with the levels),
        ``missing`` (aligned with ``columns``), ``mean.<column>`` and ``std.<column>``;
        ``withheld``: the columns whose levels are never listed.

    Raises
    ------
    DataError
        The file is unreadable or bad, or holds fewer rows than a site needs.
    """
    limits = limits or SchemaLimits()
    wanted = set(share)
    if spec.path.is_dir() or spec.path.suffix.lower() == ".npz":
        return _describe_images(spec, wanted, limits)
    table, kinds = read_site_table(spec)
    n_rows = len(table.frame)
    limits.check(spec.name, n_rows, {})  # too few rows: nothing of the data set is said
    columns = list(kinds)
    out: dict[str, Any] = {
        "dataset": spec.name,
        "format": "table",
        "n_rows": n_rows,
        "columns": columns,
        "kinds": [kinds[c] for c in columns],
    }
    withheld: list[str] = []
    for col in columns:
        if kinds[col] in LEVELLED and wanted & {"levels", "counts"}:
            codes, names = table.factor(col)
            found = np.bincount(codes[codes >= 0].astype(np.int64), minlength=len(names))
            counts = dict(zip(names, (int(n) for n in found), strict=True))
            if _levels(out, col, sorted_levels(names), counts, wanted, n_rows, spec, limits):
                withheld.append(col)
        elif kinds[col] == "continuous" and "moments" in wanted:
            values = table.frame[col].to_numpy(dtype=np.float64, na_value=np.nan)
            values = values[np.isfinite(values)]
            if values.size:
                out[f"mean.{col}"] = float(values.mean())
                out[f"std.{col}"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
    if "missing" in wanted:
        out["missing"] = [int(table.missing(c).sum()) if table.any_missing(c) else 0
                          for c in columns]  # fmt: skip
    if withheld:
        out["withheld"] = withheld
    return out


def _levels(
    out: dict[str, Any],
    column: str,
    levels: tuple[str, ...],
    counts: dict[str, int],
    wanted: set[str],
    n_rows: int,
    spec: SiteSpec,
    limits: SchemaLimits,
) -> bool:
    """Add ``column``'s level names (and counts) to ``out`` as ``wanted`` says; True if
    they may not leave the node (:class:`SchemaLimits`: an identifier, names of people,
    free text, notes, too many levels), and nothing was added."""
    try:
        limits.check(spec.name, n_rows, {column: levels}, counts={column: counts})
    except SampleSizeError:
        raise
    except DataError:
        return True
    out[f"levels.{column}"] = list(levels)
    if "counts" in wanted:
        out[f"counts.{column}"] = [counts[name] for name in levels]
    return False


def _describe_images(spec: SiteSpec, wanted: set[str], limits: SchemaLimits) -> dict[str, Any]:
    """An image set's catalogue: shape and image count; class names and counts if
    ``wanted``."""
    from fedstruct.data.images import read_image_site

    schema = read_image_site(spec.path, name=spec.name).schema()
    limits.check(spec.name, schema.n_images, {})
    out: dict[str, Any] = {
        "dataset": spec.name,
        "format": "images",
        "n_rows": schema.n_images,
        "shape": list(schema.shape),
    }
    if wanted & {"levels", "counts"}:
        counts = dict(zip(schema.classes, schema.counts, strict=True))
        if _levels(out, "class", schema.classes, counts, wanted, schema.n_images, spec, limits):
            out["withheld"] = ["class"]
    return out
