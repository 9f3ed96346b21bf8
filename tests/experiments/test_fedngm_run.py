"""``fedstruct run fedngm`` writes the issue's metrics, measured on held-out rows."""

import json

import pytest

from fedstruct.errors import ConfigError
from fedstruct.experiments import execute, runnable


def test_quick_synthetic_run_reports_every_metric(tmp_path):
    out = execute("fedngm", [dict(runnable("fedngm").quick), {"epochs": 8}], tmp_path)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m == pytest.approx(out.metrics)
    for key in (
        "worst_own_ratio",
        "public_wins",
        "beats_mean",
        "fidelity_global",
        "graph_auc",
        "graph_aupr",
        "graph_precision",
        "graph_recall",
    ):
        assert key in m
    assert m["common_variables"] == 5  # 8 variables, one private to each of 3 clients
    assert [k for k in m if k.startswith("stitch_gain_client-") and k.count("_") == 2] == [
        "stitch_gain_client-1",
        "stitch_gain_client-2",
        "stitch_gain_client-3",
    ]
    assert 0 < m["fidelity_global"] < 1
    assert (tmp_path / "fedngm_fidelity.png").is_file()


def test_health_has_three_clients(tmp_path):
    with pytest.raises(ConfigError, match="exactly 3 clients"):
        execute("fedngm", [{"clients": 4}], tmp_path)
