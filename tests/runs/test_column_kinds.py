"""Issue 31: which kind each column got (metrics.json and the screen), and the bad
input of a user's tables, each with its one-line message."""

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from fedstruct.cli import app

runner = CliRunner()


def _sites(tmp_path, empty_at_second=()):
    """Two sites of a mixed table: x, y continuous, g text (categorical), s a score
    1..5 stored as floats (ordinal), b a 0/1 column (categorical); the columns
    ``empty_at_second`` missing at every row of the second site."""
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        n = 200
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
        frame = pd.DataFrame(
            {
                "x": x,
                "y": y,
                "g": np.where(y + rng.normal(size=n) > 0, "hi", "lo"),
                "s": rng.integers(1, 6, n).astype(float),
                "b": rng.integers(0, 2, n),
            }
        )
        if k == 1:
            for col in empty_at_second:
                frame[col] = np.nan
        path = tmp_path / f"h{k}.csv"
        frame.to_csv(path, index=False)
        paths.append(str(path))
    return [a for p in paths for a in ("--site", p)]


def test_a_run_on_files_says_which_kind_each_column_got(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "fedcdnv", *_sites(tmp_path), "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["columns_categorical"] == 2.0  # g (text) and b (0/1)
    assert metrics["columns_ordinal"] == 1.0  # s: 1.0 .. 5.0
    assert metrics["columns_continuous"] == 2.0
    assert "categorical columns (2): g, b" in result.output
    assert "ordinal columns (1): s" in result.output
    assert "continuous columns (2): x, y" in result.output
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0, shown.output


def test_a_column_missing_at_every_row_of_a_site_is_unobserved_there(tmp_path):
    """FedCDnv runs, the site not observing the column (warned, counted); FedAvg,
    which reads every column at every site, imputes them there and says so."""
    args = _sites(tmp_path, empty_at_second=("g", "s"))
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "fedcdnv", *args, "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "column 'g' is missing at every row of site 'h1'" in result.output
    assert "treated as unobserved there" in " ".join(result.output.split())
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["unobserved_columns_h1"] == 2.0 and metrics["unobserved_columns_h0"] == 0.0
    assert metrics["n_variables"] == 5.0  # still learned from the site observing them
    fedavg = runner.invoke(
        app,
        ["run", "fedavg", *args, "--set", "target=y", "--set", "rounds=1", "--quiet",
         "--out", str(tmp_path / "a")],
    )  # fmt: skip
    assert fedavg.exit_code == 0, fedavg.output
    said = " ".join(fedavg.output.split())
    assert "site 'h1' does not observe ['g', 's']: they are imputed at every row there" in said
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["unobserved_columns_h1"] == 2


def test_a_continuous_task_for_f_cms_names_the_column_and_the_fix(tmp_path):
    result = runner.invoke(
        app,
        ["run", "fcm", *_sites(tmp_path), "--set", "task=y", "--set", "concepts=[g]",
         "--quiet", "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "needs categorical or ordinal variables, but 'y' is continuous" in text
    assert "bin its values into a few classes" in text


def test_show_names_the_count_of_each_kind():
    from fedstruct.results.use import _data_source

    metrics = {"rows_h0": 10.0, "columns_categorical": 2.0, "columns_continuous": 3.0}
    text = _data_source({"sites": ["h0.csv"]}, metrics)
    assert text == "1 sites' own files: h0 (10 rows); columns: 2 categorical, 3 continuous"
