"""issue 53, item 5: ``fedstruct run ... --track mlflow|tensorboard`` logs the settings,
every round's numbers (equal to history.json's), the final metrics (metrics.json's) and
the run's files; a missing extra and an unreachable tracking URI are one line and exit 2
before the run writes anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.runs.control import Tracking
from fedstruct.runs.progress import ProgressFile, numeric_values
from fedstruct.runs.tracking import EXTRA, _Follower, _Logged

runner = CliRunner()
SMALL = [
    "--network", "asia", "--clients", "3", "--rounds", "3",
    "--set", "samples=600", "--set", "test_samples=200", "--quiet",
]  # fmt: skip


def invoke(*args: str):
    return runner.invoke(app, list(args))


def rounds_of(history: list[dict], key: str) -> list[tuple[int, float]]:
    return [(record["round"], record[key]) for record in history if key in record]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """One local MLflow store for the module's runs (a new store's tables take seconds)."""
    pytest.importorskip("mlflow")
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def tracked_runs(uri: str, out: Path) -> list:
    """The MLflow runs of the run folder ``out``, oldest first."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("fedstruct")
    runs = client.search_runs(
        [experiment.experiment_id], f"tags.`fedstruct.folder` = '{out.resolve()}'"
    )
    return sorted(runs, key=lambda r: r.info.start_time)


def test_a_local_run_tracked_in_mlflow_holds_its_settings_rounds_metrics_and_files(tmp_path, store):
    """MLflow's client reads back the parameters, every round's series equal to
    history.json's, metrics.json's values and the files (not the checkpoint), which
    sit in mlruns/ beside the store's database."""
    from mlflow import MlflowClient

    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--out", str(out), "--track", "mlflow",
                    "--track-uri", store)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "tracked: MLflow run" in result.output
    (run,) = tracked_runs(store, out)
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    assert run.data.tags["fedstruct.method"] == "fedavg"
    params = run.data.params
    assert params["clients"] == "3" and params["rounds"] == "3" and params["samples"] == "600"
    assert params["method"] == "fedavg" and params["backend"] == "local"
    config = (out / "config.json").read_text()
    assert "track" not in config and "mlflow" not in config  # not a setting
    client = MlflowClient(store)
    history = json.loads((out / "history.json").read_text())
    keys = {k for record in history for k in numeric_values(record)}
    assert {"test_accuracy", "train_loss", "clients_answered"} <= keys
    for key in keys:
        logged = client.get_metric_history(run.info.run_id, f"round/{key}")
        assert sorted((m.step, m.value) for m in logged) == rounds_of(history, key), key
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: run.data.metrics[k] for k in metrics} == metrics
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.json", "metrics.json", "history.json", "model.safetensors"} <= artifacts
    assert "checkpoint.safetensors" not in artifacts and "run.lock" not in artifacts
    database = Path(store.removeprefix("sqlite:///"))
    assert run.info.artifact_uri.startswith((database.parent / "mlruns").as_uri())


def test_the_default_mlflow_store_is_mlflow_db_in_the_current_folder(tmp_path, monkeypatch):
    from fedstruct.runs.tracking.mlflow_runs import tracking_uri

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(Tracking("mlflow")) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert tracking_uri(Tracking("mlflow")) == "http://tracking:5000"
    assert tracking_uri(Tracking("mlflow", "sqlite:///x.db")) == "sqlite:///x.db"


def test_a_stopped_run_resumed_with_tracking_logs_every_round(tmp_path, store):
    """A resumed run is a new MLflow run whose series hold every round of history.json
    (those of the first session too), and a stopped run's tracked run ends KILLED."""
    from mlflow import MlflowClient

    out = tmp_path / "run"
    track = ["--track", "mlflow", "--track-uri", store]
    stopped = invoke("run", "fedavg", *SMALL, "--out", str(out), "--stop-after", "1", *track)
    assert stopped.exit_code == 0, stopped.output
    resumed = invoke("run", "fedavg", "--resume", str(out), "--quiet", *track)
    assert resumed.exit_code == 0, resumed.output
    first, second = tracked_runs(store, out)
    assert first.info.status == "KILLED" and second.info.status == "FINISHED"
    history = json.loads((out / "history.json").read_text())
    logged = MlflowClient(store).get_metric_history(second.info.run_id, "round/test_accuracy")
    assert sorted((m.step, m.value) for m in logged) == rounds_of(history, "test_accuracy")
    assert len(history) == 3


