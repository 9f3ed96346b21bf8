"""What the submitter (:mod:`~fedstruct.experiments.flower.deploy`) and the deployed app
(:mod:`~fedstruct.experiments.flower.app`) agree on: the app's run-config keys and the
file the server side leaves when it fails. No Flower import."""

from __future__ import annotations

__all__ = ["ERROR_FILE", "RUN_CONFIG_DEFAULTS"]

#: Written into the results folder when the server side fails with a fedstruct error.
ERROR_FILE = "error.json"

#: The run-config keys of the app (declared in its pyproject.toml), with defaults.
RUN_CONFIG_DEFAULTS: dict[str, str | int | float | bool] = {
    "method": "",
    "settings": "{}",
    "out": "",
    "resume": False,
    "stop-after": 0,
    "min-nodes": 0,
    "join-timeout": 120.0,
    "reply-timeout": 600.0,
}
