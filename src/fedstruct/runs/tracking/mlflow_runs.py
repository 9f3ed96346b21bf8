"""``--track mlflow``: a run as one MLflow run (MLflow's client, ``mlflow-skinny``).

The tracking URI is ``--track-uri``, else ``$MLFLOW_TRACKING_URI``, else a local store in
the current folder: ``mlflow.db`` (SQLite) with the artifacts under ``mlruns/``, MLflow's
own default (MLflow 3 refuses a plain file store unless ``MLFLOW_ALLOW_FILE_STORE`` is
set); any local SQLite store keeps its artifacts in ``mlruns/`` beside its database.
Every run goes to the experiment :data:`EXPERIMENT`, named after its folder and tagged
with its method, backend and folder; its parameters are ``config.json``'s settings (a
list or mapping as JSON), ``method``, ``backend`` and the deployment options.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fedstruct.errors import ConfigError
from fedstruct.runs.control import Tracking

__all__ = [
    "EXPERIMENT",
    "MLflowTracker",
    "check",
    "metric_name",
    "run_params",
    "start",
    "tracking_uri",
]

#: The MLflow experiment every fedstruct run is logged to.
EXPERIMENT = "fedstruct"
#: Seconds to wait for a tracking server to accept a connection.
CONNECT_TIMEOUT = 10.0
#: MLflow's limits: parameters and metrics in one batch, characters of a parameter.
_PARAMS_PER_BATCH, _METRICS_PER_BATCH, _PARAM_LENGTH = 100, 1000, 6000
#: The run statuses MLflow records, by how the fedstruct run ended.
_STATUS = {"finished": "FINISHED", "stopped": "KILLED", "failed": "FAILED"}


def tracking_uri(tracking: Tracking) -> str:
    """The tracking URI of ``tracking``: ``--track-uri``, else ``$MLFLOW_TRACKING_URI``,
    else ``sqlite:///<current folder>/mlflow.db``."""
    given = tracking.uri or os.environ.get("MLFLOW_TRACKING_URI")
    return given or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def _client(uri: str) -> Any:
    """MLflow's client of ``uri``.

    Raises
    ------
    ConfigError
        If MLflow (or what its local store needs) is not installed.
    """
    return _client_class()(tracking_uri=uri)


def _client_class() -> Any:
    """MLflow's ``MlflowClient`` (MLflow imported now).

    Raises
    ------
    ConfigError
        If MLflow is not installed.
    """
    from fedstruct.runs.tracking import missing_extra

    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise missing_extra("mlflow", exc) from None
    return MlflowClient


