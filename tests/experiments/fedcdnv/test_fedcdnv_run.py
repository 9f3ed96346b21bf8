import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import load_network
from fedstruct.errors import DataError
from fedstruct.experiments.fedcdnv import FedCDnvRun, VariableSubsetTask
from fedstruct.experiments.fedcdnv.federation import variable_subset_clients, variable_subsets
from fedstruct.methods.fedcdnv import FedCDnv

runner = CliRunner()


def test_run_fedcdnv_writes_the_metrics_the_issue_asks_for(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "run",
            "fedcdnv",
            "--network",
            "child",
            "--clients",
            "4",
            "--seed",
            "3",
            "--quiet",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    for key in (
        "f1_edge",
        "f1_orientation",
        "precision_edge",
        "recall_edge",
        "f1_arrowhead",
        "fdr_c",
        "fdr_dc",
        "fdr_nc",
        "fdr_dnc",
        "central_f1_edge",
    ):
        assert key in metrics
        assert 0.0 <= metrics[key] <= 1.0
    # 4 clients over child with 15% latent: a good skeleton, far from a guess
    assert metrics["f1_edge"] > 0.6
    assert metrics["n_variables"] == 17  # 20 variables, 3 latent
    assert (out / "fedcdnv_graph.png").stat().st_size > 20_000
    history = json.loads((out / "history.json").read_text())
    assert [h["round"] for h in history] == [1, 2]


def test_the_truth_is_the_pag_over_the_integrated_variables():
    setting = VariableSubsetTask(FedCDnvRun(network="alarm", seed=0))
    assert len(setting.split.latent) == round(0.15 * 37)
    assert setting.truth.names == setting.split.observed
    assert not setting.truth.is_dag()  # a PAG: circles and arrowheads
    sachs = VariableSubsetTask(FedCDnvRun(network="sachs-cytometry", seed=0))
    assert sachs.split.latent == () and sachs.truth.is_dag()  # scored against the DAG
    assert all(len(c) == 9 for c in sachs.split.clients)  # 9 of 11 proteins each


def test_fedcdnv_rounds_and_sources_are_checked():
    with pytest.raises(Exception, match="the protocol has 2 rounds"):
        FedCDnvRun(rounds=5)
    with pytest.raises(Exception, match="unknown fedcdnv network 'nope'"):
        FedCDnvRun(network="nope")


def test_a_constant_column_is_named_unless_excluded():
    net = load_network("asia")
    split = variable_subsets(net.names, 2, seed=0, overlap=1.0)
    clients = list(variable_subset_clients(net, split, seed=0, n_range=(200, 200)))
    rows = clients[0].rows.copy()
    rows["asia"] = 0
    clients[0] = type(clients[0])(clients[0].name, rows)
    with pytest.raises(DataError, match="variable 'asia' is constant"):
        FedCDnv().fit(clients)
    model = FedCDnv(constant_columns="exclude").fit(clients)
    assert "asia" not in model.local_graphs_[clients[0].name].names
    assert model.history_[0]["excluded_constant"] == 1


def test_continuous_data_given_to_g2_suggests_fisher_z():
    import numpy as np
    import pandas as pd

    from fedstruct.data import ClientData

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    clients = [ClientData("a", frame), ClientData("b", frame.copy())]
    with pytest.raises(DataError, match=r"(?i)fisher"):
        FedCDnv().fit(clients)
    assert FedCDnv(ci_test="fisherz").fit(clients).graph_.n_nodes == 3


def test_the_quick_sachs_recipe_writes_table_1(tmp_path):
    from fedstruct.experiments.recipes import run_recipe

    run_recipe("fedcdnv-sachs", quick=True, out=tmp_path)
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [r["name"] for r in rows] == [
        "FedCDnv",
        "FedCDnv-vote",
        "FCI-base",
        "centralised FCI (pooled data)",
    ]
    assert all(r["seeds"] == 3 for r in rows[:3])
    # the real data in the paper's regime: most true edges found, a good F1
    assert all(0.55 < r["f1_edge"] < 0.8 and r["recall_edge"] > 0.7 for r in rows[:3])
    assert "| FedCDnv |" in (tmp_path / "results.md").read_text()
