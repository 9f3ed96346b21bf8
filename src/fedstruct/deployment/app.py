"""The Flower App of a deployment: ``server_app`` and ``client_app`` for ``flwr run``.

``fedstruct run METHOD --backend flower`` submits a run whose run config carries the
method's name, its resolved settings (JSON), the submitter's ``config.json`` and the
name of its results folder. The SuperLink starts :data:`server_app`, which writes the
run's folder inside the SuperLink's runs folder (holding its lock for the run; a new
run's folder must be new or empty), and runs
:func:`~fedstruct.runs.contract.run_resolved` there with the deployment backend around
Flower's grid; the submitter fetches the folder back (:mod:`fedstruct.deployment.results`).
Every SuperNode answers with :data:`client_app`, in one of two ways:

- **Built-in data** (the node has a ``partition-id``): it rebuilds its partition of
  the federation from the same settings (deterministic in the seed) and hosts the
  method's client for it. The built-in data sets are simulations drawn from the seed
  or public tables shipped in the package, so every node has their source whole;
  which rows are a partition's depends on all of them (a label-skew split draws over
  every row's label), so the node draws the split for every client, then builds the
  data of its own client only (:class:`~fedstruct.data.ClientsOnDemand`). A
  simulation that draws each client's rows on their own (FedCDnv's clients, FED-CD's
  interventional rows in the vertical split) draws the node's rows only.
- **The site's own file** (``fedstruct flower supernode --data FILE --name SITE``:
  node config ``data``, ``site`` and optionally ``graph``; the run names its sites
  with ``--node-site SITE``): before round 1 the ServerApp runs a schema handshake.
  Every node describes its file (:data:`DESCRIBE_SITE`: the method's
  :class:`~fedstruct.data.formats.SiteFormat` — column names, kinds, level
  names, row count, or an image site's shape, class names and counts; never a row);
  the server merges the descriptions into the federation schema and sends it
  (:data:`FEDERATION_SCHEMA`); each node keeps it in its state, reads and encodes
  its own file with it, builds its client (every check of the method's run runs
  there, on its own file) and reports what it dropped and found constant. The
  server then runs the method on a source over
  :func:`~fedstruct.runs.source.server_view` (that schema and those reports,
  no file); each node builds its client from its own file only
  (:func:`~fedstruct.runs.source.node_view`).

A node started with ``--approve FILE`` answers only the runs its operator approved
(:mod:`~fedstruct.deployment.approval`): the method, and optionally the exact settings
by their digest. Every message of another run, HELLO first, is refused before the
node does anything else (:func:`_admit`): the run stops with the node's one-line
reason, and no file of the node is read.

A node may offer several data sets (``--data NAME=PATH`` repeated, ``--manifest``:
:mod:`~fedstruct.deployment.node`); a run names the one it uses at each node
(``--node-site SITE:DATASET``), and a node that does not offer it refuses the run's
first message. A catalogue run (method :data:`~fedstruct.deployment.catalogue.CATALOGUE`,
``fedstruct flower catalogue``) runs no method: it asks every connected node what it
offers (:data:`CATALOGUE` messages, answered whatever the node approves) and writes
the answers into its results folder, which the submitter fetches back as a run's.

Either way a node trains where its own ``device`` says (node config, ``fedstruct
flower supernode --device``; :func:`node_settings`), else where the run's setting
does; what it sends is the same CPU arrays (:mod:`fedstruct.fl.device`).
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flwr.app import ConfigRecord, Context
from flwr.serverapp import Grid as FlowerGridAPI
from flwr.serverapp import ServerApp

from fedstruct.deployment.approval import APPROVE
from fedstruct.deployment.catalogue import CATALOGUE
from fedstruct.deployment.contract import ERROR_FILE, results_folder
from fedstruct.deployment.node import NodeOffer
from fedstruct.errors import ConfigError, FedstructError, ProtocolError
from fedstruct.fl.flower.client_app import make_client_app, partition_of
from fedstruct.fl.message import Message

if TYPE_CHECKING:  # imported in the functions that use them: every message starts a
    # ClientApp process that imports this module, and a stage answered without the
    # method's client (hello, secure aggregation's keys, shares, unmask) needs none
    from fedstruct.data.client import ClientData
    from fedstruct.data.sites import SiteSpec
    from fedstruct.fl.client import Client
    from fedstruct.fl.flower.deployment import FlowerDeploymentBackend
    from fedstruct.runs.contract import Runnable
    from fedstruct.runs.source import SiteView

__all__ = [
    "DESCRIBE_SITE",
    "FEDERATION_SCHEMA",
    "client_app",
    "preload_client",
    "preload_server",
    "server_app",
]

#: Asks a node to describe its own file (its answer: ``config["description"]``, JSON).
DESCRIBE_SITE = "fedstruct.describe-site"
#: Sends the merged federation schema (``config["schema"]``, JSON); the node answers
#: with what it reports of its encoded file (``config["report"]``, JSON).
FEDERATION_SCHEMA = "fedstruct.federation-schema"
_SCHEMA_RECORD = "fedstruct.schema"

server_app = ServerApp()


@server_app.main()
def _serve(grid: FlowerGridAPI, context: Context) -> None:
    """Run the submitted method on the connected SuperNodes; results go to ``out``,
    which must lie inside the SuperLink's runs folder (:func:`results_folder`)."""
    from fedstruct.fl.flower.deployment import FlowerDeploymentBackend
    from fedstruct.runs.contract import run_resolved, runnable
    from fedstruct.runs.control import RunControl
    from fedstruct.runs.folder import folder_lock, update_files, write_record
    from fedstruct.runs.settings import apply_settings

    cfg = context.run_config
    out = results_folder(str(cfg["out"]), os.environ)  # before anything is written
    backend = FlowerDeploymentBackend(
        grid,
        min_nodes=int(cfg["min-nodes"]) or None,
        join_timeout=float(cfg["join-timeout"]),
        reply_timeout=float(cfg["reply-timeout"]),
    )
    resume = bool(cfg["resume"])
    with folder_lock(out):
        try:
            _prepare(out, str(cfg["config"]), resume=resume)
            if str(cfg["method"]) == CATALOGUE:  # what each node offers: no method runs
                from fedstruct.deployment.catalogue import write_catalogue

                write_catalogue(backend, out)
                write_record(out, "finished")
                return
            entry = runnable(str(cfg["method"]))
            settings = apply_settings(
                entry.settings(), json.loads(str(cfg["settings"])), method=entry.name
            )
            view = _handshake(backend, entry, settings) if settings.node_sites else None
            run_resolved(
                entry,
                settings,
                out,
                backend,
                RunControl(resume=resume, stop_after=int(cfg["stop-after"]) or None),
                view=view,
            )
        except FedstructError as exc:
            (out / ERROR_FILE).write_text(
                json.dumps({"class": type(exc).__name__, "message": str(exc)}) + "\n"
            )
            update_files(out)
            raise


