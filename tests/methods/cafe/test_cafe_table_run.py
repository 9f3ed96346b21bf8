"""``fedstruct run cafe`` on a user's table sites: a mixed table with holes end to end
(run, metrics, predict with the saved statistics), a deployment's server reading the
schema only, and the bad inputs' one-line messages."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data.sites import SiteSpec
from fedstruct.methods.cafe.sources import SiteTable
from fedstruct.runs.contract import runnable
from fedstruct.runs.node_sites import describe, merge
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import server_view

runner = CliRunner()
SMALL = ["--rounds", "2", "--set", "local_epochs=1", "--set", "feature_dim=8",
         "--set", "sample_rate=1.0", "--quiet"]  # fmt: skip


def write_sites(folder, n: int = 30) -> list[str]:
    """Three hospitals: a text category with holes, a continuous column with holes, a
    complete one, and the text class ``diagnosis`` decided by ``age``."""
    paths = []
    for k in range(3):
        rng = np.random.default_rng(k)
        age = rng.normal(50 + 5 * k, 10, n).round(1)
        rows = pd.DataFrame({
            "ward": rng.choice(["north", "south", "east"], n),
            "age": age,
            "marker": rng.normal(0, 1, n).round(3),
            "diagnosis": np.where(age > 52, "sick", "well"),
        })  # fmt: skip
        rows.loc[rng.random(n) < 0.1, "age"] = np.nan
        rows.loc[rng.random(n) < 0.1, "ward"] = np.nan
        path = folder / f"h{k}.csv"
        rows.to_csv(path, index=False)
        paths.append(str(path))
    return paths


def site_args(paths: list[str]) -> list[str]:
    return [arg for path in paths for arg in ("--site", path)]


def test_a_mixed_table_with_holes_runs_and_predicts_from_the_saved_statistics(tmp_path):
    paths = write_sites(tmp_path)
    out = tmp_path / "run"
    args = ["run", "cafe", *site_args(paths), "--set", "target=diagnosis", "--out", str(out)]
    result = runner.invoke(app, [*args, *SMALL])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0 <= metrics["accuracy"] <= 1 and metrics["missing_target_rows"] == 0
    assert (metrics["columns_categorical"], metrics["columns_continuous"]) == (2, 2)
    assert {"accuracy_h0", "accuracy_h1", "accuracy_h2", "majority_accuracy"} <= set(metrics)
    assert (out / "cafe_accuracy.png").is_file()
    predictions = tmp_path / "predictions.csv"
    result = runner.invoke(app, ["predict", str(out), "--data", paths[0], "--out",
                                 str(predictions)])  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pd.read_csv(predictions)
    assert len(table) == 30 and set(table["diagnosis"]) <= {"sick", "well"}  # holes imputed
    np.testing.assert_allclose(table["P(diagnosis=sick)"] + table["P(diagnosis=well)"], 1,
                               rtol=1e-6)  # fmt: skip


def test_a_continuous_target_is_refused_in_one_line(tmp_path):
    paths = write_sites(tmp_path)
    result = runner.invoke(app, ["run", "cafe", *site_args(paths), "--set", "target=age",
                                 "--out", str(tmp_path / "run"), *SMALL])  # fmt: skip
    assert result.exit_code == 2
    assert "target 'age' is continuous" in result.output
    assert "--set kinds.age=categorical" in result.output


def test_images_and_tables_cannot_be_mixed(tmp_path):
    paths = write_sites(tmp_path)
    images = tmp_path / "clinic.npz"
    np.savez(images, images=np.zeros((4, 4, 4), dtype=np.uint8), labels=np.array([0, 1, 0, 1]))
    result = runner.invoke(app, ["run", "cafe", *site_args([paths[0], str(images)]),
                                 "--out", str(tmp_path / "run"), *SMALL])  # fmt: skip
    assert result.exit_code == 2
    assert "['clinic'] are images and ['h0'] tables" in result.output


def test_a_target_needs_table_sites(tmp_path):
    result = runner.invoke(app, ["run", "cafe", "--set", "target=y", "--out",
                                 str(tmp_path / "run"), *SMALL])  # fmt: skip
    assert result.exit_code == 2 and "give the table sites with --site" in result.output


def test_a_deployments_server_reads_the_table_schema_only(tmp_path):
    entry = runnable("cafe")
    paths = write_sites(tmp_path)
    layer = {"node_sites": ["h0", "h1", "h2"], "target": "diagnosis"}
    settings = apply_settings(entry.settings(), layer, method="cafe")
    specs = [SiteSpec(f"h{k}", tmp_path / f"h{k}.csv") for k in range(3)]
    schema = merge(entry, settings, [describe(entry, settings, s) for s in specs])
    for path in paths:
        (tmp_path / path).unlink()  # the server never opens a site's file
    source = entry.resolve(settings, server_view(settings, schema, {}))
    assert isinstance(source, SiteTable) and source.clients() == []
    model = entry.method(settings, source).prepare()
    assert model.table_.continuous == ("age", "marker") and model.table_.missing_values
    assert model.n_classes_ == 2
