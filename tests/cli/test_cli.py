import json
import subprocess
import sys
from pathlib import Path

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
            ["run", "fedavg", "--knowledge", "k.json", "--out", "X"],
            "fedavg learns no graph, so --knowledge k.json has nothing to act on: drop it",
        ),
        (
            ["run", "cafe", "--knowledge", "k.json", "--out", "X"],
            "cafe learns no graph, so --knowledge k.json has nothing to act on: drop it",
        ),
        (
            ["run", "fcm", "--rounds", "1", "--graph", "nowhere.json", "--out", "X"],
            "/nowhere.json' does not exist; check the path",  # made absolute (issue 49)
        ),
        (
            ["run", "fcm", "--regime", "local", "--graph", "g.json", "--out", "X"],
            "--graph replaces the federation's aggregated graph; regime 'local'",
        ),
        # issue 29, item 7: seeds numpy or torch cannot take
        (["run", "fedavg", "--seed", "-1", "--out", "X"],
         "seed must be an integer in [0, 4294967295], got -1"),
        (["run", "fedcd", "--seed", str(2**64), "--out", "X"],
         f"seed must be an integer in [0, 4294967295], got {2**64}"),
        (["sample", "X", "-n", "5", "--seed", "-1", "--out", "s.csv"],
         "--seed must be an integer in [0, 4294967295], got -1"),
        (["sample", "X", "-n", "5", "--seed", str(2**63 + 1), "--out", "s.csv"],
         f"--seed must be an integer in [0, 4294967295], got {2**63 + 1}"),
        # issue 29, item 8: options that were accepted and ignored
        (["run", "fedavg", "--stop-after", "0", "--out", "X"],
         "--stop-after 0: give the round to stop after, a number >= 1"),
        (["run", "fedavg", "--stop-after", "-3", "--out", "X"], "--stop-after -3: give the round"),
        (["query", "X", "--target", "a", "--given", "b=1", "--given", "b=2"],
         "--given names 'b' twice (b=1 and b=2); give each variable once"),
        (["run", "fedcdnv", "--truth", "t.json", "--out", "X"],
         "--truth t.json scores a graph learned from your own sites' files (--site/--sites); "
         "a run on built-in data is scored against the data's own graph: drop --truth"),
        (["run", "fedavg", "--truth", "t.json", "--out", "X"],
         "fedavg learns no graph, so --truth t.json has nothing to score: drop it"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert message in text
    assert "Traceback" not in result.output


def test_bad_seeds_and_stop_after_leave_no_folder(tmp_path):
    """Checked with the settings, before the run folder is made."""
    for args in (["--seed", "-1"], ["--seed", str(2**64)], ["--stop-after", "0"]):
        out = tmp_path / "run"
        assert invoke("run", "fedavg", *args, "--out", str(out)).exit_code == 2
        assert not out.exists()


def test_version():
    from fedstruct import __version__

    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"fedstruct {__version__}"


def test_a_run_in_which_no_client_answered_fails_with_that_reason(tmp_path):
    """issue 29, item 8: --set dropout=1.0 said "finished" though nothing was learned."""
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--set", "dropout=1.0", "--out", str(out))
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "no client answered in any of the 3 rounds, so nothing was learned" in text
    assert "lower --set dropout" in text and "Traceback" not in result.output
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "failed" and "NoAnswerError: no client answered" in record["error"]
    # a round without answers among rounds with some is partial participation, not a failure
    some = tmp_path / "some"  # seed 0, dropout 0.5: 0, 1 and 0 of the 3 clients answer
    result = invoke("run", "fedavg", *SMALL, "--set", "dropout=0.5", "--out", str(some))
    assert result.exit_code == 0, result.output
    answered = [h["clients_answered"] for h in json.loads((some / "history.json").read_text())]
    assert 0 in answered and sum(answered) > 0


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


def test_every_setting_has_its_own_help_listing_its_choices():
    """issue 29, item 11: FedNGM's graph_method listed no choices, graph_max_rows showed
    glasso_cv's text, FED-CD's model_steps and graph_steps shared one. Every setting of
    a method has a text of its own, and a setting with a fixed set of values names them
    all (the OneOf constraints of the modules its settings come from)."""
    import sys

    from fedstruct.constraints import Constraint, OneOf
    from fedstruct.runs import runnable, runnable_names
    from fedstruct.runs.settings import describe_settings

    for name in runnable_names():
        cls = runnable(name).settings
        infos = describe_settings(cls)
        texts = [s.doc for s in infos]
        shared = sorted({s.name for s in infos if texts.count(s.doc) > 1})
        assert shared == [], f"{name}: settings sharing one help text: {shared}"
        choices: dict[str, tuple] = {}
        for klass in cls.__mro__:
            for table in vars(sys.modules[klass.__module__]).values():
                if (
                    isinstance(table, dict)
                    and table
                    and all(isinstance(c, Constraint) for c in table.values())
                ):
                    choices.update({k: c.options for k, c in table.items() if isinstance(c, OneOf)})
        for info in infos:
            unnamed = [o for o in choices.get(info.name, ()) if str(o) not in info.doc]
            assert unnamed == [], f"{name} {info.name}: help names no {unnamed}: {info.doc}"
    ngm = " ".join(invoke("run", "fedngm", "--help").output.split())
    assert "graph_method (str) = 'glasso' How a client recovers its local graph" in ngm
    assert "graph_max_rows (int) = 10000 The most rows" in ngm


def test_every_setting_of_every_method_is_documented():
    from fedstruct.runs import runnable, runnable_names
    from fedstruct.runs.settings import describe_settings

    for name in runnable_names():
        undocumented = [s.name for s in describe_settings(runnable(name).settings) if not s.doc]
        assert undocumented == [], f"{name}: {undocumented}"


def test_datasets_lists_every_network():
    result = invoke("datasets")
    assert result.exit_code == 0
    for name in ("asia", "sachs", "child3", "alarm3", "hailfinder", "water"):
        assert name in result.output
    rows = {line.split("│")[1].strip() for line in result.output.splitlines() if "│" in line}
    assert {"diabetes", "pigs", "link", "munin"} <= rows  # issue 51: the large networks


@pytest.mark.deploy
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
    from fedstruct.cli.app import _headline

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


# ------------------------------------------------- runs on a user's files (issue 29)
def _asia_sites(folder, rows=200, n_sites=3):
    """Asia rows at ``n_sites`` sites, states as text; the network and the files."""
    import numpy as np
    import pandas as pd

    from fedstruct.data import load_network

    network = load_network("asia")
    codes = network.sample(rows * n_sites, seed=0)
    frame = pd.DataFrame({v: np.array(network.states[v])[codes[v]] for v in network.names})
    paths = []
    for k in range(n_sites):
        path = folder / f"site-{k + 1}.csv"
        frame.iloc[k * rows : (k + 1) * rows].to_csv(path, index=False)
        paths.append(path)
    return network, paths


def _site_args(paths):
    return [a for p in paths for a in ("--site", str(p))]


@pytest.fixture(scope="module")
def fedavg_on_files(tmp_path_factory):
    """A FedAvg run on three sites' files that hold a quarter of their rows out."""
    root = tmp_path_factory.mktemp("files")
    _, paths = _asia_sites(root)
    out = root / "run"
    args = ["--set", "target=dysp", "--set", "test_fraction=0.25", "--rounds", "3", "--quiet"]
    result = invoke("run", "fedavg", *_site_args(paths), *args, "--out", str(out))
    assert result.exit_code == 0, result.output
    return root, out, paths


def test_fedavg_on_files_scores_held_out_rows_every_round(fedavg_on_files):
    """issue 29, item 11: the per-round plot shows a held-out metric beside the loss."""
    _, out, _ = fedavg_on_files
    history = json.loads((out / "history.json").read_text())
    assert [h["round"] for h in history] == [1, 2, 3]
    assert all(0.0 <= h["client_accuracy"] <= 1.0 and "train_loss" in h for h in history)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_accuracy"] == history[-1]["client_accuracy"]
    assert (out / "fedavg_rounds.png").stat().st_size > 10_000


def test_stop_after_on_files_stops(tmp_path):
    """issue 29, item 10: `--stop-after 7` on a FedAvg run from files was a KeyError."""
    _, paths = _asia_sites(tmp_path, rows=100)
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *_site_args(paths), "--set", "target=dysp", "--rounds", "4",
                    "--stop-after", "2", "--quiet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text())["status"] == "stopped"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["rounds"] == 2 and "training_accuracy" not in metrics  # scored at the end
    result = invoke("run", "fedavg", "--resume", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    assert "training_accuracy" in json.loads((out / "metrics.json").read_text())


def test_truth_naming_variables_no_site_has_is_refused(tmp_path):
    """issue 29, item 8: such a --truth was aligned with the learned graph in silence."""
    from fedstruct.graphs import write_graph

    network, paths = _asia_sites(tmp_path, rows=100)
    truth = tmp_path / "truth.json"
    write_graph(network.graph, truth)
    truth.write_text(truth.read_text().replace('"dysp"', '"dyspnoea"'))
    out = tmp_path / "run"
    result = invoke("run", "fedcdnv", *_site_args(paths), "--truth", str(truth), "--quiet",
                    "--out", str(out))  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"--truth {truth} names variables no site has: ['dyspnoea']" in text
    assert "give a graph over these names" in text
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    assert not (out / "metrics.json").exists()  # refused before round 1


def test_show_summarises_a_run_without_a_graph(fedavg_on_files):
    """issue 29, item 11: `show` on FedAvg said only that it learned no graph."""
    _, out, _ = fedavg_on_files
    result = invoke("show", str(out))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"{out}: a fedavg run that learned no graph (a classifier)" in text
    assert "status: finished in" in text
    assert "settings: rounds=3," in text and "target=dysp" in text and "test_fraction=0.25" in text
    assert "data: 3 sites' own files: site-1 (200 rows), site-2 (200 rows), site-3" in text
    assert "model: predicts dysp from 7 columns (asia, tub," in text
    assert "figures: fedavg_rounds.png" in text
    assert "test_accuracy" in text and "bytes_down" in text  # the metrics table


def test_predict_never_writes_onto_its_input_or_an_existing_file(fedavg_on_files):
    """issue 29, item 8: `predict --out` overwrote any file, the --data input included."""
    root, out, paths = fedavg_on_files
    data = paths[0]
    before = data.read_bytes()
    for extra in ([], ["--overwrite"]):  # never onto the input
        result = invoke("predict", str(out), "--data", str(data), "--out", str(data), *extra)
        assert result.exit_code == 2
        assert f"--out {data} is the --data file; write to another file" in " ".join(
            result.output.split()
        )
    assert data.read_bytes() == before
    result = invoke("predict", str(out), "--data", str(data), "--out", str(out / "model.json"),
                    "--overwrite")  # fmt: skip
    assert result.exit_code == 2 and "is a file of the run in" in result.output
    preds = root / "preds.csv"
    preds.write_text("keep me\n")
    result = invoke("predict", str(out), "--data", str(data), "--out", str(preds))
    assert result.exit_code == 2
    assert "exists; choose another file, or add --overwrite" in " ".join(result.output.split())
    assert preds.read_text() == "keep me\n"
    result = invoke("predict", str(out), "--data", str(data), "--out", str(preds), "--overwrite")
    assert result.exit_code == 0, result.output
    assert preds.read_text().startswith("dysp,")


def test_predict_with_an_unseen_level_says_what_to_do(fedavg_on_files):
    """issue 29, item 10: the message spoke of building "the schema from every site's file"."""
    import pandas as pd

    root, out, paths = fedavg_on_files
    frame = pd.read_csv(paths[0]).head(5)
    frame.loc[0, "smoke"] = "sometimes"
    frame.to_csv(root / "new.csv", index=False)
    result = invoke("predict", str(out), "--data", str(root / "new.csv"),
                    "--out", str(root / "new-preds.csv"))  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "column 'smoke' of" in text and "has levels ['sometimes'] that the run's sites" in text
    assert "drop or recode those rows" in text and "every site's file" not in text


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    """A FedCDnv run (it learns a graph) on its small default federation."""
    from fedstruct.runs.contract import execute, runnable

    out = tmp_path_factory.mktemp("graph") / "run"
    execute("fedcdnv", [runnable("fedcdnv").quick], out)
    return out


def one_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    return " ".join(result.output.split())


def test_show_never_writes_onto_an_existing_picture_without_overwrite(graph_run, tmp_path):
    """issue 49, item 1: `show --picture report.pdf` overwrote the user's file."""
    report = tmp_path / "report.pdf"
    report.write_bytes(b"the user's report")
    text = one_line(invoke("show", str(graph_run), "--picture", str(report)))
    assert f"--picture {report} exists; choose another file, or add --overwrite" in text
    assert report.read_bytes() == b"the user's report"
    result = invoke("show", str(graph_run), "--picture", str(report), "--overwrite")
    assert result.exit_code == 0, result.output
    assert report.read_bytes().startswith(b"%PDF")  # drawn in the format its suffix names
    for name in ("graph.png", "definite.png"):  # the run's own pictures are redrawn in place
        assert invoke("show", str(graph_run), "--graph", name[:-4]).exit_code == 0
    other = graph_run / "definite.png"  # never another file of the run, even with --overwrite
    before = other.read_bytes()
    text = one_line(invoke("show", str(graph_run), "--picture", str(other), "--overwrite"))
    assert f"--picture {other} is a file of the run in" in text and other.read_bytes() == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("x.csv", "'.csv' is not an image format; name an image file ending in one of .png, .pdf"),
        ("x.safetensors", "'.safetensors' is not an image format"),
        ("picture", "has no suffix"),
        ("missing/dir/x.png", "missing/dir does not exist; create it, or choose a file in"),
    ],
)
def test_show_refuses_a_picture_that_is_no_image_or_has_no_folder(
    graph_run, tmp_path, name, message
):
    """issue 49, item 1: a non-image suffix was matplotlib's traceback, and a missing
    folder was created."""
    text = one_line(invoke("show", str(graph_run), "--picture", str(tmp_path / name)))
    assert message in text
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


