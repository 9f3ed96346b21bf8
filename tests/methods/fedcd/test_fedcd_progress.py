"""FED-CD shows each site's ENCO steps from the first epoch (issue 49: on 3 labs x 46
continuous variables a run printed nothing for 15 minutes)."""

import numpy as np
import pytest

from fedstruct.data.scm import CategoricalSCM
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.fedcd import ENCOConfig, FedCD
from fedstruct.methods.fedcd.enco.learner import GRAPH_STAGE, MODEL_STAGE
from fedstruct.methods.fedcd.progress import EncoPace
from fedstruct.methods.fedcd.sources import vertical_interventions

TINY = {"model_steps": 10, "graph_steps": 2, "graphs_per_step": 5, "batch_size": 32}


class _Recorded:
    """A progress tracker that keeps every update."""

    def __init__(self) -> None:
        self.updates: list[tuple[int, str]] = []

    def update(self, completed: int, info: str = "") -> None:
        self.updates.append((completed, info))

    def advance(self, info: str = "") -> None:
        raise AssertionError("EncoPace sets the count")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_pace_says_the_time_left_from_each_stage_s_own_steps():
    """20 distribution steps of 1 s, 20 graph steps of 5 s per epoch, 2 epochs, the
    run making 6 such fits: updates every 10 steps and at each stage's end; the time
    left only once both stages were timed, from each stage's own pace."""
    tracker, clock = _Recorded(), _Clock()
    config = ENCOConfig(model_steps=20, graph_steps=20, graphs_per_step=75)
    pace = EncoPace(tracker, config, 2, (MODEL_STAGE, GRAPH_STAGE), fits=6, clock=clock)
    assert pace.total == 80
    for _ in range(9):
        clock.now += 1.0
        pace.tick(MODEL_STAGE)
    assert pace.info(MODEL_STAGE, 9) == "epoch 1/2 · distribution fitting · timing the steps"
    for _ in range(11):
        clock.now += 1.0
        pace.tick(MODEL_STAGE)
    assert [c for c, _ in tracker.updates] == [10, 20]
    # before graph fitting: its steps at 75 / 15 = 5 distribution steps each, so
    # 20 x 1 s + 40 x 5 s = 220 s left, and a fit of 240 s
    assert tracker.updates[-1][1] == (
        "epoch 1/2 · distribution fitting · roughly 0:03:40 left, the run's 6 such fits "
        "roughly 0:24:00"
    )
    for _ in range(10):
        clock.now += 5.0
        pace.tick(GRAPH_STAGE)
    # left: 20 model steps at 1 s + 30 graph steps at 5 s = 170 s; the fit 240 s, x6
    assert pace.left() == pytest.approx(170.0)
    assert tracker.updates[-1] == (
        30,
        "epoch 1/2 · graph fitting · about 0:02:50 left, the run's 6 such fits about 0:24:00",
    )
    for _ in range(10):
        clock.now += 5.0
        pace.tick(GRAPH_STAGE)
    clock.now += 1.0
    pace.tick(MODEL_STAGE)  # the second epoch starts
    assert tracker.updates[-1][1].startswith("epoch 1/2 · graph fitting")  # 40: epoch 1's end
    assert pace.info(MODEL_STAGE, 41).startswith("epoch 2/2 · distribution fitting")


def test_a_run_with_progress_shows_every_site_s_enco_steps_in_round_one(capsys):
    dag = chain_dag(4, seed=0)
    scm = CategoricalSCM(dag, seed=0, n_categories=3)
    clients = vertical_interventions(scm, 2, n_observational=200, n_per_intervention=20, seed=0)
    quiet = FedCD(rounds=2, seed=1, **TINY).fit(clients)
    assert "ENCO" not in capsys.readouterr().err
    shown = FedCD(rounds=2, seed=1, **TINY).fit(clients, progress=True)
    lines = capsys.readouterr().err.splitlines()  # stderr is no terminal here: plain lines
    for client in ("client-1", "client-2"):
        first = next(line for line in lines if line.startswith(f"{client}: ENCO, round 1:"))
        assert "steps 10/24 · epoch 1/2 · distribution fitting" in first
    assert any(line.startswith("client-1: ENCO, round 2: steps 24/24") for line in lines)
    # showing progress changes nothing that is learned
    np.testing.assert_array_equal(quiet.beliefs_.gamma, shown.beliefs_.gamma)
