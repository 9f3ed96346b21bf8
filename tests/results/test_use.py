"""A run's saved model, used in a fresh process, predicts what the fitted model predicts.

For every method: a run (as ``fedstruct run`` makes it), then ``fedstruct predict``,
``sample``, ``query``, ``show`` or ``export`` in a new Python process; the output
must equal what the in-memory estimator gives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.images import LABEL, from_rows
from fedstruct.graphs.io import read_graph_with_weights
from fedstruct.runs import runnable
from fedstruct.runs.contract import execute

#: Every test here uses the commands' results from one fresh process (``used``).
pytestmark = pytest.mark.deploy

#: Runs each command line given as a JSON list, one after the other, in one process.
_RUNNER = """
import json, sys
from fedstruct.cli import app
for args in json.loads(sys.argv[1]):
    try:
        app(args)
    except SystemExit as exc:
        print(f"##exit {exc.code or 0}", flush=True)
        print(f"##exit {exc.code or 0}", file=sys.stderr, flush=True)
"""


class Done(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def cli(*commands: list[str]) -> list[Done]:
    """Each ``fedstruct`` command line of ``commands``, in one fresh Python process."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(commands)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outs, errs = done.stdout.split("##exit ")[:-1], done.stderr.split("##exit ")[:-1]
    codes = [int(part.split(maxsplit=1)[0]) for part in done.stdout.split("##exit ")[1:]]
    strip = [o.split("\n", 1)[1] if k else o for k, o in enumerate(outs)]
    errs = [e.split("\n", 1)[1] if k else e for k, e in enumerate(errs)]
    return [Done(c, o, e) for c, o, e in zip(codes, strip, errs, strict=True)]


def small_run(out: Path, method: str, settings: dict):
    """A small run of ``method``, as ``fedstruct run`` makes it; its fitted model."""
    outcome = execute(method, [settings], out)
    assert outcome.model is not None
    return outcome.model


def first_client_rows(method: str, chosen: dict) -> pd.DataFrame:
    entry = runnable(method)
    from fedstruct.runs.settings import apply_settings

    settings = apply_settings(entry.settings(), chosen, method=method)
    return entry.resolve(settings).clients()[0].rows.reset_index(drop=True)


def predict_args(out: Path, data: Path, *targets: str) -> list[str]:
    return ["predict", str(out), "--data", str(data), "--out", str(out.parent / "preds.csv"),
            *(a for t in targets for a in ("--target", t))]  # fmt: skip


