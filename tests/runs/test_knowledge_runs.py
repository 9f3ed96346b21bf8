"""`fedstruct run METHOD --knowledge FILE` for FED-CD and FedNGM: checked, used, saved, shown."""

import json

from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.discovery import Knowledge
from fedstruct.graphs import Graph
from fedstruct.graphs.io import read_graph, write_graph

runner = CliRunner()


FEDCD = ["run", "fedcd", "--network", "chain", "--rounds", "1", "--quiet"]
TINY_FEDCD = [
    *("--set", "variables=4", "--set", "samples=200", "--set", "samples_per_intervention=20"),
    *("--set", "model_steps=5", "--set", "graph_steps=2", "--set", "graphs_per_step=4"),
    *("--set", "alone=none"),
]


def test_fedcd_takes_knowledge_saves_and_shows_it(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"required": [["X1", "X3"]], "forbidden": [["X2", "X1"]]}))
    out = tmp_path / "run"
    result = runner.invoke(app, [*FEDCD, *TINY_FEDCD, "--knowledge", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert Knowledge.read(out / "knowledge.json").required == (("X1", "X3"),)
    graph = read_graph(out / "graph.json")
    edges = [str(e) for e in graph.edges()]
    assert "X1 --> X3" in edges and "X2 --> X1" not in edges and "X1 <-- X2" not in edges
    shown = runner.invoke(app, ["show", str(out), "--picture", str(tmp_path / "g.png")])
    assert "knowledge: 0 tiers, 1 forbidden, 1 required, 0 forbidden_adjacent" in shown.output


def test_fedcd_refuses_knowledge_naming_another_variable_before_fitting(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"tiers": [["X1"], ["age"]]}))
    out = tmp_path / "run"
    result = runner.invoke(app, [*FEDCD, *TINY_FEDCD, "--knowledge", str(path), "--out", str(out)])
    assert result.exit_code != 0
    assert "tiers names an unknown variable 'age'; valid variables: X1, X2" in result.output


def test_fedngm_refuses_a_given_graph_against_the_knowledge_naming_its_edges(tmp_path):
    (tmp_path / "k.json").write_text(json.dumps({"tiers": [["X1"], ["X2"]]}))
    write_graph(
        Graph.from_edges(["X1", "X2", "X3"], ["X2 --> X1", "X2 --> X3"]), tmp_path / "g.json"
    )
    args = ["run", "fedngm", "--dataset", "synthetic", "--rounds", "1", "--quiet"]
    files = ["--graph", str(tmp_path / "g.json"), "--knowledge", str(tmp_path / "k.json")]
    result = runner.invoke(app, [*args, *files, "--out", str(tmp_path / "run")])
    assert result.exit_code != 0
    assert "contradicts the background knowledge: X2 -> X1 (tier 2 into the earlier tier 1)" in (
        result.output
    )
