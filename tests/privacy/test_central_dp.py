"""Central DP on the aggregate: clipping, the noise on the sum, adaptive clipping, ε."""

import numpy as np
import pytest
from opacus.accountants import RDPAccountant

from fedstruct.errors import ConfigError
from fedstruct.privacy.central_dp import (
    CentralDP,
    central_epsilon,
    central_report,
    clip_update,
    next_clip,
    noised_fraction_below,
    noised_mean,
    update_noise_multiplier,
)


def test_an_update_is_clipped_to_the_norm_over_every_array():
    update = {"a": np.array([3.0, 0.0], dtype=np.float32), "b": np.array([[4.0]], np.float32)}
    clipped, norm = clip_update(update, 1.0)
    assert norm == pytest.approx(5.0)
    assert clipped["a"].dtype == np.float32 and clipped["b"].shape == (1, 1)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped["b"], [[0.8]], rtol=1e-6)
    small, _ = clip_update(update, 10.0)  # under the norm: unchanged
    np.testing.assert_array_equal(small["a"], update["a"])


def test_the_noise_on_the_sum_has_standard_deviation_z_c_over_m():
    total = {"w": 3 * np.ones(4)}  # two sites' sum (what send_and_sum returns)
    rng = np.random.default_rng(0)
    zero = {"w": np.zeros(200_000)}
    mean = noised_mean(zero, clip=0.5, noise_multiplier=2.0, denominator=4, rng=rng)["w"]
    assert mean.std() == pytest.approx(2.0 * 0.5 / 4, rel=0.01)
    assert abs(mean.mean()) < 0.01
    exact = noised_mean(total, clip=0.5, noise_multiplier=1e-12, denominator=3, rng=rng)["w"]
    np.testing.assert_allclose(exact, np.ones(4), rtol=1e-6)


def test_adaptive_clipping_finds_the_target_quantile_of_the_norms():
    """Norms uniform on [0, 4]: the 0.25 quantile is 1. The geometric update, fed the
    noised share under the clip (Andrew et al. 2021), settles there from far away."""
    rng = np.random.default_rng(1)
    clip = 10.0
    for _ in range(400):
        norms = rng.uniform(0, 4, size=100)
        below = float((norms <= clip).sum())
        fraction = noised_fraction_below(below, denominator=100, count_noise=100 / 20, rng=rng)
        clip = next_clip(clip, fraction, target_quantile=0.25, rate=0.2)
    assert clip == pytest.approx(1.0, abs=0.2)
    # one step by hand: b̄ = 0.75 over γ = 0.25 shrinks C by exp(-0.2 * 0.5)
    assert next_clip(2.0, 0.75, 0.25, 0.2) == pytest.approx(2.0 * np.exp(-0.1))


def test_adaptive_clipping_splits_the_noise_as_theorem_1():
    fixed = CentralDP(noise_multiplier=1.0)
    assert update_noise_multiplier(fixed, asked=100) == 1.0
    adaptive = CentralDP(noise_multiplier=1.0, target_quantile=0.5)  # σ_b = 100 / 20 = 5
    z_update = update_noise_multiplier(adaptive, asked=100)
    assert z_update**-2 + (2 * 5.0) ** -2 == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="clip-count noise"):
        update_noise_multiplier(adaptive, asked=10)  # σ_b = 0.5: 2σ_b = z


def test_central_epsilon_is_the_accountant_over_rounds():
    oracle = RDPAccountant()
    rates = [0.5, 0.5, 0.25]
    for q in rates:
        oracle.step(noise_multiplier=1.2, sample_rate=q)
    assert central_epsilon(1.2, rates, 1e-5) == pytest.approx(oracle.get_epsilon(1e-5), rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"noise_multiplier": 0.0}, "noise_multiplier"),
     ({"noise_multiplier": 1.0, "target_quantile": 1.5}, "target_quantile"),
     ({"noise_multiplier": 1.0, "clip": -1.0}, "clip")],
)  # fmt: skip
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        CentralDP(**kwargs)


def test_a_runs_metrics_are_the_last_rounds_epsilon_and_clip():
    history = [{"round": 1, "central_dp_epsilon": 0.5, "central_dp_clip": 1.0},
               {"round": 2, "central_dp_epsilon": 0.8, "central_dp_clip": 0.7}]  # fmt: skip
    assert central_report(history) == {"central_dp_epsilon": 0.8, "central_dp_clip": 0.7}
    assert central_report([{"round": 1}]) == {}
