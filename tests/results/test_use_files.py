"""A model loaded from a run on a user's files reads data frames as ``fedstruct predict``
reads that file (the saved codebook: level names in) and answers in level names.

For every predicting method, a tiny run on the example sites with *text* labels (so
that a level's name is never its code), then ``load(DIR).prediction/predict/score`` on a
held-out file must equal what ``fedstruct predict DIR --data FILE`` writes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import fedstruct
from fedstruct.cli import app
from fedstruct.data.images import LABEL, read_image_site, to_rows
from fedstruct.errors import DataError
from fedstruct.results.use import predict_file
from fedstruct.runs.contract import execute

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Concept and task labels 0/1 written as words (sorted: "absent" is code 0).
PRESENCE = {0: "absent", 1: "present"}
#: Self-rated health 0..3 as words, sorted so that no word's code is its number.
HEALTH = {0: "poor", 1: "fair", 2: "good", 3: "excellent"}


def cli_predictions(run: Path, data: Path, *targets: str) -> pd.DataFrame:
    """What ``fedstruct predict RUN --data DATA`` writes."""
    out = run.parent / "preds.csv"
    result = CliRunner().invoke(app, [
        "predict", str(run), "--data", str(data), "--out", str(out),
        *(a for t in targets for a in ("--target", t)),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return pd.read_csv(out, keep_default_na=False)


def same_table(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal columns; states compared as text, probabilities as numbers."""
    assert list(got.columns) == list(expected.columns)
    for column in expected.columns:
        if column.startswith("P("):
            np.testing.assert_allclose(got[column].to_numpy(float),
                                       expected[column].to_numpy(float), atol=1e-9)  # fmt: skip
        else:
            assert got[column].astype(str).tolist() == expected[column].astype(str).tolist()


def accuracy(predicted: pd.Series, truth: pd.Series) -> float:
    return float(np.mean(predicted.astype(str).to_numpy() == truth.astype(str).to_numpy()))


# ------------------------------------------------------------------- FedAvg
def test_fedavg_from_files_predicts_and_scores_by_level_name(tmp_path):
    sites = [str(EXAMPLES / "asia-task" / f"site-{k}.csv") for k in (1, 2, 3)]
    run = tmp_path / "run"
    execute("fedavg", [{"sites": sites, "target": "dysp", "rounds": 2}], run)
    held_out = tmp_path / "held-out.csv"
    pd.read_csv(sites[2]).head(120).to_csv(held_out, index=False)
    frame = pd.read_csv(held_out)
    expected = cli_predictions(run, held_out)

    model = fedstruct.load(run)
    assert set(model.predict(frame)) <= {"no", "yes"}  # level names, not codes
    assert model.predict(frame).tolist() == expected["dysp"].tolist()
    same_table(model.prediction(frame).table(), expected)
    assert model.score(frame) == pytest.approx(accuracy(expected["dysp"], frame["dysp"]))
    assert model.score(frame) > 0.6  # dysp from its parents (about 0.85)
    np.testing.assert_allclose(model.predict_proba(frame)[:, 1], expected["P(dysp=yes)"])


def test_fedavg_from_files_names_a_level_it_never_saw(tmp_path):
    sites = [str(EXAMPLES / "asia-task" / f"site-{k}.csv") for k in (1, 2, 3)]
    run = tmp_path / "run"
    execute("fedavg", [{"sites": sites, "target": "dysp", "rounds": 1}], run)
    frame = pd.read_csv(sites[0]).head(5)
    frame.loc[0, "smoke"] = "sometimes"
    with pytest.raises(DataError, match="sometimes"):
        fedstruct.load(run).predict(frame)


def test_fedavg_regression_predicts_new_rows_with_the_saved_statistics(tmp_path):
    """The diabetes hospitals (5% of values missing): the run's federated statistics
    are saved with the model and encode new rows, holes included; a row predicted alone
    gets the value it gets among others (nothing is re-estimated from the new rows)."""
    sites = [str(EXAMPLES / "diabetes" / f"hospital-{k}.csv") for k in (1, 2, 3, 4)]
    run = tmp_path / "run"
    execute("fedavg", [{"sites": sites, "target": "progression", "rounds": 3, "hidden": 0}], run)
    pooled = pd.concat([pd.read_csv(p) for p in sites])
    model = fedstruct.load(run)
    bmi = model.statistics_.columns.continuous.index("bmi")
    assert model.statistics_.mean[bmi] == pytest.approx(pooled["bmi"].mean(), rel=1e-12)
    assert model.statistics_.variance[bmi] == pytest.approx(pooled["bmi"].var(ddof=0), rel=1e-9)
    new = tmp_path / "new.csv"
    frame = pooled.head(40).drop(columns="progression")
    frame.to_csv(new, index=False)
    assert frame.isna().any().any()
    expected = cli_predictions(run, new)
    np.testing.assert_allclose(model.predict(frame), expected["progression"], rtol=1e-6)
    alone = model.predict(frame.iloc[[7]])[0]
    assert alone == pytest.approx(model.predict(frame)[7], rel=1e-6)
    assert 0.2 < model.score(pooled) < 1  # R² on every row


# -------------------------------------------------------------------- F-CMs
def _concept_sites(folder: Path) -> Path:
    """The asia-concepts federation with its concept and task labels as words."""
    shutil.copytree(EXAMPLES / "asia-concepts", folder)
    for site in folder.glob("site-*.csv"):
        frame = pd.read_csv(site)
        labels = [c for c in frame.columns if not c.startswith("x")]
        frame[labels] = frame[labels].apply(lambda column: column.map(PRESENCE))
        frame.to_csv(site, index=False)
    return folder / "federation.yaml"


