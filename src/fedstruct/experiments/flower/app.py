"""The Flower App of a deployment: ``server_app`` and ``client_app`` for ``flwr run``.

``fedstruct run METHOD --backend flower`` submits a run whose run config carries the
method's name, its resolved settings (JSON) and the results folder. The SuperLink
starts :data:`server_app`, which runs
:func:`~fedstruct.experiments.runs.run_resolved` with the deployment backend around
Flower's grid. Every SuperNode answers with
:data:`client_app`, which rebuilds its own partition of the federation from the same
settings (deterministic in the seed) and hosts the method's client for it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from flwr.app import Context
from flwr.serverapp import Grid as FlowerGridAPI
from flwr.serverapp import ServerApp

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, FedstructError
from fedstruct.experiments.flower.contract import ERROR_FILE
from fedstruct.experiments.runs import run_resolved, runnable
from fedstruct.experiments.settings import apply_settings
from fedstruct.fl.client import Client
from fedstruct.fl.flower.client_app import make_client_app
from fedstruct.fl.flower.deployment import FlowerDeploymentBackend

__all__ = ["client_app", "server_app"]

server_app = ServerApp()


@server_app.main()
def _serve(grid: FlowerGridAPI, context: Context) -> None:
    """Run the submitted method on the connected SuperNodes; results go to ``out``."""
    cfg = context.run_config
    out = Path(str(cfg["out"]))
    backend = FlowerDeploymentBackend(
        grid,
        min_nodes=int(cfg["min-nodes"]) or None,
        join_timeout=float(cfg["join-timeout"]),
        reply_timeout=float(cfg["reply-timeout"]),
    )
    try:
        entry = runnable(str(cfg["method"]))
        settings = apply_settings(
            entry.settings(), json.loads(str(cfg["settings"])), method=entry.name
        )
        run_resolved(
            entry,
            settings,
            out,
            backend,
            resume=bool(cfg["resume"]),
            stop_after=int(cfg["stop-after"]) or None,
        )
    except FedstructError as exc:
        out.mkdir(parents=True, exist_ok=True)
        (out / ERROR_FILE).write_text(
            json.dumps({"class": type(exc).__name__, "message": str(exc)}) + "\n"
        )
        raise


@cache
def _federation(method: str, settings_json: str) -> tuple[object, list[ClientData]]:
    entry = runnable(method)
    settings = apply_settings(entry.settings(), json.loads(settings_json), method=method)
    return entry.method(settings), entry.build_clients(settings)


def _client_for(partition: int, context: Context) -> Client:
    model, clients = _federation(
        str(context.run_config["method"]), str(context.run_config["settings"])
    )
    if not 0 <= partition < len(clients):
        raise ConfigError(
            f"partition {partition} does not exist: the federation has {len(clients)} clients "
            f"(partitions 0..{len(clients) - 1}); restart this SuperNode with a valid --partition"
        )
    return model.make_client(clients[partition])  # type: ignore[attr-defined]


client_app = make_client_app(_client_for)
