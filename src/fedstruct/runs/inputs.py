"""A run's input files: named by absolute paths, and digested so that ``--resume``
refuses a run whose inputs changed.

When ``fedstruct run`` starts, every setting that names a file is made absolute
(against the current folder: :func:`absolute_paths`), so that ``config.json`` records
the files the run read and ``--resume DIR`` from any folder reads the same ones. The
SHA-256 of each input's content goes to ``run.json`` (``inputs``: absolute path ->
digest); ``--resume`` digests them again and refuses, naming the file, an input that
changed or can no longer be read (:func:`changed_input`): the saved rounds were
computed from the old content.

The inputs: each site's file (``--site``, or those a ``--sites`` manifest names, with
its per-site graph files and its ``truth``), the manifest, ``--truth``,
``--knowledge`` and ``--graph`` (a graph file, or a run folder's ``graph.json``). A
site's folder (images) is digested file by file. A ``--config`` file is not an
input: its settings are in ``config.json``, which ``run.json``'s settings digest
covers. The built-in data sets (``data_dir``) are not digested.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedstruct.data.graph_files import RUN_GRAPH
from fedstruct.data.sites import read_manifest
from fedstruct.errors import FedstructError
from fedstruct.files import file_digest
from fedstruct.runs.site_args import absolute_site_args, parse_site_args

__all__ = ["absolute_paths", "changed_input", "input_digests", "input_files"]

#: Settings that name one file or folder (any method's), made absolute at the start.
PATH_SETTINGS = ("manifest", "truth", "knowledge", "graph", "data_dir")
#: Of those, the graphs: a folder given for one is a run folder, read for its graph.json.
_GRAPH_SETTINGS = ("truth", "graph")


def absolute_paths(settings: Any) -> Any:
    """``settings`` with every file it names (:data:`PATH_SETTINGS`, ``sites``) made
    absolute against the current folder (links are not followed, ``~`` is expanded)."""
    changes: dict[str, Any] = {}
    for name in PATH_SETTINGS:
        value = getattr(settings, name, None)
        if isinstance(value, str) and value.strip():
            changes[name] = os.path.abspath(os.path.expanduser(value))
    if getattr(settings, "sites", ()):
        changes["sites"] = absolute_site_args(settings.sites)
    changes = {k: v for k, v in changes.items() if v != getattr(settings, k)}
    return dataclasses.replace(settings, **changes) if changes else settings


def input_files(settings: Any) -> dict[Path, str]:
    """The input files ``settings`` name, each with what it is (``"site file"``), in
    the order given. A manifest that cannot be read gives only itself (the run refuses
    it in its own words)."""
    files: dict[Path, str] = {}

    def add(path: str | Path, what: str, graph: bool = False) -> None:
        path = Path(path)
        if graph and path.is_dir():
            path = path / RUN_GRAPH
        files.setdefault(path, what)

    if getattr(settings, "manifest", None):
        add(settings.manifest, "manifest")
        try:
            manifest = read_manifest(settings.manifest)
        except FedstructError:
            manifest = None
        if manifest is not None:
            for spec in manifest.sites:
                add(spec.path, "site file")
                if spec.options.get("graph"):
                    add(spec.options["graph"], "site graph file", graph=True)
            if manifest.options.get("truth"):
                add(manifest.options["truth"], "truth graph", graph=True)
    if getattr(settings, "sites", ()):
        try:
            specs = parse_site_args(settings.sites)
        except FedstructError:
            specs = ()
        for spec in specs:
            add(spec.path, "site file")
    for name in PATH_SETTINGS:
        value = getattr(settings, name, None)
        if name not in ("manifest", "data_dir") and isinstance(value, str) and value:
            add(value, f"{name} file", graph=name in _GRAPH_SETTINGS)
    return files


def input_digests(settings: Any) -> dict[str, str]:
    """The SHA-256 of each input file ``settings`` name, by path (a folder: of its
    files' names and contents); an input that cannot be read now is left out (the
    run refuses it in its own words)."""
    digests = {}
    for path, what in input_files(settings).items():
        digest = _digest(path, what)
        if digest is not None:
            digests[str(path)] = digest
    return digests


def changed_input(recorded: Mapping[str, str], settings: Any) -> str | None:
    """What is wrong with the inputs of a run that recorded the digests ``recorded``,
    now that ``settings`` (its ``config.json``'s) name them: one line naming the
    first input that changed or cannot be read, or ``None`` when none did."""
    what = {str(path): kind for path, kind in input_files(settings).items()}
    for path, digest in recorded.items():
        kind = what.get(path, "input file")
        try:
            now = _digest(Path(path), kind, strict=True)
        except FedstructError as exc:
            return f"an input of the run cannot be read now: {exc}"
        if now != digest:
            return (
                f"the {kind} {path} changed since the run began (its SHA-256 is not the "
                "one run.json records), so the saved rounds do not belong to it"
            )
    return None


def _digest(path: Path, what: str, strict: bool = False) -> str | None:
    """The SHA-256 of the file ``path``, or of a folder's files (their paths inside it
    and their digests, in sorted order; links to folders are not followed); ``None``
    (or, with ``strict``, a :class:`FedstructError`) when it cannot be read."""
    try:
        if not path.is_dir():
            return file_digest(path, what)
        whole = hashlib.sha256()
        for root, folders, names in os.walk(path):
            folders.sort()
            for name in sorted(names):
                file = Path(root) / name
                whole.update(f"{file.relative_to(path)}\0{file_digest(file, what)}\n".encode())
        return whole.hexdigest()
    except FedstructError:
        if strict:
            raise
        return None
