"""The flower-sim backend gives exactly the local result (Ray; ~10 s per run)."""

import json

import numpy as np
import pytest

pytest.importorskip("flwr")

from fedstruct.data import horizontal, load_network
from fedstruct.errors import ConfigError
from fedstruct.experiments import execute, runnable, runnable_names
from fedstruct.fl import Participation, get_backend
from fedstruct.methods.fedavg import FedAvg

pytestmark = pytest.mark.slow


def test_flower_sim_equals_local_under_partial_participation():
    net = load_network("asia")
    clients = horizontal(net.sample(3000, seed=0), 3, seed=0)
    test = net.sample(1000, seed=1)
    part = Participation(dropout=0.2, report_rate=0.6)
    kw = dict(rounds=3, seed=3, participation=part, staleness_exponent=0.5)
    local = FedAvg("dysp", net.cardinalities, **kw).fit(clients, test=test)
    sim = FedAvg("dysp", net.cardinalities, **kw).fit(clients, test=test, backend="flower-sim")
    assert sim.history_ == local.history_
    for name, value in local.params_.items():
        np.testing.assert_array_equal(sim.params_[name], value)
    assert sim.traffic_.summary() == local.traffic_.summary()
    # the participation model really acted: someone dropped or reported late
    assert any(h["clients_answered"] < 3 for h in local.history_)
    assert any(h["late_merged"] > 0 for h in local.history_)


@pytest.mark.parametrize("method", runnable_names())
def test_every_method_gives_the_local_metrics_on_flower_sim(method, tmp_path):
    """Backend equivalence for each registered method, on its quick settings."""
    quick = dict(runnable(method).quick)
    local = execute(method, [quick], tmp_path / "local")
    sim = execute(method, [quick], tmp_path / "sim", backend="flower-sim")
    assert sim.metrics == pytest.approx(local.metrics, rel=1e-6, abs=1e-9)
    assert sim.metrics.keys() == local.metrics.keys()
    assert json.loads((tmp_path / "sim" / "config.json").read_text())["backend"] == "flower-sim"


def test_a_run_on_site_files_gives_the_local_metrics_on_flower_sim(tmp_path):
    net = load_network("asia")
    rows = net.sample(1500, seed=0)
    sites = []
    for k, part in enumerate(np.array_split(np.arange(1500), 3)):
        path = tmp_path / f"site-{k}.csv"
        rows.iloc[part].to_csv(path, index=False)
        sites.append(str(path))
    settings = {"sites": sites, "target": "dysp", "test_fraction": 0.2, "rounds": 3}
    local = execute("fedavg", [settings], tmp_path / "local")
    sim = execute("fedavg", [settings], tmp_path / "sim", backend="flower-sim")
    assert sim.metrics == pytest.approx(local.metrics, rel=1e-6, abs=1e-9)
    assert local.metrics["test_accuracy"] > 0.6


def test_flower_is_not_a_python_level_backend():
    with pytest.raises(ConfigError, match="runs on a SuperLink"):
        get_backend("flower")
    with pytest.raises(
        ConfigError, match="unknown backend 'ray'; valid backends: flower, flower-sim, local"
    ):
        get_backend("ray")