def test_every_picture_format_is_one_matplotlib_writes():
    from matplotlib.figure import Figure

    from fedstruct.drawing.picture import PICTURE_FORMATS

    assert set(PICTURE_FORMATS) <= set(Figure().canvas.get_supported_filetypes())


def test_the_legend_says_what_fci_can_claim_of_a_bidirected_edge():
    """issue 49, item 9: `<->` was explained as "neither causes the other" (on ecoli70,
    with no hidden variable, every such edge was a direct cause in the truth)."""
    from fedstruct.cli.results import _mark_legend
    from fedstruct.graphs import Graph

    pag = Graph.from_edges(["A", "B", "C"], ["A <-> B", "B o-> C"])
    legend = " ".join(_mark_legend(pag.edges()))
    assert "A <-> B: neither is claimed to cause the other; FCI's reading is a hidden " in legend
    assert "a test error on finite samples gives the same mark" in legend
    assert "neither causes the other" not in legend


def test_show_calls_a_regression_model_a_regressor(tmp_path):
    """issue 49, item 9: `show` called FedAvg's regression "a classifier"."""
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples" / "diabetes"
    sites = [a for k in (1, 2, 3, 4) for a in ("--site", str(examples / f"hospital-{k}.csv"))]
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *sites, "--set", "target=progression", "--rounds", "1",
                    "--quiet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(invoke("show", str(out)).output.split())
    assert f"{out}: a fedavg run that learned no graph (a regressor)" in text