def _prepare(out: Path, config: str, *, resume: bool) -> None:
    """Make the run's results folder ready (its lock held): a new run's must be new or
    empty, a resumed run's must hold it; the submitter's ``config.json`` is written
    there (so that the folder, fetched anywhere, is a whole run's).

    Raises
    ------
    ConfigError
        A new run's folder holds files, a resumed run's holds no run.
    """
    from fedstruct.files import parse_json
    from fedstruct.fl.checkpoint import write_atomically
    from fedstruct.runs.folder import LOCK_FILE, reopen, write_record

    if resume:
        reopen(out)
    elif [p for p in out.iterdir() if p.name != LOCK_FILE]:
        raise ConfigError(
            f"the SuperLink's results folder {out.name!r} holds files already; submit the "
            "run again (it gets a new folder) or resume the run that wrote them"
        )
    else:
        write_record(out, "running")
    (out / ERROR_FILE).unlink(missing_ok=True)
    submitted = parse_json(config, "the submitted config.json")
    if isinstance(submitted, dict) and submitted:
        write_atomically(out / "config.json", (json.dumps(submitted, indent=2) + "\n").encode())


def _handshake(backend: FlowerDeploymentBackend, entry: Runnable, settings: Any) -> SiteView:
    """The schema handshake with every site's node (module docstring); the server's view.

    Raises
    ------
    ProtocolError
        If a site's node does not answer.
    FedstructError
        A node's own error about its file (same class and message), or the merge's.
    """
    from fedstruct.fl.flower.grid import FlowerGrid
    from fedstruct.runs.node_sites import merge
    from fedstruct.runs.source import server_view

    sites = list(settings.node_sites)
    grid = FlowerGrid(
        backend.grid,
        sites,
        seed=settings.seed,
        join_timeout=backend.join_timeout,
        reply_timeout=backend.reply_timeout,
        poll_interval=backend.poll_interval,
        stop=backend.stop,
    )

    def ask(kind: str, key: str, **config: Any) -> list[dict[str, Any]]:
        replies = grid.exchange_outside_rounds(
            {k: Message(kind, config=config) for k in range(len(sites))}
        )
        silent = [sites[k] for k in range(len(sites)) if k not in replies]
        if silent:
            raise ProtocolError(
                f"the nodes of sites {silent} did not answer the schema handshake within "
                f"{backend.reply_timeout:.0f} s; check that they run and can reach the SuperLink"
            )
        return [json.loads(str(replies[k].config[key])) for k in range(len(sites))]

    schema = merge(entry, settings, ask(DESCRIBE_SITE, "description"))
    reports = ask(FEDERATION_SCHEMA, "report", schema=json.dumps(schema, sort_keys=True))
    return server_view(settings, schema, dict(zip(sites, reports, strict=True)))


