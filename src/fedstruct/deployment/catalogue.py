"""What each SuperNode offers, listed before any run: ``fedstruct flower catalogue``.

A catalogue is a tiny run of fedstruct's own app whose ``method`` is
:data:`CATALOGUE`: its ServerApp runs no method, asks every connected SuperNode what
it offers (one :data:`CATALOGUE` message each,
:func:`~fedstruct.fl.flower.grid.ask_every_node`) and writes the answers into its
results folder (:data:`CATALOGUE_FILE`, in a new folder of the SuperLink's runs folder
as every run's); the submitter fetches that folder back, as a run's, and prints the
catalogue (:func:`catalogue_lines`).

Each node answers with its name and, for each data set it offers, what that data
set's owner allows (:func:`describe_offer`:
:func:`~fedstruct.data.catalogue.describe_dataset`: names, columns, kinds, row
counts, and only the statistics its manifest's ``share`` lists), audited before it
leaves (:func:`~fedstruct.privacy.audit.audit_description`); a data set it cannot
describe is listed with the reason. A node answers a catalogue whatever its
``--approve`` file says. Light to import (the constant is read by every ClientApp
process); the rest imports what it needs when it runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedstruct.errors import ConfigError, FedstructError

if TYPE_CHECKING:
    from fedstruct.deployment.node import NodeOffer
    from fedstruct.fl.flower.cluster import DeploymentOptions
    from fedstruct.fl.flower.deployment import FlowerDeploymentBackend

__all__ = [
    "CATALOGUE",
    "CATALOGUE_FILE",
    "catalogue_lines",
    "describe_offer",
    "request_catalogue",
    "write_catalogue",
]

#: The run-config ``method`` of a catalogue run, and the kind of the message that asks
#: a node what it offers.
CATALOGUE = "fedstruct.catalogue"
#: The file a catalogue run writes into its results folder.
CATALOGUE_FILE = "catalogue.json"
#: The files a catalogue run leaves in its folder (and may find there from an earlier one).
_OWN_FILES = {CATALOGUE_FILE, "flower-app", "error.json", "run.json", "run.lock"}


def describe_offer(offer: NodeOffer) -> list[dict[str, Any]]:
    """On the node: each data set of ``offer`` as its owner allows, audited; one that
    cannot be described (a bad file, too few rows) as ``{"dataset", "error"}``."""
    from fedstruct.data.catalogue import AGGREGATE_KEYS, describe_dataset
    from fedstruct.data.sites import SchemaLimits
    from fedstruct.privacy.audit import audit_description

    described = []
    for dataset in offer.datasets:
        try:
            description = describe_dataset(dataset.spec(dataset.name), dataset.share)
            audit_description(
                description, SchemaLimits(), dataset.name, "catalogue", AGGREGATE_KEYS
            )
        except FedstructError as exc:
            description = {"dataset": dataset.name, "error": f"{type(exc).__name__}: {exc}"}
        described.append(description)
    return described


def write_catalogue(backend: FlowerDeploymentBackend, out: Path) -> list[dict[str, Any]]:
    """In the ServerApp: ask every connected node (at least the backend's ``min_nodes``)
    what it offers; write the answers, by node name, to ``out/``:data:`CATALOGUE_FILE`.

    Raises
    ------
    ProtocolError
        Fewer nodes than ``min_nodes`` connected in time.
    """
    from fedstruct.fl.flower.grid import ask_every_node
    from fedstruct.fl.message import Message

    replies = ask_every_node(
        backend.grid,
        Message(CATALOGUE),
        min_nodes=backend.min_nodes or 0,
        join_timeout=backend.join_timeout,
        reply_timeout=backend.reply_timeout,
        poll_interval=backend.poll_interval,
        stop=backend.stop,
    )
    nodes = sorted(
        (
            {"node": str(r.config["node"]), "datasets": json.loads(str(r.config["datasets"]))}
            for r in replies.values()
        ),
        key=lambda node: node["node"],
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / CATALOGUE_FILE).write_text(json.dumps({"nodes": nodes}, indent=1) + "\n")
    return nodes


def request_catalogue(
    out: Path, options: DeploymentOptions, *, overwrite: bool = False, progress: bool = True
) -> list[dict[str, Any]]:
    """Submit a catalogue run to the SuperLink, wait for it, fetch the catalogue it
    wrote (in a new folder of the SuperLink's runs folder) into ``out``, on this
    machine, and read it.

    Raises
    ------
    ConfigError
        ``out`` holds files of something else, or a catalogue (without ``overwrite``).
    DeploymentError, FedstructError
        As :func:`~fedstruct.deployment.submit.submit`.
    """
    from fedstruct.deployment.contract import RUN_CONFIG_DEFAULTS
    from fedstruct.deployment.results import new_name
    from fedstruct.deployment.submit import run_app
    from fedstruct.files import parse_json, read_text
    from fedstruct.runs.folder import folder_lock

    out = out.resolve()
    target = out / CATALOGUE_FILE
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"--out {out} is a file; give a folder for the catalogue")
        other = sorted(p.name for p in out.iterdir() if p.name not in _OWN_FILES)
        if other:
            raise ConfigError(
                f"--out {out} holds files that are not a catalogue's ({', '.join(other[:3])}); "
                "give an empty or new folder"
            )
    if target.exists() and not overwrite:
        raise ConfigError(f"{target} exists; pass --overwrite to replace it, or another --out")
    with folder_lock(out):
        target.unlink(missing_ok=True)
        results = new_name(out)
        values = {
            **RUN_CONFIG_DEFAULTS,
            "method": CATALOGUE,
            "out": results,
            "min-nodes": options.min_nodes,
            "join-timeout": options.join_timeout,
            "reply-timeout": options.reply_timeout,
        }
        run_app(CATALOGUE, out, results, values, options, progress)
    data = parse_json(read_text(target, "catalogue"), f"catalogue {target}")
    return list(data["nodes"])


def catalogue_lines(nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The catalogue as text: each node, each of its data sets, one line per column."""
    if not nodes:
        return ["no SuperNode is connected to the SuperLink"]
    lines = []
    for node in nodes:
        datasets = node["datasets"]
        if not datasets:
            lines.append(f"{node['node']}: a partition of a built-in federation (no data sets)")
            continue
        lines.append(f"{node['node']}: {len(datasets)} data set{'s' * (len(datasets) != 1)}")
        for dataset in datasets:
            lines.extend(_dataset_lines(dataset))
    return lines


def _dataset_lines(dataset: Mapping[str, Any]) -> list[str]:
    """One data set of the catalogue: a header line, then one line per column."""
    name = dataset["dataset"]
    if "error" in dataset:
        return [f"  {name}: not described: {dataset['error']}"]
    rows = f"{dataset['n_rows']:,} rows"
    if dataset["format"] == "images":
        shape = "x".join(map(str, dataset["shape"]))
        return [f"  {name}: images {shape}, {rows}", *_column_lines(dataset, ["class"], {})]
    columns = list(dataset["columns"])
    kinds = dict(zip(columns, dataset["kinds"], strict=True))
    missing = dict(zip(columns, dataset.get("missing", []), strict=False))
    header = f"  {name}: table, {rows}, {len(columns)} column{'s' * (len(columns) != 1)}"
    return [header, *_column_lines(dataset, columns, kinds, missing)]


def _column_lines(
    dataset: Mapping[str, Any],
    columns: Sequence[str],
    kinds: Mapping[str, str],
    missing: Mapping[str, int] | None = None,
) -> list[str]:
    """Each column: its kind and what the data set's owner shares of it."""
    lines = []
    withheld = set(dataset.get("withheld", ()))
    for col in columns:
        said = [kinds[col]] if col in kinds else []
        levels = dataset.get(f"levels.{col}")
        if levels is not None:
            counts = dataset.get(f"counts.{col}")
            pairs = zip(levels, counts or [], strict=counts is not None)
            shown = levels if counts is None else [f"{x} ({n:,})" for x, n in pairs]
            said.append("levels " + ", ".join(shown))
        if col in withheld:
            said.append("levels withheld (an identifier, names or free text)")
        if f"mean.{col}" in dataset:
            said.append(f"mean {dataset[f'mean.{col}']:.4g}, sd {dataset[f'std.{col}']:.4g}")
        if missing and missing.get(col):
            said.append(f"{missing[col]:,} missing")
        if said:
            lines.append(f"    {col}: " + "; ".join(said))
    return lines
