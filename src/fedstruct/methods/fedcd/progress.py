"""A site's ENCO steps on stderr while a FED-CD round runs (issue 49).

An ENCO epoch (:mod:`~fedstruct.methods.fedcd.enco.learner`) is ``model_steps``
distribution-fitting steps, then ``graph_steps`` graph-fitting steps, each of which
scores ``graphs_per_step`` sampled graphs: on 46 variables the first round's first
epoch runs for many minutes, so the round's own progress line (one per round) says
nothing for that long. :class:`EncoPace` shows the site's steps under it
(:func:`~fedstruct.fl.progress.show_progress`: a line of the rich bar on a terminal,
a plain line at most every :data:`EVERY` seconds otherwise) with the time left of the
site's round once both stages have run a few steps: measured, per stage, at this
machine's pace (a graph step costs tens of distribution steps; one stage's pace says
little about the other's).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fedstruct.fl.progress import Tracker, elapsed_text
from fedstruct.methods.fedcd.enco.config import ENCOConfig

__all__ = ["EVERY", "GRAPH_STEP_COST", "EncoPace"]

#: Fewest seconds between two plain progress lines (a log file is not flooded).
EVERY = 10.0
#: Steps between two updates of the bar (each one is cheap, but not free).
_BATCH = 10
#: A graph-fitting step's cost in distribution-fitting steps, per graph it scores
#: (forward passes only, batched; measured on 46 variables of 4 bins, 100 graphs per
#: step, one CPU thread: 0.12 s and 0.8 s a step). Only for the rough estimate.
GRAPH_STEP_COST = 1 / 15


class EncoPace:
    """Counts ENCO's steps (its ``tick``) and moves a progress ``tracker``.

    Parameters
    ----------
    tracker
        Where the progress goes (``completed`` counts steps of both stages).
    config
        ENCO's settings (steps per stage).
    epochs
        Epochs in this fit.
    stages
        The two stages' names, in an epoch's order (ENCO's ``MODEL_STAGE`` and
        ``GRAPH_STAGE``).
    fits
        Fits of this size the whole run makes here, one after another (rounds times
        the in-process sites): the line also says what the run takes at this pace.
    clock
        Seconds, monotonic (a test passes its own).
    """

    def __init__(
        self,
        tracker: Tracker,
        config: ENCOConfig,
        epochs: int,
        stages: tuple[str, str],
        fits: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tracker, self._clock, self._stages, self._fits = tracker, clock, stages, fits
        self._per_epoch = {stages[0]: config.model_steps, stages[1]: config.graph_steps}
        self._graph_ratio = GRAPH_STEP_COST * config.graphs_per_step
        self._epochs = epochs
        self._done = dict.fromkeys(stages, 0)
        self._spent = dict.fromkeys(stages, 0.0)
        self._last = clock()

    @property
    def total(self) -> int:
        """Steps of both stages in all epochs."""
        return self._epochs * sum(self._per_epoch.values())

    def tick(self, stage: str) -> None:
        """One step of ``stage`` done (ENCO's ``tick``)."""
        now = self._clock()
        self._spent[stage] += now - self._last
        self._last = now
        self._done[stage] += 1
        done = sum(self._done.values())
        stage_end = self._done[stage] % self._per_epoch[stage] == 0
        if done % _BATCH == 0 or stage_end:
            self._tracker.update(done, self.info(stage, done))

    def left(self) -> float | None:
        """Seconds left at each stage's pace so far; ``None`` until both stages have
        run :data:`_BATCH` steps (a pace from fewer is mostly start-up)."""
        if min(self._done.values()) < _BATCH:
            return None
        return sum(self._left(s, self._spent[s] / self._done[s]) for s in self._stages)

    def rough_left(self) -> float | None:
        """Seconds left before the graph stage has a pace: the distribution stage's
        pace, the graph stage's taken as :data:`GRAPH_STEP_COST` of it per scored
        graph; ``None`` before :data:`_BATCH` distribution steps."""
        model, graph = self._stages
        if self._done[model] < _BATCH:
            return None
        pace = self._spent[model] / self._done[model]
        return self._left(model, pace) + self._left(graph, pace * self._graph_ratio)

    def _left(self, stage: str, pace: float) -> float:
        return (self._epochs * self._per_epoch[stage] - self._done[stage]) * pace

    def info(self, stage: str, done: int) -> str:
        """``epoch 1/2 · graph fitting · about 0:12:30 left`` after ``done`` steps (and
        ``, the run's 15 such fits about 3:45:00`` when it makes more; ``roughly``
        before the graph stage was timed, :meth:`rough_left`)."""
        epoch = (max(done, 1) - 1) // sum(self._per_epoch.values()) + 1
        left, how = self.left(), "about"
        if left is None:
            left, how = self.rough_left(), "roughly"
        when = "timing the steps"
        if left is not None:
            when = f"{how} {elapsed_text(left)} left"
            if self._fits > 1:
                whole = (left + sum(self._spent.values())) * self._fits
                when += f", the run's {self._fits} such fits {how} {elapsed_text(whole)}"
        return f"epoch {epoch}/{self._epochs} · {stage} · {when}"
