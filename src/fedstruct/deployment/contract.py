"""What the submitter (:mod:`~fedstruct.deployment.submit`) and the deployed app
(:mod:`~fedstruct.deployment.app`) agree on: the app's run-config keys, the
file the server side leaves when it fails, and where a run may write its results
(:func:`results_folder`). No Flower import."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fedstruct.errors import DeploymentError

__all__ = ["ERROR_FILE", "RUNS_ENV", "RUN_CONFIG_DEFAULTS", "results_folder"]

#: Written into the results folder when the server side fails with a fedstruct error.
ERROR_FILE = "error.json"

#: Environment variable naming the folder a SuperLink's runs keep their results in
#: (``fedstruct flower superlink --runs DIR``; its ServerApp processes inherit it).
RUNS_ENV = "FEDSTRUCT_SUPERLINK_RUNS"

#: The run-config keys of the app (declared in its pyproject.toml), with defaults:
#: ``out`` names the run's results folder in the SuperLink's runs folder, ``config``
#: is the submitter's ``config.json`` (JSON), written there too.
RUN_CONFIG_DEFAULTS: dict[str, str | int | float | bool] = {
    "method": "",
    "settings": "{}",
    "config": "{}",
    "out": "",
    "resume": False,
    "stop-after": 0,
    "min-nodes": 0,
    "join-timeout": 120.0,
    "reply-timeout": 600.0,
}


def results_folder(out: str, environ: Mapping[str, str]) -> Path:
    """The results folder ``out`` a submitted run names, if it lies inside the folder
    the SuperLink keeps runs in (``environ[RUNS_ENV]``): a ServerApp writes nowhere
    else, whoever submitted the run (links and ``..`` resolved first).

    Raises
    ------
    DeploymentError
        One line, if no runs folder is set (a SuperLink not started by ``fedstruct
        flower superlink``) or ``out`` is not inside it.
    """
    runs = environ.get(RUNS_ENV)
    if not runs:
        raise DeploymentError(
            "this SuperLink keeps no runs folder, so the run may write nowhere; start it "
            "with 'fedstruct flower superlink' (--runs DIR)"
        )
    root = Path(runs).resolve()
    folder = (root / out).resolve()
    if folder == root or not folder.is_relative_to(root):
        raise DeploymentError(
            f"the run's results folder {folder} is not inside the SuperLink's runs folder "
            f"{root}; submit with --out inside it (or start the SuperLink with --runs DIR)"
        )
    return folder
