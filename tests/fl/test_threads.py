"""Torch's threads: one by default (a busy machine stalls a spin-waiting pool), set by
FEDSTRUCT_THREADS, never more than the cores this process may use, and one in a
recipe's worker process."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from fedstruct.errors import ConfigError
from fedstruct.fl import threads
from fedstruct.fl.threads import THREADS_ENV, default_threads, usable_cores
from fedstruct.runs import compare


def test_the_default_is_one_thread_and_does_not_follow_the_machine_size(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 64)
    assert default_threads() == 1


def test_the_environment_sets_threads_capped_at_the_usable_cores(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setenv(THREADS_ENV, "2")
    assert default_threads() == 2
    monkeypatch.setenv(THREADS_ENV, "16")
    assert default_threads() == 2


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_one_line_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(ConfigError, match=rf"FEDSTRUCT_THREADS='{value}': give a positive"):
        default_threads()


def test_usable_cores_are_the_affinity_not_the_machine():
    if hasattr(os, "sched_getaffinity"):
        assert usable_cores() == len(os.sched_getaffinity(0))


def test_enco_learns_with_the_default_threads(monkeypatch):
    from fedstruct.methods.fedcd import ENCO, Beliefs, InterventionalData
    from fedstruct.methods.fedcd.enco import learner
    from fedstruct.methods.fedcd.enco.learner import ENCOConfig

    used = []
    real = learner.torch_threads
    monkeypatch.setattr(learner, "torch_threads", lambda n: used.append(n) or real(n))
    monkeypatch.setenv(THREADS_ENV, "1")
    monkeypatch.setattr(threads, "usable_cores", lambda: 8)
    rows = np.random.default_rng(0).integers(0, 2, size=(64, 3))
    data = InterventionalData(("a", "b", "c"), (2, 2, 2), rows, {k: rows[:16] for k in range(3)})
    config = ENCOConfig(model_steps=2, graph_steps=1, batch_size=16, graphs_per_step=2)
    ENCO(config).fit(data, Beliefs.uniform(3), epochs=1, seed=0)
    assert used == [1]


def test_a_recipe_worker_runs_on_one_thread_whatever_the_parent_set(monkeypatch):
    seen = {}

    def fake_execute(method, layers, folder, progress, reuse):
        seen.update(env=os.environ[THREADS_ENV], torch=torch.get_num_threads(), reuse=reuse)
        return compare.RunOutcome.__new__(compare.RunOutcome)

    monkeypatch.setenv(THREADS_ENV, "2")
    monkeypatch.setattr(compare, "execute", fake_execute)
    monkeypatch.setattr(compare, "replace", lambda outcome, model: outcome)
    before = torch.get_num_threads()
    try:
        compare._run_alone("fedcd", [], None)
    finally:
        torch.set_num_threads(before)
    assert seen == {"env": "1", "torch": 1, "reuse": True}


def test_fit_runs_torch_with_the_default_threads_and_restores_them(monkeypatch):
    from fedstruct.estimators import base
    from fedstruct.methods.fedavg import FedAvg

    seen = []

    def record(*args, **kwargs):
        seen.append(torch.get_num_threads())
        raise KeyboardInterrupt  # stop before any round

    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(base, "run_on_backend", record)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            FedAvg("y", {"x": 2, "y": 2}).fit([])
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
