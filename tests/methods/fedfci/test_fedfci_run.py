"""``fedstruct run fedfci``: sampled sites and a user's files, scored and checked."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data.gaussian import load_gaussian_network

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["run", "fedfci", "--quiet", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("network", "test"), [("asia", "g2"), ("ecoli70", "fisherz"), ("mixed", "dg")]
)
def test_sampled_sites_with_holes_find_the_pooled_graph(network, test, tmp_path) -> None:
    out = tmp_path / network
    code, output = run(
        "--network", network, "--clients", "3", "--set", "missing_rate=0.05",
        "--set", "min_samples=300", "--set", "max_samples=400", "--out", str(out),
    )  # fmt: skip
    assert code == 0, output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics[f"ci_test_{test}"] == 1.0
    assert metrics["pooled_agreement"] == 1.0  # the federation's graph is the pooled one
    assert metrics["f1_edge"] == metrics["central_f1_edge"]
    assert metrics["exchanges"] >= 1 and metrics["tests"] > metrics["exchanges"]
    assert metrics["f1_edge"] > 0.5


def test_a_users_mixed_tables_with_gaps(tmp_path) -> None:
    """Three sites' files: continuous, ordinal and categorical columns, missing values,
    one site without a column; read, searched and scored against a truth file."""
    network = load_gaussian_network("magic-niab")
    rows = network.sample(1500, seed=4).iloc[:, :8]
    rows["grade"] = pd.cut(rows.iloc[:, 0], 3, labels=["low", "mid", "high"]).astype(str)
    rows = rows.drop(columns=rows.columns[0])
    rng = np.random.default_rng(0)
    paths = []
    for k, index in enumerate(np.array_split(np.arange(len(rows)), 3)):
        part = rows.iloc[index]
        part = part.mask(rng.random(part.shape) < 0.05)
        if k == 2:
            part = part.drop(columns=[rows.columns[1]])
        path = tmp_path / f"site-{k + 1}.csv"
        part.to_csv(path, index=False)
        paths += ["--site", str(path)]
    out = tmp_path / "run"
    code, output = run(*paths, "--out", str(out))
    assert code == 0, output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ci_test_dg"] == 1.0  # mixed kinds, fewer than 1,500 rows per pair
    assert metrics["undecided_pairs"] == 0.0  # two sites measure every pair
    assert (out / "graph.json").is_file()