def same_table(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == list(expected.columns)
    for column in expected.columns:
        np.testing.assert_allclose(
            got[column].to_numpy(dtype=float), expected[column].to_numpy(dtype=float),
            rtol=1e-12, atol=1e-12, err_msg=column,
        )  # fmt: skip


class Used(NamedTuple):
    """A method's run folder, fitted model, input rows and commands' results."""

    folder: Path
    model: object
    rows: pd.DataFrame
    done: list[Done]


def _prepare(
    method: str, settings: dict, root: Path
) -> tuple[Path, object, pd.DataFrame, list[list[str]]]:
    """Run ``method``, write its input file; the command lines that use the run."""
    folder = root / method
    model = small_run(folder / "run", method, settings)
    run, rows = folder / "run", first_client_rows(method, settings)
    if method in ("fedavg", "fcm"):
        rows = rows.head(50)
        if method == "fcm":
            rows = rows[list(model.features_)]
        rows.to_csv(folder / "rows.csv", index=False)
        return folder, model, rows, [predict_args(run, folder / "rows.csv")]
    if method == "cafe":
        rows = rows.head(40)
        images, labels = from_rows(rows, model.shape)
        np.savez(folder / "images.npz", images=images, labels=labels.astype(str))
        return folder, model, rows, [predict_args(run, folder / "images.npz")]
    if method == "fedngm":
        rows = rows.head(30)
        names = model.model_.names
        categorical = next(v for v in names if model.model_.schema.spec(v).is_categorical)
        evidence = next(v for v in names if v != categorical)
        rows.drop(columns=[names[0]]).to_csv(folder / "rows.csv", index=False)
        return folder, model, rows, [
            predict_args(run, folder / "rows.csv", names[0]),
            ["sample", str(run), "-n", "25", "--seed", "3", "--out", str(folder / "samples.csv")],
            ["query", str(run), "--target", categorical,
             "--given", f"{evidence}={float(rows[evidence].iloc[0])!r}"],
        ]  # fmt: skip
    return (
        folder,
        model,
        rows,
        [
            ["show", str(run), "--picture", str(folder / "graph.png")],
            ["export", str(run), "--format", "graphml", "--out", str(folder / "g.graphml")],
            predict_args(run, folder / "rows.csv"),
        ],
    )


@pytest.fixture(scope="module")
def used(tmp_path_factory, small_settings) -> dict[str, Used]:
    """Every method run here (``small_settings``); then every command that uses the
    runs, in ONE fresh process."""
    root = tmp_path_factory.mktemp("use")
    methods = ("fedavg", "fcm", "cafe", "fedngm", "fedcdnv", "fedcd")
    prepared = {m: _prepare(m, small_settings(m), root) for m in methods}
    results = iter(cli(*(c for *_, commands in prepared.values() for c in commands)))
    return {
        m: Used(folder, model, rows, [next(results) for _ in commands])
        for m, (folder, model, rows, commands) in prepared.items()
    }


def test_fedavg_predictions_from_the_saved_model(used):
    folder, model, rows, (predict,) = used["fedavg"]
    assert predict.returncode == 0, predict.stderr
    same_table(pd.read_csv(folder / "preds.csv"), model.prediction(rows).table())


def test_fcm_concept_and_task_predictions_from_the_saved_model(used):
    folder, model, rows, (predict,) = used["fcm"]
    assert predict.returncode == 0, predict.stderr
    got = pd.read_csv(folder / "preds.csv")
    assert set(model.spec_.nodes) <= set(got.columns)  # every concept and the task
    same_table(got, model.prediction(rows).table())


def test_cafe_predictions_of_an_image_file(used):
    folder, model, rows, (predict,) = used["cafe"]
    assert predict.returncode == 0, predict.stderr
    got = pd.read_csv(folder / "preds.csv")
    expected = model.prediction(rows.drop(columns=[LABEL])).table()
    same_table(got.drop(columns=["label_given"]), expected)
    _, labels = from_rows(rows, model.shape)
    assert got["label_given"].astype(str).tolist() == labels.astype(str).tolist()


def test_fedngm_predict_sample_and_query_from_the_saved_model(used):
    folder, model, rows, (predict, sample, query) = used["fedngm"]
    assert predict.returncode == sample.returncode == query.returncode == 0, predict.stderr
    names = model.model_.names
    target = names[0]
    expected = model.prediction(rows.drop(columns=[target]), [target]).table()
    same_table(pd.read_csv(folder / "preds.csv"), expected)
    # a site's own variable, which the global model does not read, is named and left out
    own = [c for c in rows.columns if c not in names]
    message = f"not read (the model has no such variable): {', '.join(own)}"
    assert not own or message in predict.stdout.replace("\n", "")
    config = model.config_  # the run's sampler and burn-in, not the defaults
    drawn = model.model_.sample(25, seed=3, sampler=config.sampler, burn_in=config.burn_in)
    same_table(pd.read_csv(folder / "samples.csv"), drawn)
    categorical = next(v for v in names if model.model_.schema.spec(v).is_categorical)
    evidence = next(v for v in names if v != categorical)
    value = float(rows[evidence].iloc[0])
    p = model.model_.predict_proba(pd.DataFrame({evidence: [value]}), categorical)[0]
    shown = [
        float(line.split("│")[2]) for line in query.stdout.splitlines() if line.count("│") == 3
    ]
    np.testing.assert_allclose(shown, p, rtol=1e-3)  # the table prints 4 digits


@pytest.mark.parametrize("method", ["fedcdnv", "fedcd"])
def test_graph_methods_show_and_export_the_learned_graph(used, method):
    folder, model, _, (show, export, predict) = used[method]
    assert show.returncode == export.returncode == 0, show.stderr + export.stderr
    assert f"{model.graph_.n_edges} edges" in show.stdout
    assert (folder / "graph.png").stat().st_size > 10_000
    graph, weights = read_graph_with_weights(folder / "g.graphml")
    assert graph == model.graph_
    if method == "fedcd":  # each edge keeps its belief σ(γ)σ(θ)
        p = model.beliefs_.edge_probability
        assert len(weights) == graph.n_edges
        for (a, b), w in weights.items():
            assert w == pytest.approx(p[graph.index(a), graph.index(b)])
    assert predict.returncode == 2
    assert "learns a graph, not a model that predicts" in predict.stderr


# ------------------------------------------------------------- issue 29
def invoke(*args: str):
    from typer.testing import CliRunner

    from fedstruct.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


def test_sample_of_more_rows_than_memory_holds_is_one_line(used):
    """issue 29, item 7: `sample -n 100000000000` was a MemoryError's traceback."""
    folder = used["fedngm"].folder
    code, text = invoke("sample", str(folder / "run"), "-n", "100000000000",
                        "--out", str(folder / "huge.csv"))  # fmt: skip
    assert code == 2, text
    assert "-n 100,000,000,000 needs about" in text and "GiB of memory" in text
    assert "draw at most -n" in text and "Traceback" not in text
    assert not (folder / "huge.csv").exists()


def test_sample_and_export_refuse_an_existing_out_and_the_run_s_files(used):
    """issue 29, item 8: `sample`/`export --out` overwrote any file."""
    ngm, pag = used["fedngm"].folder, used["fedcdnv"].folder
    kept = ngm / "kept.csv"
    kept.write_text("keep me\n")
    code, text = invoke("sample", str(ngm / "run"), "-n", "5", "--out", str(kept))
    assert code == 2 and "exists; choose another file, or add --overwrite" in text
    assert kept.read_text() == "keep me\n"
    code, text = invoke("sample", str(ngm / "run"), "-n", "5", "--out", str(kept), "--overwrite")
    assert code == 0, text
    assert len(pd.read_csv(kept)) == 5
    graph = pag / "run" / "graph.json"
    before = graph.read_bytes()
    code, text = invoke("export", str(pag / "run"), "--format", "json", "--out", str(graph),
                        "--overwrite")  # fmt: skip
    assert code == 2 and f"--out {graph} is a file of the run in {pag / 'run'}" in text
    assert graph.read_bytes() == before


def test_export_without_out_writes_to_standard_output(used):
    """issue 29, item 11: as Unix tools do."""
    folder = used["fedcdnv"].folder / "run"
    before = sorted(p.name for p in folder.iterdir())
    code, text = invoke("export", str(folder), "--format", "dot")
    assert code == 0, text
    assert text.startswith("// fedstruct.graph version 1") and text.rstrip().endswith("}")
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written


@pytest.mark.parametrize(
    ("method", "learned"),
    [("fedcdnv", "a PAG (edge marks, no probability tables"),
     ("fedcd", "a DAG whose conditionals are neural networks (ENCO)")],
)  # fmt: skip
def test_export_bif_says_what_this_method_learned(used, method, learned):
    """issue 29, item 10: a FedCDnv run spoke of "FED-CD's and F-CMs' conditionals"."""
    code, text = invoke("export", str(used[method].folder / "run"), "--format", "bif")
    assert code == 2
    assert f"this {method} run learned {learned}" in text and "F-CMs'" not in text


def test_show_explains_the_edge_marks_under_its_table(used):
    """issue 29, item 11: the marks were explained only in the picture."""
    _, model, _, (show, *_) = used["fedcdnv"]
    tokens = {str(edge).split()[1] for edge in model.graph_.edges()}
    text = " ".join(show.stdout.split())
    assert "marks (read 'A mark B'; 'o' is a mark the data leave open):" in text
    meanings = {"<->": "A <-> B: neither is claimed to cause the other",
                "o->": "A o-> B: B does not cause A",
                "-->": "A --> B: A causes B", "o-o": "A o-o B: linked"}  # fmt: skip
    assert tokens & set(meanings)
    for token in tokens & set(meanings):
        assert meanings[token] in text
    mirrored = {"<--": "-->", "<-o": "o->", "--o": "o--"}
    for token in tokens & set(mirrored):  # printed the other way round: explained too
        assert f"A {token} B reads as B {mirrored[token]} A" in text
