"""A node's approval file (``fedstruct flower supernode --approve FILE``) and the digest
``fedstruct flower approve`` prints: the one the node computes of a submitted run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.deployment.approval import APPROVE, check_approved, read_approval
from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.runs.contract import runnable_names

DIGEST = "ab" * 32
runner = CliRunner()


def write(tmp_path: Path, text: str, name: str = "approve.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("error:")
    return " ".join(result.output.split())


def test_a_file_approves_methods_with_any_settings_or_exact_digests(tmp_path):
    yaml_file = write(tmp_path, f"approve:\n  - fedavg\n  - fedfci@{DIGEST.upper()}\n")
    json_file = write(tmp_path, json.dumps({"approve": ["fedavg", f"fedfci@{DIGEST}"]}), "a.json")
    for path in (yaml_file, json_file):
        approval = read_approval(path, runnable_names())
        assert approval.approves("fedavg", "0" * 64)
        assert approval.approves("fedfci", DIGEST)
        assert not approval.approves("fedfci", "0" * 64)
        assert not approval.approves("fedcdnv", DIGEST)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- fedavg\n", "must be a mapping with one key, 'approve'"),
        ("approve: [fedavg]\nmethods: [fedfci]\n", "must be a mapping with one key"),
        ("approve: fedavg\n", "'approve' must be a list"),
        ("approve: [3]\n", "entry 1 must be a string METHOD or METHOD@DIGEST"),
        ("approve: [fedavg, 'fedfci@12ab']\n", "entry 2: '12ab' is not a settings digest"),
        ("approve: ['@" + DIGEST + "']\n", "entry 1 names no method"),
        ("approve: [fedavgg]\n", "fedstruct has no method 'fedavgg'"),
        ("approve: [fedavg]\napprove: [fedfci]\n", "is not valid YAML"),
    ],
)
def test_a_bad_approval_file_is_one_line_when_the_node_starts(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        read_approval(path, runnable_names())
    line = one_line(["flower", "supernode", "--partition", "0", "--insecure", "--approve",
                     str(path)])  # fmt: skip
    assert message in line and str(path) in line


def test_a_missing_approval_file_refuses_the_node_and_then_every_run(tmp_path):
    missing = tmp_path / "nope.yaml"
    line = one_line(["flower", "supernode", "--partition", "0", "--insecure", "--approve",
                     str(missing)])  # fmt: skip
    assert "nope.yaml" in line
    with pytest.raises(DeploymentError, match=r"node 'x' refuses every run: .*nope\.yaml"):
        check_approved("node 'x'", missing, "fedavg", {})


def test_the_node_config_names_the_file(tmp_path, monkeypatch):
    from fedstruct.cli import flower as flower_commands
    from fedstruct.fl.flower import cluster

    started: list[list[str]] = []
    monkeypatch.setattr(flower_commands, "_exec", lambda cmd, home, *rest: started.append(cmd))
    monkeypatch.setattr(cluster, "wait_reachable", lambda link, timeout: None)
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "approve: [fedavg]\n")
    args = ["flower", "supernode", "--partition", "0", "--insecure", "--home", str(tmp_path)]
    result = runner.invoke(app, [*args, "--approve", "approve.yaml"])
    assert result.exit_code == 0, result.output
    config = started[-1][started[-1].index("--node-config") + 1]
    assert f'{APPROVE}="{tmp_path / "approve.yaml"}"' in config


def printed_digest(output: str) -> str:
    found = re.findall(r"- fedavg@([0-9a-f]{64})", output)
    assert len(found) == 1, output
    return found[0]


def test_the_digest_approve_prints_is_the_one_the_node_computes(tmp_path, monkeypatch):
    """``fedstruct run ... --backend flower`` submits a run (captured here); ``fedstruct
    flower approve`` on the same settings, and on the prepared run's folder, prints the
    digest the node's ClientApp computes of that submission (and run.json records): the
    node runs it with the printed line in its file, and refuses it without."""
    from fedstruct.deployment import app as deployed
    from fedstruct.deployment import submit

    submitted: dict = {}

    def start_run(link, key, app_folder, values):
        submitted.update(values)
        raise DeploymentError("captured")

    monkeypatch.setattr(submit, "start_run", start_run)
    monkeypatch.chdir(tmp_path)
    run = ["run", "fedavg", "--clients", "2", "--rounds", "3", "--seed", "4", "--backend",
           "flower", "--out", "prepared"]  # fmt: skip
    assert "captured" in one_line(run)
    sets = [a for s in ("clients=2", "rounds=3", "seed=4") for a in ("--set", s)]
    by_settings = runner.invoke(app, ["flower", "approve", "fedavg", *sets])
    by_folder = runner.invoke(app, ["flower", "approve", "--run", "prepared"])
    assert by_settings.exit_code == 0 and by_folder.exit_code == 0, by_settings.output
    digest = printed_digest(by_settings.output)
    assert printed_digest(by_folder.output) == digest
    assert json.loads((tmp_path / "prepared" / "run.json").read_text())["settings_digest"] == digest
    other = runner.invoke(app, ["flower", "approve", "fedavg", "--set", "rounds=4"])
    assert printed_digest(other.output) != digest

    def node_admits(lines: str) -> None:
        path = write(tmp_path, f"approve:\n{lines}\n")
        context = SimpleNamespace(
            node_config={"partition-id": 1, APPROVE: str(path)}, run_config=submitted
        )
        deployed._admit(SimpleNamespace(kind="fedstruct.hello"), context)

    node_admits(f"  - fedavg@{digest}")
    node_admits("  - fedavg")
    with pytest.raises(DeploymentError) as refused:
        node_admits(f"  - fedcdnv\n  - fedavg@{printed_digest(other.output)}")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("SuperNode of partition 1 does not approve this run")
    assert f"not fedavg with settings digest {digest}" in message
    assert f"'- fedavg@{digest}'" in message and "fedcdnv (any settings)" in message


def test_approve_takes_a_method_or_a_folder(tmp_path):
    assert "one of them" in one_line(["flower", "approve"])
    assert "one of them" in one_line(["flower", "approve", "fedavg", "--run", str(tmp_path)])
    assert "config.json" in one_line(["flower", "approve", "--run", str(tmp_path)])
    assert "unknown method 'fedx'" in one_line(["flower", "approve", "fedx"])
    assert "unknown fedavg setting 'roundz'" in one_line(
        ["flower", "approve", "fedavg", "--set", "roundz=3"]
    )
