"""How a run is driven, not what it computes: the run-control block of ``fedstruct run``
(``--resume``, ``--quiet``, ``--stop-after``, ``--overwrite``, a recipe's reuse),
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

__all__ = ["RunControl"]


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

    def __post_init__(self) -> None:
        stop = self.stop_after
        if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int) or stop < 1):
            raise ConfigError(f"--stop-after {stop}: give the round to stop after, a number >= 1")
