"""Bad knowledge input, and --bootstrap where it cannot run, stop `fedstruct run` in one line."""

import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app

RUN = ["run", "fedcdnv", "--network", "asia", "--clients", "2", "--quiet"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            {"tiers": [["asia"], ["cancer"]]},
            "knowledge: tiers names an unknown variable 'cancer'; valid variables: asia, bronc,",
        ),
        (
            {"tiers": [["asia"], ["dysp"]], "required": [["dysp", "asia"]]},
            "knowledge: required edge dysp -> asia goes from tier 2 into the earlier tier 1",
        ),
        (
            {"required": [["asia", "tub"]], "forbidden_adjacent": [["tub", "asia"]]},
            "knowledge: required edge asia -> tub contradicts forbidden_adjacent [asia, tub]",
        ),
        (
            {"required": [["asia", "tub"]], "forbidden": [["asia", "tub"]]},
            "required edges make asia a cause of tub, but [asia, tub] is forbidden",
        ),
        (
            {"required": [["asia", "tub"], ["tub", "either"], ["either", "asia"]]},
            "knowledge: the required edges form a cycle asia -> tub -> either -> asia",
        ),
        ({"tiers": "asia"}, "tiers must be a list, got str 'asia'"),
        ({"required": [["asia"]]}, "required[0] must be a pair [x, y] of two names"),
        ({"forbidden": [["asia", 3]]}, "forbidden[0] must be a variable name (a non-empty string)"),
        ({"tier": [["asia"]]}, "unknown key(s) ['tier']"),
        (["asia"], "expected a mapping with the keys"),
    ],
)
def test_a_bad_knowledge_file_is_one_line(tmp_path, content, message):
    path = tmp_path / "k.json"
    path.write_text(json.dumps(content))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [*RUN, "--knowledge", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert not (out / "metrics.json").exists()


def test_fedngm_refuses_forbidden_adjacent_for_its_learned_graph_in_one_line(tmp_path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"forbidden_adjacent": [["visits", "plan"]]}))
    result = CliRunner().invoke(
        app, ["run", "fedngm", "--knowledge", str(path), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert "forbidden_adjacent [visits, plan] cannot shape the graph FedNGM learns" in line


def test_bootstrap_on_a_deployment_is_refused_on_the_command_line(tmp_path):
    out = tmp_path / "run"
    args = ["run", "fedcdnv", "--bootstrap", "3", "--backend", "flower", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert "--bootstrap 3 with --backend flower: the bootstrap runs its replicates" in line
    assert not (out / "metrics.json").exists()
