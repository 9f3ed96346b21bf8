"""``fedstruct run cafe``: the issue's command line, its metrics and its bad input."""

import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app

runner = CliRunner()
SMALL = ["--set", "clients=10", "--set", "rounds=4", "--set", "local_epochs=1",
         "--set", "eval_every=2", "--quiet"]  # fmt: skip


def test_run_cafe_with_the_issue_flags_writes_accuracy(tmp_path):
    out = tmp_path / "run"
    args = ["run", "cafe", "--dataset", "digits", "--dirichlet", "0.5", "--cf", "0.5",
            "--method", "fedavg", "--seed", "1", "--out", str(out), *SMALL]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())["settings"]
    assert (config["algorithm"], config["skew_alpha"], config["report_rate"]) == (
        "fedavg",
        0.5,
        0.5,
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["late_merged"] > 0
    assert {"accuracy_many", "accuracy_medium", "accuracy_few", "late_merged"} <= set(metrics)
    assert (out / "cafe_accuracy.png").is_file()


def test_a_user_data_set_needs_its_folder(tmp_path):
    result = runner.invoke(
        app, ["run", "cafe", "--dataset", "fmnist", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "--data-dir" in " ".join(result.output.split())
    empty = tmp_path / "cifar"
    empty.mkdir()
    result = runner.invoke(app, ["run", "cafe", "--dataset", "cifar10", "--data-dir", str(empty),
                                 "--out", str(tmp_path / "y")])  # fmt: skip
    assert result.exit_code == 2
    assert "data_batch_1" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_heads_must_divide_the_feature_dimension(tmp_path):
    result = runner.invoke(app, ["run", "cafe", "--set", "heads=3", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "not divisible by heads = 3" in " ".join(result.output.split())


def test_the_quick_ablation_recipe_tabulates_every_variant(tmp_path):
    from fedstruct.runs.recipes import run_recipe

    run_recipe("cafe-ablation", quick=True, out=tmp_path, dataset="digits")
    rows = {r["name"]: r for r in json.loads((tmp_path / "results.json").read_text())}
    assert list(rows) == ["CAFE", "w/o FC", "w/o PC", "w/o HA", "FedAvg"]
    assert all(0.0 < r["digits"] <= 1.0 for r in rows.values())
    assert "| CAFE |" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "accuracy.png").is_file()


def test_recipes_refuse_options_they_do_not_take(tmp_path):
    result = runner.invoke(app, ["reproduce", "fedavg-participation", "--dataset", "mnist"])
    assert result.exit_code == 2
    assert "takes no --dataset option" in " ".join(result.output.split())


@pytest.mark.slow
def test_the_curves_recipe_draws_accuracy_and_loss_per_round(tmp_path, monkeypatch):
    """Fig. 5: the five algorithms' test accuracy (every 2 rounds at --quick) and
    training loss (every round with a reply) against the rounds, one figure each per
    data set."""
    from fedstruct.methods.cafe import recipes
    from fedstruct.runs.recipes import run_recipe

    tiny = {"clients": 10, "rounds": 4, "local_epochs": 1, "eval_every": 5}
    monkeypatch.setattr(recipes, "_QUICK", tiny)
    run_recipe("cafe-curves", quick=True, out=tmp_path, dataset="digits", jobs=1)
    rows = [r["name"] for r in json.loads((tmp_path / "results.json").read_text())]
    assert rows == [f"digits | {label}" for label in recipes.LABELS.values()]
    history = json.loads((tmp_path / "digits" / "cafe" / "seed-0" / "history.json").read_text())
    assert [h["round"] for h in history if "test_accuracy" in h] == [2, 4]
    assert all("train_loss" in h for h in history if h["clients_answered"])
    for figure in ("accuracy_digits.png", "loss_digits.png"):
        assert (tmp_path / figure).stat().st_size > 10_000


def test_the_loss_curve_averages_blocks_of_rounds_and_skips_empty_ones():
    from fedstruct.methods.cafe.recipes import block_means

    points = [(1, 1.0), (2, 3.0), (5, 4.0), (6, 6.0)]  # no reply in rounds 3-4
    assert block_means(points, 2) == [(2.0, 2.0), (6.0, 5.0)]
    assert block_means(points, 1) == [(float(r), v) for r, v in points]