@contextmanager
def _quiet() -> Iterator[None]:
    """Keep MLflow's and Alembic's INFO lines (a new store's tables) off the screen
    (MLflow is imported first: its import sets its loggers' levels).

    Raises
    ------
    ConfigError
        If MLflow is not installed.
    """
    _client_class()
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _reach(uri: str) -> None:
    """Connect to an HTTP(S) tracking server's port.

    Raises
    ------
    ConfigError
        If nothing answers there.
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"--track-uri {uri}: no MLflow tracking server answers there ({reason}); start "
            "it ('mlflow server') or give another --track-uri"
        ) from None


def check(tracking: Tracking, out: Path) -> None:
    """Import MLflow's client and reach the store (a local store is created).

    Raises
    ------
    ConfigError
        If the extra is not installed, or the store cannot be reached or used.
    """
    uri = tracking_uri(tracking)
    _client_class()  # a missing extra first
    _reach(uri)
    with _quiet():  # the client makes a new local store's tables as it starts
        client = _client(uri)
        try:
            client.search_experiments(max_results=1)
        except ImportError as exc:
            from fedstruct.runs.tracking import missing_extra

            raise missing_extra("mlflow", exc) from None
        except Exception as exc:
            raise _unusable(uri, exc) from None


def _unusable(uri: str, exc: Exception) -> ConfigError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    first = reason if len(reason) <= 300 else reason[:297] + "..."
    return ConfigError(f"--track-uri {uri}: MLflow cannot use it ({first}); give another URI")


def start(tracking: Tracking, out: Path, config: Mapping[str, Any]) -> MLflowTracker:
    """A new MLflow run for the run in ``out``, its parameters and tags logged.

    Raises
    ------
    ConfigError
        As :func:`check`.
    """
    uri = tracking_uri(tracking)
    with _quiet():
        client = _client(uri)
        try:
            experiment = client.get_experiment_by_name(EXPERIMENT)
            experiment_id = (
                experiment.experiment_id
                if experiment is not None
                else client.create_experiment(EXPERIMENT, artifact_location=_artifacts(uri))
            )
            tags = {
                "fedstruct.method": str(config.get("method")),
                "fedstruct.backend": str(config.get("backend")),
                "fedstruct.folder": str(out.resolve()),
            }
            run = client.create_run(experiment_id, run_name=out.resolve().name, tags=tags)
        except Exception as exc:
            raise _unusable(uri, exc) from None
    tracker = MLflowTracker(client, run.info.run_id, uri)
    tracker.log_params(run_params(config))
    return tracker


def _artifacts(uri: str) -> str | None:
    """Where a new experiment of a local SQLite store keeps its artifacts: ``mlruns/``
    beside the database (MLflow's default would be the current folder's); ``None`` (the
    store's choice) for any other store."""
    parts = urlsplit(uri)
    if parts.scheme != "sqlite" or parts.netloc or len(parts.path) < 2:
        return None
    database = Path(parts.path[1:]).absolute()  # what follows sqlite:/// (relative or not)
    return (database.parent / "mlruns").as_uri()


def run_params(config: Mapping[str, Any]) -> dict[str, str]:
    """The parameters of a run's ``config.json``: its settings, ``method``, ``backend``,
    ``fedstruct_version`` and its deployment options (``deployment.superlink``, ...);
    a list or mapping as JSON, a value longer than MLflow keeps cut short."""
    params: dict[str, Any] = dict(config.get("settings", {}))
    for key in ("method", "backend", "fedstruct_version"):
        if key in config:
            params[key] = config[key]
    for key, value in dict(config.get("deployment") or {}).items():
        params[f"deployment.{key}"] = value
    texts = {}
    for key, value in params.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        texts[key] = text if len(text) <= _PARAM_LENGTH else text[: _PARAM_LENGTH - 3] + "..."
    return texts


def metric_name(name: str) -> str:
    """``name`` with the characters MLflow refuses in a metric's name replaced by ``_``."""
    return re.sub(r"[^\w.\- /:]", "_", name)


class MLflowTracker:
    """One MLflow run (:class:`~fedstruct.runs.tracking.Tracker`)."""

    def __init__(self, client: Any, run_id: str, uri: str) -> None:
        self.client = client
        self.run_id = run_id
        self.where = f"MLflow run {run_id} (experiment {EXPERIMENT}) at {uri}"

    def log_params(self, params: Mapping[str, str]) -> None:
        """Log ``params`` in MLflow's batches."""
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in params.items()]
        for k in range(0, len(items), _PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=items[k : k + _PARAMS_PER_BATCH])

    def _log_metrics(self, values: Mapping[str, float], step: int, prefix: str = "") -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        items = [Metric(metric_name(prefix + k), float(v), stamp, step) for k, v in values.items()]
        for k in range(0, len(items), _METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=items[k : k + _METRICS_PER_BATCH])

    def log_round(self, rnd: int, values: Mapping[str, float]) -> None:
        """Log round ``rnd``'s numbers as ``round/NAME`` at step ``rnd``."""
        from fedstruct.runs.tracking import ROUND_PREFIX

        self._log_metrics(values, rnd, ROUND_PREFIX)

    def finish(self, metrics: Mapping[str, float], last_round: int, files: Sequence[Path]) -> None:
        """Log the final metrics (as ``NAME``, step 0) and the files as artifacts (a
        folder with its files under its name)."""
        self._log_metrics(metrics, 0)
        for path in files:
            if path.is_dir():
                self.client.log_artifacts(self.run_id, str(path), artifact_path=path.name)
            else:
                self.client.log_artifact(self.run_id, str(path))

    def end(self, status: str) -> None:
        """End the MLflow run as ``FINISHED``, ``KILLED`` (stopped) or ``FAILED``."""
        self.client.set_terminated(self.run_id, _STATUS.get(status, "FAILED"))
