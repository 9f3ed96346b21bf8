"""The DP settings, declared once (``fedstruct.privacy.settings``) and shared by the configs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from fedstruct.errors import ConfigError
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.settings import CafeRun
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.settings import FedAvgRun
from fedstruct.privacy.settings import CentralDPSettings, DPSGDSettings
from fedstruct.runs.settings import apply_settings, describe_settings

SHARED = [f.name for f in dataclasses.fields(DPSGDSettings)] + [
    f.name for f in dataclasses.fields(CentralDPSettings)
]


@pytest.mark.parametrize("config", [FedAvgConfig, CafeConfig])
def test_a_config_declares_no_dp_setting_of_its_own(config):
    # each DP field is the shared class's Field object: same default, declared once
    shared = {
        f.name: f for cls in (DPSGDSettings, CentralDPSettings) for f in dataclasses.fields(cls)
    }
    fields = {f.name: f for f in dataclasses.fields(config)}
    assert all(fields[name] is shared[name] for name in SHARED)
    assert "dp_epsilon" not in config.__doc__ and "central_dp_clip\n" not in config.__doc__


@pytest.mark.parametrize("run", [FedAvgRun, CafeRun])
def test_help_documents_every_dp_setting_from_the_shared_docstrings(run):
    infos = {info.name: info for info in describe_settings(run)}
    alone = {info.name: info for cls in (DPSGDSettings, CentralDPSettings)
             for info in describe_settings(cls)}  # fmt: skip
    assert all(infos[name] == alone[name] and infos[name].doc for name in SHARED)
    assert infos["central_dp_delta"].default == 1e-5 and infos["dp_clip"].type == "float"


@pytest.mark.parametrize("run", [FedAvgRun, CafeRun])
def test_help_lists_the_methods_own_settings_before_the_shared_dp_ones(run):
    names = [info.name for info in describe_settings(run)]
    first_shared = min(names.index(name) for name in SHARED)
    assert names.index("rounds") < first_shared
    assert all(name in SHARED for name in names[first_shared:])


def test_the_dp_settings_are_checked_whatever_config_holds_them():
    with pytest.raises(ConfigError, match=r"DP-SGD dp_clip must be .*> 0.*got 0"):
        FedAvgConfig(dp_clip=0)
    with pytest.raises(ConfigError, match=r"DP-SGD dp_delta must be"):
        CafeConfig(algorithm="fedavg", dp_delta=1.5)
    with pytest.raises(ConfigError, match=r"central DP clip must be"):
        apply_settings(FedAvgRun(), {"central_dp_noise": 1, "central_dp_clip": -1}, method="fedavg")
    with pytest.raises(ConfigError, match="central_dp_clip = -1 has no effect without"):
        CafeConfig(central_dp_clip=-1)  # issue 49: was accepted and ignored


def test_a_new_config_gains_the_settings_and_their_checks_by_inheriting():
    @dataclass(frozen=True)
    class Toy(CentralDPSettings, DPSGDSettings):
        """A method's config: no DP field of its own."""

        rounds: int = 3

    toy = Toy(dp_epsilon=2.0, central_dp_noise=1.0)
    assert toy.dp_budget(n_rows=100).delta == pytest.approx(0.01)  # δ = 1 / n_k
    assert toy.central_dp().noise_multiplier == 1.0
    with pytest.raises(ConfigError, match="central DP noise_multiplier"):
        Toy(central_dp_noise=0.0)
    with pytest.raises(ConfigError, match="DP-SGD dp_noise_multiplier"):
        Toy(dp_noise_multiplier=-1.0)


def test_the_methods_own_refusals_come_first_in_their_words():
    with pytest.raises(ConfigError, match="cafe algorithm 'fedproto' cannot train with DP-SGD"):
        CafeConfig(algorithm="fedproto", dp_epsilon=1.0, dp_clip=-1)  # before the clip check
    with pytest.raises(ConfigError, match=r"fedavg central DP \(central_dp_noise\).*late update"):
        FedAvgConfig(central_dp_noise=1.0, staleness_exponent=0.5)
