import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app

runner = CliRunner()
SMALL = [
    "--network",
    "asia",
    "--clients",
    "3",
    "--rounds",
    "3",
    "--set",
    "samples=1500",
    "--set",
    "test_samples=500",
    "--quiet",
]


def invoke(*args):
    return runner.invoke(app, list(args))


def test_run_fedavg_writes_the_contract(tmp_path):
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--seed", "4", "--out", str(out))
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert config["method"] == "fedavg"
    assert config["settings"]["clients"] == 3 and config["settings"]["seed"] == 4
    assert config["settings"]["samples"] == 1500
    assert all(isinstance(v, (int, float)) for v in metrics.values())
    # asia's dysp: the majority class is ~56%; the network's structure allows ~84%.
    assert metrics["test_accuracy"] > metrics["majority_accuracy"] + 0.15
    assert metrics["rounds"] == 3
    assert (out / "fedavg_rounds.png").stat().st_size > 10_000
    assert len(json.loads((out / "history.json").read_text())) == 3


def test_resume_reaches_the_same_metrics(tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    args = [*SMALL, "--set", "dropout=0.3", "--set", "report_rate=0.5"]
    assert invoke("run", "fedavg", *args, "--out", str(full)).exit_code == 0
    assert invoke("run", "fedavg", *args, "--out", str(part), "--stop-after", "1").exit_code == 0
    assert json.loads((part / "history.json").read_text())[-1]["round"] == 1
    result = invoke("run", "fedavg", "--resume", str(part), "--quiet")
    assert result.exit_code == 0, result.output
    for name in ("metrics.json", "history.json"):
        assert json.loads((part / name).read_text()) == json.loads((full / name).read_text())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "fedavg", "--network", "nosuch", "--out", "X"],
            "unknown network 'nosuch'; valid networks: alarm, alarm3, andes, asia, barley, cancer",
        ),
        (
            ["run", "fedavg", "--set", "nosuch=1", "--out", "X"],
            "unknown fedavg setting 'nosuch'; valid settings:",
        ),
        (
            ["run", "fedavg", "--set", "rounds=many", "--out", "X"],
            "fedavg setting 'rounds' must be int, got 'many'",
        ),
        (["run", "fedavg", "--clients", "0", "--out", "X"], "clients must be an integer >= 1"),
        (["run", "nomethod", "--out", "X"], "unknown method 'nomethod'; valid methods: cafe, fcm,"),
        (["run", "fedngm", "--network", "alarm", "--out", "X"], "No such option '--network'"),
        (["run", "fedngm", "--set", "network=alarm", "--out", "X"], "unknown fedngm setting"),
        (["run", "cafe", "--set", "network=asia", "--out", "X"], "unknown cafe setting 'network'"),
        (["run", "fedavg", "--set", "samples=-5", "--out", "X"], "-5"),
        (["run", "fedavg", "--config", "missing.yaml", "--out", "X"], "config file missing.yaml"),
        (["reproduce", "nosuch"], "unknown recipe 'nosuch'"),
        (["reproduce", "discover-then-fcm", "--jobs", "0"], "jobs is 0; give an integer >= 1"),
        (["reproduce", "fcm-dp", "--jobs", "2"], "recipe 'fcm-dp' takes no --jobs option"),
        (
            ["reproduce", "aggregator-robustness", "--rate", "1.5"],
            "rate is 1.5; give a number in [0, 1]",
        ),
        (
            ["reproduce", "discover-then-fcm", "--rate", "0.2"],
            "takes no --rate option (it takes: --jobs)",
        ),
        (
            ["run", "fcm", "--rounds", "1", "--graph", "nowhere.json", "--out", "X"],
            "graph file 'nowhere.json' does not exist; check the path",
        ),
        (
            ["run", "fcm", "--regime", "local", "--graph", "g.json", "--out", "X"],
            "--graph replaces the federation's aggregated graph; regime 'local'",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert message in text
    assert "Traceback" not in result.output


def test_help_everywhere():
    for args in ([], ["run"], ["reproduce"], ["datasets"], ["demo"]):
        result = invoke(*args, "--help")
        assert result.exit_code == 0
        assert "Usage" in result.output


def test_run_method_help_lists_that_methods_settings():
    result = invoke("run", "fcm", "--help")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    # F-CMs' own options and settings, with type, default and their documentation
    assert "--model TEXT" in text and "--regime TEXT" in text and "--dataset" not in text
    assert "concept_weight (float) = 0.8 γ of eq. (2), the concept-loss weight (0.8)." in text
    assert "initial_clients (int) = 10 Clients that take part from round 1" in text
    cafe = " ".join(invoke("run", "cafe", "--help").output.split())
    assert "--dirichlet FLOAT" in cafe and "--cf FLOAT" in cafe and "--network" not in cafe
    assert "skew_alpha (float) = 0.1" in cafe


def test_every_setting_of_every_method_is_documented():
    from fedstruct.experiments import runnable, runnable_names
    from fedstruct.experiments.settings import describe_settings

    for name in runnable_names():
        undocumented = [s.name for s in describe_settings(runnable(name).settings) if not s.doc]
        assert undocumented == [], f"{name}: {undocumented}"


def test_datasets_lists_every_network():
    result = invoke("datasets")
    assert result.exit_code == 0
    for name in ("asia", "sachs", "child3", "alarm3", "hailfinder", "water"):
        assert name in result.output


def test_console_script_runs_as_a_subprocess(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fedstruct.cli",
            "run",
            "fedavg",
            "--network",
            "nosuch",
            "--out",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "valid networks" in result.stderr


def test_a_run_with_many_metrics_shows_the_federation_s_only(tmp_path):
    from fedstruct.cli import _headline

    (tmp_path / "config.json").write_text(json.dumps({"method": "fedngm", "settings": {}}))
    metrics = {"common_variables": 5.0, "worst_own_ratio": 0.9}
    for k in range(1, 4):  # FedNGM's defaults: client-1 .. client-3
        metrics.update({f"continuous_global_client-{k}_{m}": 1.0 for m in range(12)})
    shown = _headline(metrics, tmp_path)
    assert shown == {"common_variables": 5.0, "worst_own_ratio": 0.9}
    few = {"edges": 3.0, "client-1_rows": 10.0}
    assert _headline(few, tmp_path) == few  # a short list is shown whole


def test_a_discovered_graph_feeds_fcm_by_its_run_folder(tmp_path):
    """fedcdnv's run folder as fcm's --graph: the concept model is built on that PAG's
    DAG member over the concepts the federation has."""
    from fedstruct.graphs.io import read_graph
    from fedstruct.graphs.pag import dag_member

    found = tmp_path / "found"
    args = ["--network", "asia", "--clients", "3", "--quiet"]
    assert invoke("run", "fedcdnv", *args, "--out", str(found)).exit_code == 0
    out = tmp_path / "fcm"
    result = invoke("run", "fcm", "--network", "asia", "--rounds", "2", "--graph", str(found),
                    "--set", "initial_clients=20", "--quiet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = dag_member(read_graph(found / "graph.json"))
    used = read_graph(out / "graph.json")
    both = [v for v in used.names if v in expected.names]
    assert expected.restrict(both).n_edges == used.n_edges > 0  # nothing added or lost
    for edge in used.edges():
        assert expected.edge(edge.a, edge.b) == edge
    for v in set(used.names) - set(both):  # a variable the discovery did not see
        assert not used.neighbors(v)
