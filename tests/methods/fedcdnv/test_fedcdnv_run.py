import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import load_network
from fedstruct.errors import DataError
from fedstruct.methods.fedcdnv import FedCDnv, FedCDnvRun, VariableSubsetTask
from fedstruct.methods.fedcdnv.sources import variable_subset_clients, variable_subsets

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
    for client in ("client-1", "client-4"):  # each site alone beside the federation
        assert 0.0 <= metrics[f"alone_f1_edge_{client}"] <= 1.0
        assert 0.0 <= metrics[f"federated_f1_edge_{client}"] <= 1.0
    assert 0 <= metrics["sites_ahead_of_federation"] <= 4
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


def test_continuous_data_given_to_g2_suggests_auto():
    import numpy as np
    import pandas as pd

    from fedstruct.data import ClientData

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    clients = [ClientData("a", frame), ClientData("b", frame.copy())]
    with pytest.raises(DataError, match=r"let the kinds choose the test \(ci_test='auto'"):
        FedCDnv(ci_test="g2").fit(clients)
    model = FedCDnv().fit(clients)  # "auto": Fisher-z on numbers
    assert model.graph_.n_nodes == 3
    assert {e["ci_test"] for e in model.site_tests_.values()} == {"fisherz"}


def test_the_quick_sachs_recipe_writes_table_1(tmp_path):
    from fedstruct.runs.recipes import run_recipe

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


def breast_cancer_sites(folder, missing=0.05, seed=0):
    """scikit-learn's breast-cancer table (7 measurements, the diagnosis and a
    categorical size class made from the mean area) in 4 sites, with values missing
    completely at random."""
    import numpy as np
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.iloc[:, [0, 1, 2, 4, 5, 6, 7]].copy()
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    frame["diagnosis"] = np.where(data.target == 0, "malignant", "benign")
    frame["size"] = pd.cut(data.frame["mean area"], [0, 400, 700, 1e9],
                           labels=["small", "medium", "large"]).astype(str)  # fmt: skip
    rng = np.random.default_rng(seed)
    frame = frame.mask(rng.random(frame.shape) < missing)
    paths = []
    for k, part in enumerate(np.array_split(rng.permutation(len(frame)), 4)):
        path = folder / f"h{k + 1}.csv"
        frame.iloc[part].to_csv(path, index=False)
        paths.append(str(path))
    return frame, paths


def test_fedcdnv_runs_on_a_mixed_table_with_missing_values_with_no_settings(tmp_path):
    """Issue 31: the schema's kinds choose the mixed test (each site on its own rows:
    ~140 rows, below cg_min_rows, so the degenerate-Gaussian test), missing values are
    deleted test-wise (no row dropped), and metrics.json says both, per site."""
    _, paths = breast_cancer_sites(tmp_path)
    args = [a for p in paths for a in ("--site", p)]
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "fedcdnv", *args, "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ci_test_dg"] == 4.0 and "ci_test_cg" not in metrics
    assert metrics["n_variables"] == 9.0
    for k in range(1, 5):
        site = f"h{k}"
        assert metrics[f"dropped_rows_{site}"] == 0.0
        assert metrics[f"ci_test_dg_{site}"] == 1.0
        rows = metrics[f"rows_{site}"]
        # each test on the rows complete on its variables: fewer than the site's rows
        # (about 0.95^5 of them for a test of 5 variables), more than drop-rows keeps
        assert rows * 0.5 < metrics[f"test_rows_min_{site}"] < metrics[f"test_rows_median_{site}"]
        assert metrics[f"test_rows_median_{site}"] < rows
        assert f"skipped_tests_{site}" in metrics
    dropped = tmp_path / "dropped"
    result = runner.invoke(app, ["run", "fedcdnv", *args, "--quiet", "--out", str(dropped),
                                 "--set", "missing=drop-rows"])  # fmt: skip
    assert result.exit_code == 0, result.output
    kept = json.loads((dropped / "metrics.json").read_text())
    assert kept["rows_h1"] < metrics["test_rows_min_h1"]  # list-wise deletion keeps fewer
    assert kept["test_rows_min_h1"] == kept["rows_h1"]


def test_on_codes_auto_is_g2_and_every_pvalue_is_unchanged():
    net = load_network("alarm")
    split = variable_subsets(net.names, 3, seed=0, overlap=0.6)
    clients = list(variable_subset_clients(net, split, seed=0, n_range=(300, 300)))
    auto, g2 = FedCDnv().fit(clients), FedCDnv(ci_test="g2").fit(clients)
    assert {e["ci_test"] for e in auto.site_tests_.values()} == {"g2"}
    assert auto.graph_ == g2.graph_ and auto.history_ == g2.history_
    assert (auto.status_.to_numpy() == g2.status_.to_numpy()).all()


def test_site_test_reports_become_metrics_and_a_warning_when_all_were_skipped():
    from fedstruct.errors import FedstructWarning
    from fedstruct.methods.fedcdnv.run import test_metrics, warn_skipped

    tests = {
        "h1": {
            "ci_test": "dg",
            "rows_min": 80.0,
            "rows_median": 95.0,
            "skipped": 2.0,
            "total": 40.0,
        },
        "h2": {"ci_test": "dg", "rows_min": 3.0, "rows_median": 4.0, "skipped": 6.0, "total": 6.0},
    }
    metrics = test_metrics(tests)
    assert metrics["ci_test_dg"] == 2.0 and metrics["test_rows_min_h1"] == 80.0
    assert metrics["ci_test_dg_h1"] == metrics["ci_test_dg_h2"] == 1.0
    assert metrics["test_rows_median_h2"] == 4.0 and metrics["skipped_tests_h2"] == 6.0
    assert not any("total" in key for key in metrics)
    with pytest.warns(FedstructWarning, match=r"site 'h2': all 6 CI tests were skipped") as seen:
        warn_skipped(tests)
    assert len(seen) == 1


def test_a_site_that_beats_the_federation_is_scored_and_named():
    """Issue 49: a federation scored below its largest site alone (the merge dropped true
    edges that site had found); each site's own adjacency F1 now stands beside the
    federation's on the same variables, and the site ahead is named in a warning."""
    from fedstruct.errors import FedstructWarning
    from fedstruct.graphs import Graph
    from fedstruct.methods.fedcdnv.run import site_scores, warn_sites_ahead

    names = ("a", "b", "c", "d")
    truth = Graph.from_edges(names, [("a", "b"), ("b", "c"), ("c", "d")])
    fed = Graph.from_edges(names, [("a", "b"), ("c", "d")])  # b - c dropped by the merge
    local = {
        "big": Graph.from_edges(("a", "b", "c"), [("a", "b"), ("b", "c")]),  # right
        "small": Graph.from_edges(("c", "d"), [("c", "d")]),
    }
    scores = site_scores(truth, fed, local)
    assert scores["alone_f1_edge_big"] == 1.0
    assert scores["federated_f1_edge_big"] == pytest.approx(2 / 3)  # 1 of 2 true edges
    assert scores["alone_f1_edge_small"] == scores["federated_f1_edge_small"] == 1.0
    assert scores["sites_ahead_of_federation"] == 1.0
    with pytest.warns(FedstructWarning, match=r"site 'big' alone scores adjacency F1 1\.000") as w:
        warn_sites_ahead(scores)
    assert len(w) == 1  # 'small' ties the federation: no warning
