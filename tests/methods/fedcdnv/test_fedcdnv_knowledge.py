"""`fedstruct run fedcdnv --knowledge FILE`: checked, given to every client's FCI, saved, shown."""

import json

from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.discovery import Knowledge

runner = CliRunner()

TIERS = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]]
ARGS = ["run", "fedcdnv", "--network", "asia", "--clients", "2", "--quiet"]
SETS = ["--set", "latent_ratio=0", "--set", "reference=false", "--set", "max_samples=300"]


def test_knowledge_reaches_the_clients_and_is_saved_and_shown(tmp_path):
    path = tmp_path / "k.yaml"
    tiers = "".join(f"  - {json.dumps(t)}\n" for t in TIERS)
    path.write_text(f"tiers:\n{tiers}required: [[smoke, lung]]\n")
    plain, told = tmp_path / "plain", tmp_path / "told"
    for out, extra in ((plain, []), (told, ["--knowledge", str(path)])):
        result = runner.invoke(app, [*ARGS, *SETS, *extra, "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert not (plain / "knowledge.json").exists()
    assert Knowledge.read(told / "knowledge.json") == Knowledge(
        tiers=TIERS, required=[("smoke", "lung")]
    )
    first = [json.loads((o / "history.json").read_text())[0]["tests"] for o in (plain, told)]
    assert first[1] < first[0]  # round 1: the clients' FCI never tested the required pair
    shown = runner.invoke(app, ["show", str(told), "--picture", str(tmp_path / "g.png")])
    assert shown.exit_code == 0, shown.output
    assert "knowledge: 3 tiers, 0 forbidden, 1 required, 0 forbidden_adjacent" in shown.output


def test_a_knowledge_file_naming_another_variable_stops_the_run(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"forbidden": [["lung", "cancer"]]}))
    out = tmp_path / "run"
    result = runner.invoke(app, [*ARGS, *SETS, "--knowledge", str(path), "--out", str(out)])
    assert result.exit_code != 0
    assert "forbidden names an unknown variable 'cancer'" in result.output
