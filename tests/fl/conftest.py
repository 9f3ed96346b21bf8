"""Fixtures of the Flower tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

FOREIGN_APP = """\
import json
import time
from pathlib import Path

from flwr.app import Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp

client_app = ClientApp()
server_app = ServerApp()


@client_app.query()
def query(msg, context):
    Path(str(context.run_config["marker"])).write_text("foreign code ran on a node")
    return Message(RecordDict(), reply_to=msg)


@server_app.main()
def main(grid, context):
    nodes = []
    while not nodes:
        nodes = list(grid.get_node_ids())
        time.sleep(0.5)
    asks = [Message(RecordDict(), dst_node_id=n, message_type="query") for n in nodes]
    replies = grid.send_and_receive(asks, timeout=90)
    codes = [r.error.code if r.has_error() else "answered" for r in replies]
    Path(str(context.run_config["report"])).write_text(json.dumps(codes))
"""


def _write_foreign_app(folder: Path, *, components: dict[str, str] | None = None) -> Path:
    """A Flower App that is not fedstruct's: its own code, which writes a marker file
    on the node that runs it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "foreign.py").write_text(FOREIGN_APP)
    names = components or {"serverapp": "foreign:server_app", "clientapp": "foreign:client_app"}
    lines = "\n".join(f'{k} = "{v}"' for k, v in names.items())
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "foreign"\nversion = "1.0.0"\ndependencies = []\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["."]\n\n'
        '[tool.flwr.app]\npublisher = "mallory"\n\n'
        f"[tool.flwr.app.components]\n{lines}\n\n"
        '[tool.flwr.app.config]\nmarker = ""\nreport = ""\n'
    )
    return folder


@pytest.fixture
def write_foreign_app() -> Callable[..., Path]:
    """``write_foreign_app(folder, components=None)``: a Flower App that is not
    fedstruct's (see :func:`_write_foreign_app`)."""
    return _write_foreign_app
