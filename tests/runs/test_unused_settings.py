"""Issue 49, item 9: config.json of a run on the sites' files names the settings that
played no part in it (the built-in data's), beside their defaults."""

import json

from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import load_network
from fedstruct.methods.fedcdnv import FedCDnvRun

runner = CliRunner()


def test_a_run_on_files_names_the_settings_it_left_unused(tmp_path):
    named = load_network("asia").sample(200, seed=0).apply(lambda c: c.map({0: "no", 1: "yes"}))
    named.iloc[:100].to_csv(tmp_path / "a.csv", index=False)
    named.iloc[100:].to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "run"
    sites = ["--site", str(tmp_path / "a.csv"), "--site", str(tmp_path / "b.csv")]
    args = ["run", "fedavg", *sites, "--set", "target=dysp", "--rounds", "1", "--quiet"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["unused_settings"] == [
        "clients", "network", "samples", "test_samples", "partition", "skew_alpha",
        "min_per_client",
    ]  # fmt: skip
    assert config["settings"]["network"] == "asia"  # still there, for --resume
    built_in = tmp_path / "built-in"
    args = ["run", "fedavg", "--network", "asia", "--clients", "2", "--rounds", "1", "--quiet"]
    assert runner.invoke(app, [*args, "--out", str(built_in)]).exit_code == 0
    assert "unused_settings" not in json.loads((built_in / "config.json").read_text())


def test_fedcdnv_names_its_generator_settings_on_files():
    settings = FedCDnvRun(sites=("a.csv", "b.csv"))
    assert settings.unused_settings()[:2] == ["clients", "network"]
    assert "overlap" in settings.unused_settings() and "alpha" not in settings.unused_settings()
    assert FedCDnvRun().unused_settings() == []