# ------------------------------------------------------------------ the nodes
@cache
def _submitted(method: str, settings_json: str) -> tuple[Runnable, Any]:
    from fedstruct.runs.contract import runnable
    from fedstruct.runs.settings import apply_settings

    entry = runnable(method)
    return entry, apply_settings(entry.settings(), json.loads(settings_json), method=method)


def _run_of(context: Context) -> tuple[Runnable, Any]:
    return _submitted(str(context.run_config["method"]), node_settings(context))


def node_settings(context: Context) -> str:
    """The run's settings (JSON) as this node applies them: the node's own ``device``
    (node config, ``fedstruct flower supernode --device``) replaces the run's, for a
    method that has the setting; every other setting is the run's."""
    submitted = str(context.run_config["settings"])
    device = context.node_config.get("device")
    if not device:
        return submitted
    settings = json.loads(submitted)
    if "device" not in settings:  # a method that trains no torch model
        return submitted
    return json.dumps({**settings, "device": str(device)})


def _offer(context: Context) -> NodeOffer | None:
    """What this SuperNode offers (node config ``site``, ``datasets``), or ``None`` for
    a node hosting a built-in partition."""
    return NodeOffer.from_config(context.node_config)


def _requested(context: Context, offer: NodeOffer) -> str | None:
    """The data set the run asks of this node (its ``node_datasets`` setting), read
    from the submitted settings without applying them."""
    chosen = json.loads(str(context.run_config["settings"])).get("node_datasets") or {}
    value = chosen.get(offer.name)
    return None if value is None else str(value)


def _own_site(context: Context) -> SiteSpec | None:
    """The site whose file this SuperNode holds for the run: the data set the run asks
    of it (:meth:`NodeOffer.dataset`), named as the node; ``None`` for a node hosting a
    built-in partition."""
    offer = _offer(context)
    if offer is None:
        return None
    return offer.dataset(_requested(context, offer)).spec(offer.name)


def _require_site(context: Context) -> SiteSpec:
    spec = _own_site(context)
    if spec is None:
        raise ConfigError(
            "this run's sites keep their files on their nodes, but this SuperNode holds no "
            "file; restart it with 'fedstruct flower supernode --data FILE --name SITE'"
        )
    return spec


def _identify(context: Context) -> dict[str, int | str]:
    """The node's answer to HELLO (and its name in a secure-aggregation stage's errors),
    without building its site (no data module imported)."""
    offer = _offer(context)
    if offer is None:
        return {"partition": partition_of(context)}
    return {"site": offer.name}


def _node_label(context: Context) -> str:
    """How the node names itself to the coordinator: its site, or its partition."""
    identity = _identify(context)
    if "site" in identity:
        return f"SuperNode {identity['site']!r}"
    return f"SuperNode of partition {identity['partition']}"


def _admit(message: Message, context: Context) -> None:
    """What the node checks before it answers any message of a run, HELLO first: that
    its operator approves the run (node config ``approve``: ``fedstruct flower
    supernode --approve FILE``) and, for a run that names this node's site, that the
    node offers the data set the run asks of it. A catalogue is always answered."""
    method = str(context.run_config["method"])
    if method == CATALOGUE:
        return
    path = context.node_config.get(APPROVE)
    if path:
        from fedstruct.deployment.approval import check_approved

        settings = json.loads(str(context.run_config["settings"]))
        check_approved(_node_label(context), Path(str(path)), method, settings)
    offer = _offer(context)
    if offer is not None and offer.name in _run_sites(context):
        offer.dataset(_requested(context, offer))


def _run_sites(context: Context) -> list[str]:
    """The sites the run names (``node_sites``), from the submitted settings."""
    return list(json.loads(str(context.run_config["settings"])).get("node_sites") or ())


