"""``fedstruct run fedngm`` writes the issue's metrics, measured on held-out rows."""

import json

import numpy as np
import pytest

from fedstruct.errors import ConfigError
from fedstruct.runs import execute, runnable


def test_quick_synthetic_run_reports_every_metric(tmp_path):
    out = execute("fedngm", [dict(runnable("fedngm").quick), {"epochs": 8}], tmp_path)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m == pytest.approx(out.metrics)
    for key in (
        "worst_own_ratio",
        "public_wins",
        "public_clear_losses",
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
    chances = [v for k, v in m.items() if k.endswith("_public_win_probability")]
    assert len(chances) == 9 and all(0 <= c <= 1 for c in chances)  # 3 targets x 3 clients
    assert m["public_clear_losses"] == np.mean([c < 0.05 for c in chances])
    assert (tmp_path / "fedngm_fidelity.png").is_file()


def test_health_has_three_clients(tmp_path):
    with pytest.raises(ConfigError, match="exactly 3 clients"):
        execute("fedngm", [{"clients": 4}], tmp_path)


def test_the_quick_tabular_recipe_writes_tables_2_to_4(tmp_path):
    from fedstruct.runs.recipes import run_recipe

    run_recipe("fedngm-tabular", quick=True, out=tmp_path)
    rows = {r["name"]: r for r in json.loads((tmp_path / "tables" / "results.json").read_text())}
    assert len(rows) == 10  # 3 clients x (own, global) on their rows + 4 models on public
    own, glob = rows["client-1 rows: client-1 NGM"], rows["client-1 rows: global NGM"]
    assert set(own) == set(glob)
    assert "multiclass recall_macro" in own
    assert 0.5 < glob["binary auc"] <= 1.0
    targets = json.loads((tmp_path / "results.json").read_text())[0]
    assert {"worst_own_ratio", "public_wins", "stitch_gain_client-1"} <= set(targets)
    assert (tmp_path / "stitching_gain.png").is_file()
