"""Issue 49, item 3: DP settings that would have no effect are refused, a budget too
small for Opacus and its loose-bound warnings are one line each, and central DP warns
when too few sites per round let the noise dominate the averaged update."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError, FedstructWarning
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.privacy import dp
from fedstruct.privacy.central_dp import CentralDP, central_step, noise_to_signal
from fedstruct.privacy.dp import DPBudget, PrivacyLedger


@pytest.mark.parametrize(
    ("config", "params", "says"),
    [
        (FedAvgConfig, {"dp_noise_multiplier": 1.0}, "dp_noise_multiplier = 1.0 has no effect"),
        (FedAvgConfig, {"dp_delta": 1e-5}, "dp_delta = 1e-05 has no effect without dp_epsilon"),
        (FedAvgConfig, {"dp_clip": 0.5}, "dp_clip = 0.5 has no effect without dp_epsilon"),
        (FedAvgConfig, {"central_dp_clip": 2.0}, "no effect without central_dp_noise"),
        (FedAvgConfig, {"central_dp_quantile": 0.5}, "central_dp_quantile = 0.5 has no effect"),
        (FCMConfig, {"dp_rounds": 3}, "dp_rounds = 3 has no effect without dp_epsilon"),
    ],
)
def test_a_dp_setting_without_its_switch_is_refused(config, params, says):
    with pytest.raises(ConfigError) as err:
        config(**params)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_same_settings_with_their_switch_are_accepted():
    assert FedAvgConfig(dp_epsilon=3.0, dp_noise_multiplier=1.0).dp_noise_multiplier == 1.0
    assert FedAvgConfig(central_dp_noise=1.0, central_dp_clip=2.0).central_dp().clip == 2.0
    assert FCMConfig(dp_epsilon=3.0, dp_rounds=3).dp_rounds == 3


def test_set_dp_noise_multiplier_alone_stops_the_run_before_it_starts(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "fedavg", "--set", "dp_noise_multiplier=1", "--out", str(out)]
    )
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "dp_noise_multiplier = 1.0 has no effect without dp_epsilon" in text
    assert "set dp_epsilon too, or drop dp_noise_multiplier" in text
    assert not out.exists()


def test_a_budget_too_small_for_opacus_is_one_line():
    with pytest.raises(ConfigError) as err:
        DPBudget(1e-9, 0.005).noise_multiplier(0.125, 16)
    message = str(err.value)
    assert message.startswith("DP-SGD: dp_epsilon = 1e-09 (δ = 0.005) is too small a budget")
    assert "for 16 steps at sampling rate 0.125" in message and "\n" not in message


@pytest.mark.parametrize(("noise", "edge"), [(0.05, "smallest"), (1e5, "largest")])
def test_opacus_loose_bound_warnings_become_one_fedstruct_line(monkeypatch, noise, edge):
    monkeypatch.setattr(dp, "_SAID", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for steps in (100, 200):  # every round of every site used to warn again
            PrivacyLedger([(noise, 0.1, steps)]).epsilon(1e-5)
    assert [str(w.message) for w in caught] == [dp.LOOSE_BOUND[edge]]
    assert caught[0].category is FedstructWarning
    assert f"best order is its {edge}" in dp.LOOSE_BOUND[edge]


def test_noise_to_signal_is_z_sqrt_d_over_m():
    settings = CentralDP(noise_multiplier=2.0)
    assert noise_to_signal(settings, asked=4, dimension=100) == pytest.approx(2.0 * 10 / 4)
    # adaptive clipping: the updates' own multiplier z_Δ (Andrew et al. 2021, Theorem 1)
    adaptive = CentralDP(noise_multiplier=1.0, target_quantile=0.5, count_noise=1.0)
    z_update = (1.0 - 0.25) ** -0.5
    assert noise_to_signal(adaptive, 9, 81) == pytest.approx(z_update * 9 / 9)


def _first_round(settings: CentralDP, asked: int, d: int, history=()):
    total = {"delta.w": np.zeros(d), "central_dp.below_clip": np.array([float(asked)])}
    return central_step(
        total, asked, settings=settings, history=list(history), asked=asked,
        federation=asked, prefix="delta.",
    )  # fmt: skip


def test_central_dp_warns_once_when_the_noise_dominates():
    settings = CentralDP(noise_multiplier=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, record = _first_round(settings, asked=4, d=546)
        _first_round(settings, asked=4, d=546, history=[record])  # a later round: no more
        _first_round(settings, asked=40, d=546)  # z√d/m = 0.58: the noise does not dominate
    [warning] = caught
    assert warning.category is FedstructWarning
    ratio = math.sqrt(546) / 4
    assert "with 4 sites asked per round the noise dominates the averaged update" in str(
        warning.message
    )
    assert f"z√d/m = 1·√546/4 ≈ {ratio:.3g} times the clipping bound C" in str(warning.message)
    assert "ask about 24 sites per round for a ratio of 1" in str(warning.message)
