"""How a run is driven, not what it computes: the run-control block of ``fedstruct run``
(``--resume``, ``--quiet``, ``--stop-after``, ``--overwrite``, a recipe's reuse, and
where it is tracked: ``--track``, ``--track-uri``),
declared and checked once and passed as one value from
:func:`~fedstruct.runs.contract.execute` to the launcher
(:class:`~fedstruct.runs.launch.PreparedRun`), the run here
(:func:`~fedstruct.runs.contract.run_resolved`) and the estimator's fit
(:class:`~fedstruct.runs.contract.RunContext`). None of it is a setting: it is not
in ``config.json`` and does not change the run's results.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.errors import ConfigError

__all__ = ["TRACKERS", "RunControl", "Tracking"]

#: What ``--track`` takes (:mod:`fedstruct.runs.tracking`).
TRACKERS = ("mlflow", "tensorboard")


@dataclass(frozen=True)
class Tracking:
    """Where a run's settings, per-round metrics, final metrics and files are logged
    besides its folder (``--track KIND [--track-uri URI]``; :mod:`fedstruct.runs.tracking`).

    Parameters
    ----------
    kind
        ``mlflow`` or ``tensorboard``.
    uri
        MLflow: a tracking URI (default: ``$MLFLOW_TRACKING_URI``, else a SQLite store
        ``mlflow.db`` in the current folder); TensorBoard: the folder of event files
        (default: the run folder's ``tensorboard/``). ``None``: the default.

    Raises
    ------
    ConfigError
        For another kind, or an empty URI.
    """

    kind: str
    uri: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in TRACKERS:
            raise ConfigError(f"--track {self.kind}: choose one of {', '.join(TRACKERS)}")
        if self.uri is not None and not self.uri.strip():
            raise ConfigError("--track-uri is empty; give a tracking URI or leave it out")


@dataclass(frozen=True)
class RunControl:
    """How a run is driven.

    Parameters
    ----------
    resume
        Continue the run in the folder from its checkpoint, with the settings its
        ``config.json`` records (``--resume DIR``).
    progress
        Show the progress bars (``--quiet``: not).
    stop_after
        Stop after this round, leaving a checkpoint to resume (``--stop-after``; at
        least 1); ``None``: run every round.
    overwrite
        Replace the run already in the folder, deleting only the files it wrote
        (``--overwrite``).
    reuse
        A recipe's run: pick up a folder holding this very run where it stopped
        (:func:`~fedstruct.runs.contract.execute`).
    track
        Log the run to MLflow or TensorBoard as well (:class:`Tracking`); ``None``: not.

    Raises
    ------
    ConfigError
        For a ``stop_after`` that is not a round (a whole number >= 1).
    """

    resume: bool = False
    progress: bool = False
    stop_after: int | None = None
    overwrite: bool = False
    reuse: bool = False
    track: Tracking | None = None

    def __post_init__(self) -> None:
        stop = self.stop_after
        if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int) or stop < 1):
            raise ConfigError(f"--stop-after {stop}: give the round to stop after, a number >= 1")
