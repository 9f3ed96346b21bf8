"""``--track tensorboard``: a run as TensorBoard event files (torch's ``SummaryWriter``,
which needs the ``tensorboard`` package).

The events of one tracked run go to ``ROOT/FOLDER-TIME``: ``ROOT`` is ``--track-uri``
(a local folder; ``file://`` accepted), else the run folder's ``tensorboard/``; ``FOLDER``
the run folder's name and ``TIME`` when the tracked run began, so that runs (and a
resumed run's sessions) sit side by side under one ``tensorboard --logdir ROOT``. Every
number is kept in double precision (``history.json``'s values, not 32-bit floats):
``round/NAME`` at step = the round, the final metrics as ``NAME`` at the last round's
step, ``config.json`` as the text ``config``. TensorBoard has no artifacts: the run's
files stay in its folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fedstruct.errors import ConfigError
from fedstruct.runs.control import Tracking

__all__ = ["TensorBoardTracker", "check", "log_root", "start"]

#: The events' folder in a run folder when no --track-uri is given.
DEFAULT_FOLDER = "tensorboard"


def log_root(tracking: Tracking, out: Path) -> Path:
    """The folder the tracked runs' event folders go in (module docstring).

    Raises
    ------
    ConfigError
        For a URI that is not a local folder.
    """
    if tracking.uri is None:
        return out / DEFAULT_FOLDER
    parts = urlsplit(tracking.uri)
    if parts.scheme == "file":
        return Path(parts.path)
    if parts.scheme and len(parts.scheme) > 1:  # a Windows drive letter is no scheme
        raise ConfigError(
            f"--track-uri {tracking.uri}: TensorBoard's events are written to a local "
            "folder; give its path"
        )
    return Path(tracking.uri).expanduser()


def _writer_class() -> Any:
    """torch's ``SummaryWriter``.

    Raises
    ------
    ConfigError
        If the ``tensorboard`` package is not installed.
    """
    from fedstruct.runs.tracking import missing_extra

    try:
        import_module("tensorboard")  # torch's writer needs it: say so if it is missing
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise missing_extra("tensorboard", exc) from None
    return SummaryWriter


def check(tracking: Tracking, out: Path) -> None:
    """Import TensorBoard's writer; check that the events' folder can be made, creating
    nothing.

    Raises
    ------
    ConfigError
        If the extra is not installed, or the folder is a file or cannot be written.
    """
    _writer_class()
    root = log_root(tracking, out).absolute()
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--track-uri {root} is a file; give a folder for TensorBoard's events")
    existing = next(p for p in (root, *root.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"--track-uri {root}: cannot write TensorBoard's events there ({existing} is not "
            "a folder you can write to); give another folder"
        )


def start(tracking: Tracking, out: Path, config: Mapping[str, Any]) -> TensorBoardTracker:
    """A new event folder for the run in ``out``, ``config.json`` logged as text.

    Raises
    ------
    ConfigError
        As :func:`check`.
    """
    writer_class = _writer_class()
    name = f"{out.resolve().name}-{time.strftime('%Y%m%d-%H%M%S')}"
    folder = log_root(tracking, out).absolute() / name
    try:
        writer = writer_class(log_dir=str(folder))
    except OSError as exc:
        raise ConfigError(
            f"--track-uri {folder.parent}: cannot write TensorBoard's events there "
            f"({exc.strerror or exc}); give another folder"
        ) from None
    text = json.dumps(dict(config), indent=2, sort_keys=True, default=str)
    writer.add_text("config", "```\n" + text + "\n```", 0)
    return TensorBoardTracker(writer, folder)


class TensorBoardTracker:
    """One TensorBoard event folder (:class:`~fedstruct.runs.tracking.Tracker`)."""

    def __init__(self, writer: Any, folder: Path) -> None:
        self.writer = writer
        self.folder = folder
        self.where = f"TensorBoard events in {folder}"

    def _scalars(self, values: Mapping[str, float], step: int, prefix: str = "") -> None:
        for key, value in values.items():
            self.writer.add_scalar(
                prefix + key, float(value), step, new_style=True, double_precision=True
            )
        self.writer.flush()

    def log_round(self, rnd: int, values: Mapping[str, float]) -> None:
        """Log round ``rnd``'s numbers as ``round/NAME`` at step ``rnd``."""
        from fedstruct.runs.tracking import ROUND_PREFIX

        self._scalars(values, rnd, ROUND_PREFIX)

    def finish(self, metrics: Mapping[str, float], last_round: int, files: Sequence[Path]) -> None:
        """Log the final metrics as ``NAME`` at step ``last_round`` (the files stay in the
        run's folder: TensorBoard keeps none)."""
        self._scalars(metrics, last_round)

    def end(self, status: str) -> None:
        """Log how the run ended (the text ``status``) and close the event file."""
        self.writer.add_text("status", status, 0)
        self.writer.close()
