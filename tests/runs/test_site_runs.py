"""`fedstruct run METHOD --site FILE ...`: every method on a user's per-site files."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import load_network
from fedstruct.graphs import write_graph

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STATES = {"yes": 1, "no": 0}


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["run", *args, "--quiet"])
    return result.exit_code, " ".join(result.output.split())


def asia_sites(folder, n_sites=3, rows=600, seed=0, text=True):
    """Asia rows at ``n_sites`` sites, states written as text (or codes)."""
    network = load_network("asia")
    frame = network.sample(rows * n_sites, seed=seed)
    if text:
        frame = pd.DataFrame(
            {v: np.array(network.states[v])[frame[v].to_numpy()] for v in network.names}
        )
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(frame)), n_sites)):
        path = folder / f"site-{k + 1}.csv"
        frame.iloc[part].to_csv(path, index=False)
        paths.append(str(path))
    return network, paths


def sites_args(paths):
    return [a for p in paths for a in ("--site", p)]


def test_fedavg_on_sites_reports_held_out_accuracy(tmp_path):
    _, paths = asia_sites(tmp_path)
    out = tmp_path / "run"
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp",
                     "--set", "test_fraction=0.2", "--rounds", "5", "--out", str(out))  # fmt: skip
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    config = json.loads((out / "config.json").read_text())["settings"]
    assert config["sites"] == paths
    # dysp is predictable from its parents in asia (majority ~0.56 there)
    assert metrics["test_accuracy"] > 0.7
    assert metrics["rows_site-1"] == 600 and metrics["dropped_rows_site-1"] == 0


def test_fedcdnv_on_sites_without_and_with_a_truth(tmp_path):
    network, paths = asia_sites(tmp_path, rows=2000)
    out = tmp_path / "run"
    code, text = run("fedcdnv", *sites_args(paths), "--out", str(out))
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_variables"] == 8 and metrics["edges"] > 0
    assert 0.0 <= metrics["site_agreement"] <= 1.0
    assert "shd" not in metrics
    truth = tmp_path / "asia.json"
    write_graph(network.graph, truth)
    scored = tmp_path / "scored"
    code, text = run("fedcdnv", *sites_args(paths), "--truth", str(truth), "--out", str(scored))
    assert code == 0, text
    metrics = json.loads((scored / "metrics.json").read_text())
    assert metrics["f1_edge"] > 0.5  # asia's PAG from 6,000 rows (skeleton F1 ~0.8)
    # issue 49: each site alone beside the federation, on the site's own pairs
    for site in ("site-1", "site-2", "site-3"):
        assert 0.0 <= metrics[f"alone_f1_edge_{site}"] <= 1.0
        assert 0.0 <= metrics[f"federated_f1_edge_{site}"] <= 1.0
    ahead = sum(
        metrics[f"alone_f1_edge_{s}"] > metrics[f"federated_f1_edge_{s}"]
        for s in ("site-1", "site-2", "site-3")
    )
    assert metrics["sites_ahead_of_federation"] == ahead
    assert text.count("alone scores adjacency F1") == ahead


def test_fedcd_needs_a_regime_column_and_reads_it(tmp_path):
    network = load_network("asia")
    paths = []
    for k in range(2):
        obs = network.sample(800, seed=k)
        parts = [obs.assign(regime="obs")]
        for target in network.names[k::2]:
            rows = network.sample(100, seed=10 + k, interventions={target: "uniform"})
            parts.append(rows.assign(regime=target))
        path = tmp_path / f"lab-{k}.csv"
        pd.concat(parts).to_csv(path, index=False)
        paths.append(str(path))
    code, text = run("fedcd", *sites_args(paths), "--out", str(tmp_path / "x"))
    assert code == 2 and "--set regime=COLUMN" in text
    out = tmp_path / "run"
    small = ["--set", "model_steps=100", "--set", "graph_steps=10"]  # 1,000 and 100: 30x the time
    code, text = run("fedcd", *sites_args(paths), "--set", "regime=regime", "--rounds", "2",
                     "--set", "epochs_per_round=1", *small, "--out", str(out))  # fmt: skip
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["edges"] >= 1 and np.isfinite(metrics["edge_entropy"])


def test_fedngm_on_sites_scores_global_against_own_models(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for k in range(3):
        a = rng.normal(size=500)
        frame = pd.DataFrame(
            {
                "a": a,
                "b": 2 * a + rng.normal(scale=0.5, size=500),
                "group": np.where(a + rng.normal(size=500) > 0, "hi", "lo"),
            }
        )
        path = tmp_path / f"s{k}.csv"
        frame.to_csv(path, index=False)
        paths.append(str(path))
    out = tmp_path / "run"
    options = ["--rounds", "2", "--set", "epochs=5", "--set", "fidelity_samples=100"]
    code, text = run("fedngm", *sites_args(paths), *options, "--out", str(out))
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["common_variables"] == 3
    assert 0.0 < metrics["worst_own_ratio"] < 2.0
    assert metrics["isolated_variables"] == 0 and "no neighbour" not in text


def test_fedngm_on_sites_names_a_variable_the_graph_leaves_isolated(tmp_path):
    """A column independent of the others gets no edge: the run says so (it is then
    predicted by its marginal) and counts it."""
    rng = np.random.default_rng(1)
    paths = []
    for k in range(2):
        a = rng.normal(size=300)
        frame = pd.DataFrame({"a": a, "b": a + rng.normal(scale=0.3, size=300),
                              "noise": rng.normal(size=300)})  # fmt: skip
        path = tmp_path / f"s{k}.csv"
        frame.to_csv(path, index=False)
        paths.append(str(path))
    out = tmp_path / "run"
    options = ["--set", "epochs=2"]
    code, text = run("fedngm", *sites_args(paths), *options, "--out", str(out))
    assert code == 0, text
    assert json.loads((out / "metrics.json").read_text())["isolated_variables"] == 1
    assert "warning: 1 variable(s) have no neighbour in the merged graph" in text
    assert "noise" in text


def test_fcm_on_sites_with_a_manifest_and_site_graphs(tmp_path):
    network = load_network("asia")
    rows = network.sample(1200, seed=0)
    rng = np.random.default_rng(0)
    concepts = ["asia", "tub", "smoke", "lung", "bronc", "either", "xray"]
    x = pd.DataFrame(
        rows[concepts].to_numpy() + rng.normal(scale=0.3, size=(1200, 7)),
        columns=[f"x{i}" for i in range(7)],
    )
    frame = pd.concat([x, rows[[*concepts, "dysp"]]], axis=1)
    sites = []
    for k, part in enumerate(np.array_split(np.arange(1200), 3)):
        frame.iloc[part].to_csv(tmp_path / f"h{k}.csv", index=False)
        write_graph(network.graph, tmp_path / f"h{k}.json")
        sites.append({"path": f"h{k}.csv", "graph": f"h{k}.json"})
    manifest = tmp_path / "federation.yaml"
    manifest.write_text(yaml.safe_dump({"task": "dysp", "concepts": concepts, "sites": sites}))
    out = tmp_path / "run"
    code, text = run("fcm", "--sites", str(manifest), "--rounds", "4",
                     "--set", "clients_per_round=3", "--out", str(out))  # fmt: skip
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["concepts"] == 7
    # the concepts are their own noisy inputs: recovered far above chance (1/2)
    assert metrics["val_concept_accuracy"] > 0.8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fedavg", "--site", "a.csv", "--clients", "5"], "--clients is the number of sites"),
        (["fedavg", "--site", "a.csv", "--network", "alarm"], "--network and --site/--sites"),
        (["fedavg", "--site", "a.csv", "--sites", "m.yaml"], "one of --site, --sites MANIFEST"),
        (["fedavg", "--site", "a.csv", "--backend", "flower"], "supernode --data FILE"),
        (["fedavg", "--node-site", "a", "--set", "target=y"], "add --backend flower"),
    ],
)
def test_site_options_that_contradict_each_other(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, text = run(*args, "--out", "X")
    assert code == 2
    assert message in text


def test_fedavg_trains_on_continuous_columns(tmp_path):
    """Breast cancer at four hospitals (30 continuous measurements): no refusal, no
    kinds to set; the held-out rows are predicted well (issue 31: exit 2 before)."""
    folder = EXAMPLES / "breast-cancer"
    paths = [str(folder / f"hospital-{k}.csv") for k in (1, 2, 3, 4)]
    out = tmp_path / "run"
    code, text = run("fedavg", *sites_args(paths), "--set", "target=diagnosis",
                     "--set", "test_fraction=0.2", "--rounds", "3", "--out", str(out))  # fmt: skip
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_accuracy"] > 0.9 and metrics["missing_target_rows"] == 0


def test_fedavg_refuses_a_target_with_one_level(tmp_path):
    frame = pd.DataFrame({"y": ["a"] * 30, "x": np.linspace(0, 1, 30)})
    frame.to_csv(tmp_path / "s.csv", index=False)
    code, text = run("fedavg", "--site", str(tmp_path / "s.csv"), "--set", "target=y",
                     "--out", str(tmp_path / "x"))  # fmt: skip
    assert code == 2
    assert "target 'y' has the single level 'a' at every site" in text


def test_only_a_method_that_uses_incomplete_rows_keeps_them(tmp_path):
    _, paths = asia_sites(tmp_path, rows=100)
    code, text = run("fedcd", *sites_args(paths), "--set", "missing=keep",
                     "--out", str(tmp_path / "x"))  # fmt: skip
    assert code == 2
    assert "fedcd cannot read missing values with missing=keep" in text


def test_fedngm_learns_from_sites_with_missing_values_by_default(tmp_path):
    """Issue 31 item 7: 20% of a mixed table's entries missing at each site, no
    setting: FedNGM keeps the incomplete rows (masked loss) and releases a model."""
    rng = np.random.default_rng(0)
    paths = []
    for k in (1, 2):
        frame = pd.read_csv(EXAMPLES / "breast-cancer" / f"hospital-{k}.csv").iloc[:120]
        frame = frame[["diagnosis", "mean radius", "mean texture", "mean area"]]
        frame = frame.mask(rng.random(frame.shape) < 0.2)
        paths.append(tmp_path / f"site-{k}.csv")
        frame.to_csv(paths[-1], index=False)
    out = tmp_path / "run"
    code, text = run("fedngm", *sites_args([str(p) for p in paths]), "--out", str(out))
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dropped_rows_site-1"] == 0 and metrics["rows_site-1"] == 120
    assert metrics["edges"] >= 1


def test_missing_values_are_named_or_dropped_and_counted(tmp_path):
    _, paths = asia_sites(tmp_path, rows=400)
    frame = pd.read_csv(paths[0])
    frame.loc[:6, "smoke"] = np.nan  # rows 0..6: seven missing values
    frame.to_csv(paths[0], index=False)
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp",
                     "--set", "missing=error", "--out", str(tmp_path / "x"))  # fmt: skip
    assert code == 2
    assert "7 missing values in column 'smoke'" in text and "missing=drop-rows" in text
    kept = tmp_path / "kept"  # FedAvg's default: kept, imputed, indicated
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp", "--rounds", "1",
                     "--out", str(kept))  # fmt: skip
    assert code == 0, text
    assert json.loads((kept / "metrics.json").read_text())["dropped_rows_site-1"] == 0
    out = tmp_path / "run"
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp", "--rounds", "2",
                     "--set", "missing=drop-rows", "--out", str(out))  # fmt: skip
    assert code == 0, text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dropped_rows_site-1"] == 7 and metrics["rows_site-1"] == 393
    assert metrics["dropped_rows_site-2"] == 0


def test_what_a_site_may_disclose_is_one_line_with_exit_2(tmp_path):
    _, paths = asia_sites(tmp_path, n_sites=2, rows=40)
    frame = pd.read_csv(paths[1])
    frame.insert(0, "patient", [f"P{i:04d}" for i in range(len(frame))])
    frame.to_csv(paths[1], index=False)
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp", "--rounds", "1",
                     "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 2 and "column 'patient' of site 'site-2'" in text and "identifier" in text
    assert not (tmp_path / "a" / "model.json").exists()
    (tmp_path / "small").mkdir()
    _, small = asia_sites(tmp_path / "small", n_sites=2, rows=8)
    args = ["fedavg", *sites_args(small), "--set", "target=dysp", "--rounds", "1"]
    code, text = run(*args, "--out", str(tmp_path / "b"))
    assert code == 2 and "site 'site-1'" in text and "has 8 rows, fewer than the 10" in text
    code, text = run(*args, "--set", "min_site_rows=8", "--out", str(tmp_path / "c"))
    assert code == 0, text


def test_free_text_and_mixed_delimiters_are_one_line_with_exit_2(tmp_path):
    """Issue 49: a notes column was accepted (its values in warnings and model.json), a
    file of ',' and ';' rows ran with rc 0; each is now one line naming the column or
    the line, never a value."""
    _, paths = asia_sites(tmp_path, n_sites=2, rows=200)
    frame = pd.read_csv(paths[1])
    frame["notes"] = None
    frame.loc[[3, 7], "notes"] = ["Jane Doe, MRN 4471-22, HIV positive", "Bob Roe MRN 1183-09 …"]
    frame.to_csv(paths[1], index=False)
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp", "--rounds", "1",
                     "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 2 and "column 'notes' of site 'site-2'" in text and "free text" in text
    assert "Jane" not in text and "MRN" not in text
    assert not (tmp_path / "a" / "model.json").exists()
    lines = Path(paths[0]).read_text().splitlines()
    lines[5] = lines[5].replace(",", ";")
    Path(paths[0]).write_text("\n".join(lines) + "\n")
    code, text = run("fedavg", "--site", paths[0], "--set", "target=dysp", "--rounds", "1",
                     "--out", str(tmp_path / "b"))  # fmt: skip
    assert code == 2 and "line 6 splits into 1 field(s) with delimiter ','" in text


def test_a_damaged_gz_site_is_one_line_with_exit_2(tmp_path):
    _, paths = asia_sites(tmp_path, n_sites=2, rows=40)
    damaged = tmp_path / "site-2.csv.gz"
    damaged.write_bytes(gzip.compress(open(paths[1], "rb").read())[:-40])
    code, text = run("fedavg", "--site", paths[0], "--site", str(damaged), "--set",
                     "target=dysp", "--rounds", "1", "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 2
    assert f"error: file {damaged} is not a valid .gz file" in text and "Aborted" not in text


def test_sites_coding_a_column_differently_are_warned_about(tmp_path):
    _, paths = asia_sites(tmp_path, n_sites=2, rows=40)
    frame = pd.read_csv(paths[1])
    frame["smoke"] = frame["smoke"].map(STATES)
    frame.to_csv(paths[1], index=False)
    code, text = run("fedavg", *sites_args(paths), "--set", "target=dysp", "--rounds", "1",
                     "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 0, text
    assert "column 'smoke': sites 'site-1' (levels ['no', 'yes']) and 'site-2' (levels " in text


def test_a_named_pipe_as_a_site_is_one_line_with_exit_2(tmp_path):
    _, paths = asia_sites(tmp_path, n_sites=1, rows=40)
    pipe = tmp_path / "site-2.csv"
    os.mkfifo(pipe)
    code, text = run("fedavg", "--site", paths[0], "--site", str(pipe), "--set", "target=dysp",
                     "--rounds", "1", "--out", str(tmp_path / "a"))  # fmt: skip
    assert code == 2 and f"error: file {pipe} is a named pipe (FIFO), not a regular file" in text