def test_a_local_run_tracked_in_tensorboard_holds_its_rounds_and_metrics(tmp_path):
    """TensorBoard's own reader finds every round's numbers (double precision: equal to
    history.json's), the final metrics at the last round's step and the config."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--out", str(out), "--track", "tensorboard")
    assert result.exit_code == 0, result.output
    (events,) = (out / "tensorboard").iterdir()
    assert events.name.startswith("run-")
    assert f"tracked: TensorBoard events in {events}" in result.output.replace("\n", "")
    reader = EventAccumulator(str(events))
    reader.Reload()

    def series(tag: str) -> list[tuple[int, float]]:
        return [
            (e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in reader.Tensors(tag)
        ]

    history = json.loads((out / "history.json").read_text())
    for key in ("test_accuracy", "train_loss", "clients_answered"):
        assert sorted(series(f"round/{key}")) == rounds_of(history, key)
    metrics = json.loads((out / "metrics.json").read_text())
    assert series("test_accuracy") == [(3, metrics["test_accuracy"])]
    assert series("bytes_up") == [(3, metrics["bytes_up"])]
    assert "config/text_summary" in reader.Tags()["tensors"]


@pytest.mark.parametrize(("kind", "module"), [("mlflow", "mlflow"), ("tensorboard", "tensorboard")])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, monkeypatch, kind, module):
    """Without the extra's package the run stops before writing anything, in one line
    that says how to install it."""
    monkeypatch.setitem(sys.modules, module, None)  # `import mlflow` now fails
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--out", str(out), "--track", kind)
    assert result.exit_code == 2
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and EXTRA in line and f"--track {kind}" in line
    assert not out.exists()


def test_an_unreachable_tracking_uri_is_one_line_before_the_run(tmp_path, store):
    out = tmp_path / "run"
    uri = "http://127.0.0.1:1"
    result = invoke("run", "fedavg", *SMALL, "--out", str(out), "--track", "mlflow",
                    "--track-uri", uri)  # fmt: skip
    assert result.exit_code == 2
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    assert f"--track-uri {uri}: no MLflow tracking server answers there" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--track-uri", "x.db"], "--track-uri says where --track logs the run"),
        (["--track", "wandb"], "Invalid value for '--track'"),
        (["--track", "tensorboard", "--track-uri", "s3://bucket/x"], "a local folder"),
    ],
)
def test_bad_tracking_options_leave_no_folder(tmp_path, args, message):
    if "tensorboard" in args:
        pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    result = invoke("run", "fedavg", *SMALL, "--out", str(out), *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


class _Recorder:
    where = "memory"

    def __init__(self) -> None:
        self.rounds: list[tuple[int, dict]] = []

    def log_round(self, rnd, values):
        self.rounds.append((rnd, dict(values)))


def _report(rnd: int, record: dict):
    from fedstruct.fl.rounds import RoundReport

    return RoundReport(rnd, 3, rnd == 3, ("a", "b"), ("a",), 10 * rnd, 5 * rnd, 1.0, record)


def test_the_follower_logs_each_new_round_once_and_skips_an_earlier_sessions_file(tmp_path):
    """What the tracking thread does at each look, driven by hand: the progress file a
    previous session left is not logged again, each new round is logged once, and the
    end's history logs only what was not logged with the same value."""
    write = ProgressFile(tmp_path)
    write(_report(1, {"round": 1, "loss": 0.5, "site": "a"}))  # an earlier session's
    recorder = _Recorder()
    logged = _Logged(recorder)
    follower = _Follower(tmp_path, logged)
    follower.poll()
    assert recorder.rounds == []
    write(_report(2, {"round": 2, "loss": 0.25, "ok": True}))
    follower.poll()
    follower.poll()
    assert recorder.rounds == [(2, {"round": 2, "loss": 0.25, "ok": 1.0})]
    history = [{"round": 1, "loss": 0.5}, {"round": 2, "loss": 0.25, "shd": 3.0}]
    assert logged.history(history) == 2
    assert recorder.rounds[1:] == [(1, {"round": 1, "loss": 0.5}), (2, {"shd": 3.0})]


def test_an_unknown_tracker_is_refused():
    with pytest.raises(ConfigError, match="--track wandb: choose one of mlflow, tensorboard"):
        Tracking("wandb")