def test_each_overwrite_option_says_what_it_replaces():
    """The output files' --overwrite and the keys' --overwrite are two options: one
    alias of the same name made every --overwrite read "see docs/deploy.md first"."""
    predict = runner.invoke(app, ["predict", "--help"], terminal_width=200).output
    keys = runner.invoke(app, ["flower", "node-key", "--help"], terminal_width=200).output
    assert "Replace --out if it exists" in predict and "deploy.md" not in predict
    assert "Replace files that exist (see docs/deploy.md first)" in keys


TOY_LAUNCHER = """
from fedstruct.errors import ConfigError
from fedstruct.runs.launch import LauncherOption

OPTIONS = (LauncherOption("queue", "queue", "str", "short", "the batch queue to submit to."),)


class ToyLauncher:
    recorded = ("toy",)

    @classmethod
    def from_options(cls, options):
        raise ConfigError(f"toy launcher read queue={options['queue']}")
"""


def test_a_launcher_declares_its_own_options_and_the_run_command_mounts_them(tmp_path, monkeypatch):
    """issue 52: a new launcher adds its options without editing the command line; the
    run command hands them back to that launcher by name."""
    from fedstruct.runs import launch

    (tmp_path / "toy_launcher.py").write_text(TOY_LAUNCHER)
    monkeypatch.syspath_prepend(str(tmp_path))
    toy = launch.Submitting("toy_launcher:ToyLauncher", "toy_launcher:OPTIONS")
    monkeypatch.setitem(launch.SUBMITTING, "toy", toy)
    shown = runner.invoke(app, ["run", "fedavg", "--help"], terminal_width=200)
    assert "--queue" in shown.output and "--backend toy: the batch queue" in shown.output
    assert "--superlink" in shown.output  # Flower's, declared by its launcher
    out = tmp_path / "run"
    args = ["run", "fedavg", "--out", str(out), "--backend", "toy", "--queue", "long"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "toy launcher read queue=long" in result.output


def test_the_command_line_declares_no_launchers_option():
    """issue 52's done-when: cli/ holds no launcher's option; each launcher declares them
    (fedstruct.runs.launch.launcher_options). ``fedstruct flower supernode --superlink``
    is the node's own option (cli/flower.py), not the run command's."""
    import ast

    import fedstruct.cli
    from fedstruct.runs.launch import launcher_options

    flags = {f"--{o.flag}" for options in launcher_options().values() for o in options}
    assert "--superlink" in flags
    found = []
    for path in Path(fedstruct.cli.__file__).parent.glob("*.py"):
        if path.name == "flower.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Option":
                words = [a.value for a in ast.walk(node) if isinstance(a, ast.Constant)]
                found += [f"{path.name}: {w}" for w in words if w in flags]
    assert found == []