def test_fcm_from_files_scores_and_predicts_by_level_name(tmp_path):
    manifest = _concept_sites(tmp_path / "sites")
    run = tmp_path / "run"
    execute("fcm", [{"manifest": str(manifest), "rounds": 2, "clients_per_round": 3}], run)
    held_out = tmp_path / "held-out.csv"
    pd.read_csv(tmp_path / "sites" / "site-2.csv").head(150).to_csv(held_out, index=False)
    frame = pd.read_csv(held_out)
    expected = cli_predictions(run, held_out)

    model = fedstruct.load(run)
    assert set(model.predict(frame)) <= set(PRESENCE.values())
    assert model.predict(frame).tolist() == expected["dysp"].tolist()
    same_table(model.prediction(frame).table(), expected)
    scores = model.evaluate(frame)
    assert model.score(frame) == scores["task_accuracy"]
    assert scores["task_accuracy"] == pytest.approx(accuracy(expected["dysp"], frame["dysp"]))
    concepts = [c for c in frame.columns if c in model.cardinalities and c != "dysp"]
    by_cli = np.mean([accuracy(expected[c], frame[c]) if c in expected else 0.5
                      for c in concepts])  # fmt: skip
    assert scores["concept_accuracy"] == pytest.approx(by_cli)
    assert scores["task_accuracy"] > 0.5 and scores["concept_accuracy"] > 0.5

    # inputs standardised with the federated statistics: a missing input is imputed
    # as in training (it used to be refused as if the model imputed nothing)
    holey = tmp_path / "holey.csv"
    frame.assign(x3=frame["x3"].mask(frame.index % 4 == 0)).to_csv(holey, index=False)
    (tmp_path / "preds.csv").unlink()
    gappy = cli_predictions(run, holey)
    assert len(gappy) == len(frame) and gappy["dysp"].isin(list(PRESENCE.values())).all()
    assert (gappy["dysp"] == expected["dysp"])[frame.index % 4 != 0].all()


# ------------------------------------------------------------------- FedNGM
def _health_sites(folder: Path) -> list[str]:
    """The health sub-populations with self-rated health as words."""
    folder.mkdir()
    paths = []
    for name in ("free-care", "poor-health", "deductible"):
        frame = pd.read_csv(EXAMPLES / "health" / f"{name}.csv")
        frame["health"] = frame["health"].map(HEALTH)
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(str(folder / f"{name}.csv"))
    return paths


def test_fedngm_from_files_predicts_level_names(tmp_path):
    sites = _health_sites(tmp_path / "sites")
    run = tmp_path / "run"
    execute("fedngm", [{"sites": sites, "epochs": 5, "rounds": 1}], run)
    held_out = tmp_path / "held-out.csv"
    pd.read_csv(sites[0]).head(80).drop(columns=["health"]).to_csv(held_out, index=False)
    frame = pd.read_csv(held_out)
    expected = cli_predictions(run, held_out, "health")

    model = fedstruct.load(run)
    got = model.prediction(frame, ["health"])
    assert set(got.states["health"]) <= set(HEALTH.values())
    assert sorted(got.probabilities["health"].columns) == sorted(HEALTH.values())
    same_table(got.table(), expected)


# --------------------------------------------------------------------- CAFE
def _digit_sites(folder: Path) -> list[str]:
    """The digits sites as ``.npz`` files whose classes are words."""
    folder.mkdir()
    words = "zero one two three four five six seven eight nine".split()
    paths = []
    for name in ("clinic-1", "clinic-2", "clinic-3.npz"):
        site = read_image_site(EXAMPLES / "digits" / name)
        labels = np.array([words[int(label)] for label in site.labels])
        path = folder / f"{Path(name).stem}.npz"
        np.savez(path, images=(site.images * 255).round().astype(np.uint8), labels=labels)
        paths.append(str(path))
    return paths


def test_cafe_from_files_predicts_and_scores_class_names(tmp_path):
    sites = _digit_sites(tmp_path / "sites")
    run = tmp_path / "run"
    execute("cafe", [{"sites": sites, "rounds": 1, "local_epochs": 1}], run)
    expected = cli_predictions(run, Path(sites[2]))
    site = read_image_site(sites[2])
    rows = to_rows(site.images, np.zeros(site.n_images, dtype=np.int64))
    rows[LABEL] = np.asarray(site.labels)  # the class names, as the file gives them

    model = fedstruct.load(run)
    assert model.predict(rows).tolist() == expected[LABEL].tolist()
    same_table(model.prediction(rows).table(), expected.drop(columns=["label_given"]))
    assert model.score(rows) == pytest.approx(accuracy(expected[LABEL], expected["label_given"]))


def test_predict_file_and_prediction_share_one_reading(tmp_path):
    """The CLI's table is the estimator's own prediction table (one code path)."""
    sites = [str(EXAMPLES / "asia-task" / f"site-{k}.csv") for k in (1, 2, 3)]
    run = tmp_path / "run"
    execute("fedavg", [{"sites": sites, "target": "dysp", "rounds": 1}], run)
    table, unread = predict_file(run, sites[1])
    same_table(table, fedstruct.load(run).prediction(pd.read_csv(sites[1])).table())
    assert unread == []