def _catalogue(message: Message, context: Context) -> Message:
    """What this node offers, each data set described as its owner allows
    (:func:`fedstruct.deployment.catalogue.describe_offer`)."""
    from fedstruct.deployment.catalogue import describe_offer

    offer = _offer(context)
    node = offer.name if offer is not None else f"partition {partition_of(context)}"
    datasets = describe_offer(offer) if offer is not None else []
    return Message(CATALOGUE, config={"node": node, "datasets": json.dumps(datasets)})


def _describe(message: Message, context: Context) -> Message:
    """Handshake step 1: what this node reports of its own file."""
    from fedstruct.runs.node_sites import describe

    entry, settings = _run_of(context)
    description = describe(entry, settings, _require_site(context))
    return Message(DESCRIBE_SITE, config={"description": json.dumps(description)})


def _take_schema(message: Message, context: Context) -> Message:
    """Handshake step 3: keep the federation schema, build this node's client from its
    own file with it (so its errors surface now), report to the server."""
    spec = _require_site(context)
    schema = str(message.config["schema"])
    context.state[_SCHEMA_RECORD] = ConfigRecord({"schema": schema})
    _, report = _site_client(
        str(context.run_config["method"]), node_settings(context), _key(spec), schema
    )
    return Message(FEDERATION_SCHEMA, config={"report": json.dumps(report)})


def _key(spec: SiteSpec) -> tuple[str, str, str]:
    return spec.name, str(spec.path), str(spec.options.get("graph", ""))


@cache
def _site_client(
    method: str, settings_json: str, site: tuple[str, str, str], schema: str
) -> tuple[Client, dict[str, Any]]:
    """This node's client, from its own file only, and its report (cached per process)."""
    from fedstruct.data.sites import SiteSpec
    from fedstruct.runs.node_sites import build_own

    entry, settings = _submitted(method, settings_json)
    name, path, graph = site
    spec = SiteSpec(name, Path(path), {"graph": graph} if graph else {})
    source, own, report = build_own(entry, settings, spec, json.loads(schema))
    model = entry.method(settings, source).prepare()  # type: ignore[attr-defined]
    return model.make_client(own), report


@cache
def _partition(method: str, settings_json: str, partition: int) -> tuple[Any, ClientData]:
    """The method and built-in partition ``partition``'s data, nothing of the other
    partitions (module docstring; cached per process)."""
    from fedstruct.runs.source import checked_clients

    entry, settings = _submitted(method, settings_json)
    source = entry.resolve(settings)
    model = entry.method(settings, source).prepare()  # type: ignore[attr-defined]
    return model, checked_clients(source)[partition]


def _client_for(context: Context) -> Client:
    method, settings_json = str(context.run_config["method"]), node_settings(context)
    spec = _own_site(context)
    if spec is not None:
        record = context.state.config_records.get(_SCHEMA_RECORD)
        if record is None:
            raise ProtocolError(
                f"site {spec.name!r} got a method message before the schema handshake; "
                "restart the run"
            )
        return _site_client(method, settings_json, _key(spec), str(record["schema"]))[0]
    # the grid refused a partition outside 0..K-1 at HELLO, before any method message
    model, own = _partition(method, settings_json, partition_of(context))
    return model.make_client(own)


def preload_client() -> None:
    """Import what a node's first method message needs whatever the method: the
    estimators' base (and scikit-learn, seconds of imports). A warm worker calls it
    (:data:`~fedstruct.fl.flower.worker.PRELOAD`) before its run's first message, while
    its node is idle; this module itself imports no method."""
    import fedstruct.estimators.base  # noqa: F401


def preload_server() -> None:
    """Import what a run's ServerApp needs whatever the method: the run contract, the
    deployment backend, the estimators' base (scikit-learn) and the plots. A warm
    ServerApp calls it (:data:`~fedstruct.fl.flower.serverapp_worker.PRELOAD`) while
    its SuperLink is idle."""
    import fedstruct.estimators.base
    import fedstruct.fl.flower.deployment
    import fedstruct.runs.contract
    import fedstruct.runs.folder
    import fedstruct.runs.settings  # noqa: F401
    from fedstruct.drawing.plots import load_pyplot

    load_pyplot()


client_app = make_client_app(
    _client_for,
    identify=_identify,
    handlers={DESCRIBE_SITE: _describe, FEDERATION_SCHEMA: _take_schema, CATALOGUE: _catalogue},
    admit=_admit,
)
