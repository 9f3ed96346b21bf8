"""``--bootstrap``: frequencies in the run folder, consensus, per-site contradictions, refusals."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.deployment.launcher import FlowerLauncher
from fedstruct.errors import ConfigError
from fedstruct.graphs import Graph, read_graph
from fedstruct.graphs.frequencies import EdgeFrequencies
from fedstruct.runs.confidence import bootstrap_metrics
from fedstruct.runs.contract import execute, runnable
from fedstruct.runs.settings import apply_settings

TINY = {"network": "asia", "clients": 3, "reference": False, "min_samples": 300,
        "max_samples": 600}  # fmt: skip


def test_fedcdnv_bootstrap_writes_frequencies_consensus_and_contradictions(tmp_path):
    out = tmp_path / "run"
    outcome = execute("fedcdnv", [{**TINY, "bootstrap": 3, "jobs": 1}], out)
    metrics, model = outcome.metrics, outcome.model
    assert metrics["bootstrap_replicates"] == 3
    with (out / "edges.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == model.graph_.n_edges
    for row in rows:
        shares = [float(v) for k, v in row.items() if k.startswith("freq_") and k not in
                  ("freq_adjacent", "freq_none")]  # fmt: skip
        assert sum(shares) == pytest.approx(float(row["freq_adjacent"]))
        assert float(row["freq_none"]) == pytest.approx(1 - float(row["freq_adjacent"]))
    document = json.loads((out / "graph.json").read_text())
    assert document["bootstrap"] == {"replicates": 3}
    assert all(0 <= e["frequencies"]["adjacent"] <= 1 for e in document["edges"])
    consensus = read_graph(out / "consensus.json")  # the reader takes the new keys
    assert consensus == model.consensus_graph_ and metrics["consensus_edges"] == consensus.n_edges
    assert (out / "consensus.png").stat().st_size > 0 and (out / "edge-frequencies.csv").exists()
    # The pairs the learned graph has are marked apart from those it lacks.
    with (out / "edge-frequencies.csv").open() as f:
        pairs = list(csv.DictReader(f))
    in_graph = {frozenset((r["from"], r["to"])) for r in pairs if r["in_graph"] == "True"}
    seen = [r for r in rows if float(r["freq_adjacent"]) > 0]  # those some replicate has
    assert in_graph == {frozenset((r["from"], r["to"])) for r in seen}
    assert 0 <= metrics["confident_not_in_graph"] <= metrics["confident_edges"]
    for site in ("client-1", "client-2", "client-3"):
        assert metrics[f"consensus_contradictions_{site}"] >= 0
    # What fedstruct.load reads back: the same counts and consensus.
    saved = json.loads((out / "model.json").read_text())["learned"]["bootstrap"]
    assert EdgeFrequencies.from_json(saved).consensus() == consensus


def test_without_bootstrap_nothing_changes(tmp_path):
    out = tmp_path / "run"
    outcome = execute("fedcdnv", [TINY], out)
    assert not any(k.startswith(("bootstrap", "consensus")) for k in outcome.metrics)
    assert "freq_adjacent" not in (out / "edges.csv").read_text()
    assert not (out / "consensus.json").exists()
    params = json.loads((out / "model.json").read_text())["params"]
    assert (
        params["bootstrap"] is None
        and "bootstrap" not in json.loads((out / "model.json").read_text())["learned"]
    )


@pytest.mark.parametrize("method", ["fedavg", "cafe", "fcm", "fedngm"])
def test_bootstrap_is_refused_with_a_reason_where_it_makes_no_sense(method, tmp_path):
    result = CliRunner().invoke(
        app, ["run", method, "--bootstrap", "3", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert "--bootstrap 3:" in line and "fedcdnv and fedcd" in line
    assert not (tmp_path / "run").exists()


def test_bootstrap_on_a_deployment_is_refused_in_one_line():
    settings = apply_settings(runnable("fedcdnv").settings(), {"bootstrap": 5}, method="fedcdnv")
    with pytest.raises(ConfigError, match="SuperNode would have to resample its own rows"):
        FlowerLauncher().check(settings)


def test_a_bad_subsample_is_refused():
    with pytest.raises(ConfigError, match="subsample"):
        apply_settings(runnable("fedcdnv").settings(), {"subsample": 1.0}, method="fedcdnv")


def test_confident_pairs_are_scored_apart_by_whether_the_graph_has_them():
    names = ["A", "B", "C", "D"]
    replicates = [
        Graph.from_edges(names, ["A --> B", "B o-> C", "C o-o D"]),
        Graph.from_edges(names, ["A --> B", "B o-> C", "C o-o D"]),
    ]
    frequencies = EdgeFrequencies.of(replicates, names)
    learned = Graph.from_edges(names, ["A --> B", "B o-> C"])  # lacks C - D
    truth = Graph.from_edges(names, ["A --> B"])  # B - C and C - D are false
    metrics = bootstrap_metrics(learned, frequencies, frequencies.consensus(), {}, truth)
    assert metrics["confident_edges"] == 3 and metrics["confident_not_in_graph"] == 1
    assert metrics["confident_precision"] == pytest.approx(1 / 3)
    assert metrics["confident_precision_in_graph"] == pytest.approx(1 / 2)
    assert metrics["confident_precision_not_in_graph"] == 0
