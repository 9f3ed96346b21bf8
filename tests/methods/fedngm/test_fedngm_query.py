"""``fedstruct query`` on strongly dependent continuous data (issue 49, item 9).

On pgmpy's ecoli70 the data's E[lacZ | lacA] rises from 0.13 to 3.42 over lacA's
range, and the query answered 2.14, 2.21, 1.60: message passing, the default then,
ran the learned conditionals of near-deterministic neighbours to a wrong fixed point.
The table here is that neighbourhood (ecoli70's linear-Gaussian CPDs around the lac
operon) at two sites of 400 rows.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.fl.artifact import load
from fedstruct.results.use import query
from fedstruct.runs.contract import execute

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def lac_table(n: int, seed: int) -> pd.DataFrame:
    """ecoli70's lac neighbourhood: pgmpy's CPDs (intercept, coefficients, noise sd),
    the parents outside it standard normal; lacY is lacA's near copy (noise sd 0.06)."""
    r = np.random.default_rng(seed)

    def noise(sd: float) -> np.ndarray:
        return r.normal(0.0, sd, n)

    ygce, dnak, ycep = r.normal(size=(3, n))
    asna = 0.349 + 0.798 * ygce + noise(0.091)
    cspg = 2.026 + noise(1.075)
    eutg = 1.265 + noise(0.691)
    laca = 0.447 + 0.272 * asna + 0.254 * cspg + noise(0.3)
    lacy = -0.115 - 0.204 * asna - 0.224 * cspg + 0.354 * eutg + 1.046 * laca + noise(0.06)
    lacz = 0.2 - 0.016 * asna + 1.368 * laca - 0.438 * lacy + noise(0.341)
    return pd.DataFrame(
        {
            "asnA": asna, "cspG": cspg, "eutG": eutg, "lacA": laca, "lacY": lacy, "lacZ": lacz,
            "b1583": 1.382 - 0.246 * laca + 0.342 * lacz + 0.241 * ycep + noise(1.109),
            "yaeM": 0.366 + 1.472 * cspg - 0.717 * laca + 0.72 * lacz + noise(0.656),
            "mopB": 0.036 + 0.896 * dnak - 0.059 * lacz + noise(0.314),
            "nuoM": -2.018 + 0.408 * lacy + noise(0.813),
        }
    )  # fmt: skip


@pytest.fixture(scope="module")
def lac_run(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    folder = tmp_path_factory.mktemp("lac")
    table = lac_table(800, seed=0)
    paths = []
    for k in range(2):
        paths.append(str(folder / f"site-{k + 1}.csv"))
        table.iloc[400 * k : 400 * (k + 1)].to_csv(paths[-1], index=False)
    out = folder / "run"
    execute("fedngm", [{"sites": paths}], out)
    return out, table


def _answers(out: Path, table: pd.DataFrame, inference: str | None) -> tuple[list, list]:
    """lacZ's answers at lacA's quantiles, and the warnings each query issued."""
    answers, notes = [], []
    for x in np.quantile(table.lacA, QUANTILES):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            answers.append(float(query(out, {"lacA": str(x)}, "lacZ", inference)["mean"][0]))
        notes.append([str(w.message) for w in seen])
    return answers, notes


def _linear(table: pd.DataFrame) -> np.ndarray:
    """The pooled data's E[lacZ | lacA] at lacA's quantiles (the table is Gaussian)."""
    x = np.quantile(table.lacA, QUANTILES)
    slope = table.lacA.corr(table.lacZ) * table.lacZ.std() / table.lacA.std()
    return table.lacZ.mean() + slope * (x - table.lacA.mean())


def test_the_default_inference_follows_strongly_dependent_evidence(lac_run):
    """Would fail with the old default (message passing): see the next test."""
    out, table = lac_run
    answers, notes = _answers(out, table, None)
    truth = _linear(table)
    assert np.all(np.diff(answers) > 0)  # rises with lacA, as the data do
    assert answers[-1] - answers[0] > 0.75 * (truth[-1] - truth[0])
    np.testing.assert_allclose(answers, truth, atol=0.35)
    assert not any(notes)
    # the check's yardstick: the sites' pooled correlations, saved with the model
    pooled = load(out).correlation_
    i, j = pooled.names.index("lacA"), pooled.names.index("lacZ")
    assert pooled.matrix[i, j] == pytest.approx(table.lacA.corr(table.lacZ), abs=0.03)


def test_message_passing_is_the_failure_and_its_answers_are_warned(lac_run):
    """The old default on the same model: far off (the reported failure), and every
    answer gets a line saying that it does not follow the evidence, with the
    gradient variant's answer."""
    out, table = lac_run
    answers, notes = _answers(out, table, "message")
    assert np.abs(np.asarray(answers) - _linear(table)).max() > 1.0
    for note in notes:
        assert len(note) == 1 and note[0].startswith("lacZ = ")
        assert "does not follow this evidence: the sites' pooled correlations" in note[0]
        assert "--inference gradient answers" in note[0]


def test_query_takes_the_inference_on_the_command_line(lac_run):
    out, table = lac_run
    x = f"{np.quantile(table.lacA, 0.95):.3f}"
    runner = CliRunner()
    ask = ["query", str(out), "--target", "lacZ", "--given", f"lacA={x}"]
    warned = runner.invoke(app, [*ask, "--inference", "message"])
    assert warned.exit_code == 0, warned.output
    assert "warning: lacZ = " in warned.output and "does not follow" in warned.output
    quiet = runner.invoke(app, ask)
    assert quiet.exit_code == 0 and "warning" not in quiet.output
    bad = runner.invoke(app, [*ask, "--inference", "mean"])
    assert bad.exit_code == 2
    assert bad.output == "error: unknown inference 'mean'; valid inferences: gradient, message\n"
