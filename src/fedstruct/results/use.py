"""Using what a run saved: predict, sample, query, show and export (docs/artifacts.md).

Every function takes a run folder (the ``--out`` of ``fedstruct run``), loads the
fitted estimator from its files (:func:`~fedstruct.fl.artifact.load`) and
works with the names a user knows: a table is read with the codebook the run's sites
were encoded with (``model.json``'s ``data``: level names in, level names out) and
its columns are checked against the model's variables; images are read as a site's
images are (a folder ``CLASS/*.png`` or an ``.npz``).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from fedstruct.data.images import LABEL, read_image_site, to_rows
from fedstruct.data.sites import read_table
from fedstruct.errors import ArtifactError, ConfigError, DataError, FedstructWarning
from fedstruct.files import parse_json, read_text
from fedstruct.fl.artifact import load
from fedstruct.runs.saved_graphs import (
    EXPORT_FORMATS,
    export_graph,
    run_files,
    saved_graph,
    saved_graphs,
)
from fedstruct.runs.settings import SEED

if TYPE_CHECKING:  # imported where used: export loads no estimator
    from fedstruct.estimators import FederatedEstimator, Predictor

__all__ = [
    "EXPORT_FORMATS",
    "RunSummary",
    "export_graph",
    "predict_file",
    "query",
    "run_files",
    "run_summary",
    "sample",
    "saved_graph",
    "saved_graphs",
]


# ---------------------------------------------------------------- predict
def predict_file(
    folder: str | Path, data: str | Path, targets: Sequence[str] = ()
) -> tuple[pd.DataFrame, list[str]]:
    """The saved model's predictions for the rows of ``data``: one column per predicted
    variable (its state, by level name where the run's files named levels) and, for
    a categorical one, ``P(VAR=STATE)`` per state; for images (a CAFE run on image
    sites), the file's own label too (``label_given``). Also the columns of ``data``
    the model does not read (a FedNGM site's own variables), which were left out.

    Raises
    ------
    ArtifactError
        If the folder holds no model, the model only learned a graph, or ``data``'s
        columns do not match the model's (naming the missing and the extra ones).
    DataError
        If ``data`` cannot be read or holds a level the run's files never had.
    """
    from fedstruct.estimators.prediction import Predictor, not_a_predictor

    model = load(folder)
    if not isinstance(model, Predictor):
        raise ArtifactError(not_a_predictor(model.method))
    shape = model.image_shape()
    if shape is not None:  # images; a table's rows as below
        rows, given = _image_rows(shape, Path(data))
        table = model.prediction(rows, list(targets) or None).table()
        return table.assign(label_given=given), []
    try:
        columns = model.input_columns()
    except ConfigError as exc:
        raise ArtifactError(str(exc)) from None
    frame = read_table(data)
    prediction = model.prediction(frame, list(targets) or None, source=Path(data))
    return prediction.table(), columns.unread(list(frame.columns))


def _image_rows(shape: tuple[int, int, int], path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    site = read_image_site(path)
    if site.shape != shape:
        raise ArtifactError(
            f"{path}: its images are {site.shape} (channels, height, width), the model's "
            f"are {shape}; resize them as the run's sites were"
        )
    rows = to_rows(site.images, np.zeros(site.n_images, dtype=np.int64))
    return rows.drop(columns=[LABEL]), np.asarray(site.labels)


def _level_names(model: Predictor, variable: str) -> Sequence[str] | None:
    codebook = model.codebook()
    return None if codebook is None else codebook.levels(variable)


def _name(names: Sequence[str] | None, state: Any) -> Any:
    if names is None:
        return state
    code = int(state)
    return names[code] if 0 <= code < len(names) else state


# ------------------------------------------------------------ sample, query
def _joint_model(folder: str | Path, what: str) -> Any:
    """The model of the run in ``folder``, which ``what`` (sample, query) needs to be a
    joint distribution of its variables (a :class:`~fedstruct.estimators.JointModel`).

    Raises
    ------
    ArtifactError
        For another kind of model.
    """
    from fedstruct.estimators.sampling import JointModel, not_a_joint_model

    model = load(folder)
    if not isinstance(model, JointModel):
        raise ArtifactError(not_a_joint_model(folder, model.method, what))
    return model


def sample(folder: str | Path, n: int, *, seed: int = 0) -> pd.DataFrame:
    """``n`` rows drawn from a FedNGM run's global model (Gibbs sampling, §2.3), with
    level names where the run's files named levels; with the run's own ``sampler``
    and ``burn_in`` (before, always the defaults, whatever the run set).

    Raises
    ------
    ArtifactError
        If the folder holds no FedNGM model.
    ConfigError
        If ``n`` is not positive or needs more memory than is free, the seed is not
        in :data:`~fedstruct.runs.settings.SEED`'s range, or no global model
        was released.
    """
    if n < 1:
        raise ConfigError(f"-n must be a positive number of rows, got {n}")
    if not SEED.accepts(seed):
        raise ConfigError(SEED.message("--seed", seed))
    model = _joint_model(folder, "sample")
    ngm = model.released()
    _check_memory(n, _bytes_per_sample(ngm))
    rows = ngm.sample(n, seed=seed, **model.sampling_options())
    for variable in rows.columns:
        names = _level_names(model, variable)
        if names:
            rows[variable] = rows[variable].map(lambda s, n=names: _name(n, s))
    return rows


def _bytes_per_sample(ngm: Any) -> int:
    """Memory one sample takes while drawn: every Gibbs chain holds its encoded row,
    each layer's activations and temporaries (float32), the redraw's probabilities
    (float64), then the decoded row and its level names (8-byte cells). Doubled for
    what the estimate leaves out (measured: an upper bound, docs/cli.md)."""
    widths = ngm.view.widths
    encoded = ngm.schema.n_columns
    per_row = 4 * (3 * encoded + 2 * sum(widths)) + 8 * encoded + 16 * len(ngm.schema)
    return 2 * per_row


def _available_memory() -> int | None:
    """Bytes of memory free for this process now (Linux ``MemAvailable``; else the free
    physical pages); ``None`` where neither can be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _check_memory(n: int, per_row: int) -> None:
    """Refuse ``n`` samples of ``per_row`` bytes each when they need more memory than
    is free (a ``MemoryError`` or the system's out-of-memory killer otherwise)."""
    free = _available_memory()
    if free is None or n * per_row <= free:
        return
    raise ConfigError(
        f"-n {n:,} needs about {n * per_row / 2**30:,.1f} GiB of memory, {free / 2**30:,.1f} "
        f"GiB are free here: draw at most -n {max(free // per_row, 1):,} at a time (several "
        "calls with different --seed give independent samples)"
    )


def query(
    folder: str | Path, given: Mapping[str, str], target: str, inference: str | None = None
) -> pd.DataFrame:
    """The posterior of ``target`` given evidence ``VAR=VALUE`` (FedNGM's conditional
    inference, §2.3): a categorical target's probability per state, a continuous
    one's predictive mean and median. ``inference`` is ``"gradient"`` or
    ``"message"`` (default: the run's ``inference`` setting; docs/fedngm.md,
    "Queries"). The table's ``attrs["warnings"]`` holds, each also issued as a
    :class:`~fedstruct.errors.FedstructWarning`, a line when ``target`` has no
    neighbour in the model's graph (the answer is its marginal, whatever the
    evidence) and one when a continuous answer barely follows numeric evidence that
    the sites' pooled correlations say moves it
    (:func:`~fedstruct.methods.fedngm.moments.unfollowed_message`).

    Raises
    ------
    ArtifactError
        If the folder holds no FedNGM model.
    ConfigError
        For an ``inference`` that is not one of the two.
    UnknownVariableError
        For a target or evidence variable the model does not have.
    DataError
        For an evidence level the run's files never had, or a non-number for a
        continuous variable.
    """
    from fedstruct.methods.fedngm.model import isolated_message
    from fedstruct.methods.fedngm.moments import unfollowed_message

    model = _joint_model(folder, "query")
    ngm = model.released()
    how = model.inference_options(inference)
    for variable in (*given, target):
        if variable not in ngm.names:
            raise ArtifactError(
                f"the model has no variable {variable!r}; its variables are {list(ngm.names)}"
            )
    if target in given:
        raise ConfigError(f"{target!r} is both the target and given; drop --given {target}=...")
    values = {v: _evidence_value(model, v, value) for v, value in given.items()}
    row = pd.DataFrame({v: [value] for v, value in values.items()})
    spec = ngm.schema.spec(target)
    notes = [isolated_message(ngm, target)]
    if spec.is_categorical:
        p = ngm.predict_proba(row, target, **how)[0]
        names = _level_names(model, target)
        table = pd.DataFrame({target: [_name(names, c) for c in spec.categories], "probability": p})
    else:
        mean = ngm.predict(row, target, point="mean", **how)
        table = pd.DataFrame(
            {
                "target": [target],
                "mean": mean,
                "median": ngm.predict(row, target, point="median", **how),
            }
        )
        correlation = getattr(model, "correlation_", None)
        notes.append(unfollowed_message(ngm, correlation, values, target, float(mean[0]), **how))
    table.attrs["warnings"] = [note for note in notes if note]
    for note in table.attrs["warnings"]:
        warnings.warn(note, FedstructWarning, stacklevel=2)
    return table


def _evidence_value(model: Predictor, variable: str, value: str) -> float | int:
    """``value`` as the model's data hold it: a level's code, or a number."""
    names = _level_names(model, variable)
    if names:
        if value not in names:
            raise DataError(
                f"--given {variable}={value}: {variable!r} has no level {value!r}; its levels "
                f"are {list(names)}"
            )
        return list(names).index(value)
    try:
        number = float(value)
    except ValueError:
        raise DataError(
            f"--given {variable}={value}: {variable!r} takes numbers, not {value!r}"
        ) from None
    return int(number) if number.is_integer() else number


# ------------------------------------------------------------------ summary
@dataclass(frozen=True)
class RunSummary:
    """What ``fedstruct show`` says about a run (the whole run, beyond a graph).

    Attributes
    ----------
    method
        The method that ran.
    status
        ``run.json``'s status and time, e.g. ``"finished in 2.6 s"``.
    settings
        The settings that differ from the method's defaults, as ``config.json`` holds them.
    data
        Where the rows came from: the built-in data set, or the sites and their rows.
    model
        What the saved model reads and predicts, and its number of weights.
    metrics
        ``metrics.json``.
    figures
        The pictures the run drew.
    learner
        What kind of model it learned: ``"a regressor"`` (a continuous target) or
        ``"a classifier"``.
    """

    method: str
    status: str
    settings: dict[str, Any]
    data: str
    model: str
    metrics: dict[str, Any]
    figures: list[str]
    learner: str = "a classifier"


def run_summary(folder: str | Path) -> RunSummary:
    """A summary of the run in ``folder`` from its files (config.json, run.json,
    metrics.json and the saved model).

    Raises
    ------
    ArtifactError
        If the folder holds no saved model (or an unusable one), or its run.json or
        metrics.json is damaged (not a JSON object, a metric that is not a number).
    ConfigError
        If its config.json is missing or unreadable.
    """
    from fedstruct.runs.contract import read_config, runnable
    from fedstruct.runs.settings import settings_dict

    folder = Path(folder)
    model = load(folder)
    config = read_config(folder)
    saved = config.get("settings")
    saved = saved if isinstance(saved, dict) else {}
    defaults = settings_dict(runnable(model.method).settings())
    changed = {k: v for k, v in saved.items() if k in defaults and defaults[k] != v}
    record = _json_object(folder / "run.json")
    metrics = _json_object(folder / "metrics.json")
    for name, value in metrics.items():
        if not _is_number(value) and value is not None:
            raise ArtifactError(
                f"{folder / 'metrics.json'}: {name!r} is {json.dumps(value)[:40]}, not a "
                "number; the file was changed by hand or damaged"
            )
    figures = record.get("figures")
    return RunSummary(
        method=model.method,
        status=_status(record),
        settings=changed,
        data=_data_source(saved, metrics),
        model=_model_text(model),
        metrics=metrics,
        figures=[f for f in figures if isinstance(f, str)] if isinstance(figures, list) else [],
        learner="a regressor" if _regression(model) else "a classifier",
    )


def _regression(model: FederatedEstimator) -> bool:
    """Whether ``model`` predicts a continuous target (FedAvg's regression)."""
    from fedstruct.estimators.prediction import Predictor

    return isinstance(model, Predictor) and model.is_regression()


def _json_object(path: Path) -> dict[str, Any]:
    """A JSON object file of the run folder (empty when it is missing).

    Raises
    ------
    ArtifactError
        If it is not a regular file, too large, not JSON or not an object.
    """
    if not path.exists():
        return {}
    data = parse_json(read_text(path, "the run's file", error=ArtifactError), str(path),
                      error=ArtifactError)  # fmt: skip
    if not isinstance(data, dict):
        raise ArtifactError(
            f"{path} holds a JSON {type(data).__name__}, not an object; the file was changed "
            "by hand or damaged"
        )
    return data


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _status(record: Mapping[str, Any]) -> str:
    status = str(record.get("status", "unknown (no run.json)"))
    seconds = record.get("seconds")
    if _is_number(seconds):
        status += f" in {seconds:.1f} s"
    if record.get("error"):
        status += f" ({record['error']})"
    return status


def _data_source(settings: Mapping[str, Any], metrics: Mapping[str, Any]) -> str:
    """The run's sites and their rows (a run on files), or its built-in data set."""
    counts = {k: v for k, v in metrics.items() if _is_number(v) and math.isfinite(v)}
    rows = {k.removeprefix("rows_"): v for k, v in counts.items() if k.startswith("rows_")}
    if settings.get("sites") or settings.get("manifest") or settings.get("node_sites"):
        sites = ", ".join(f"{site} ({int(n):,} rows)" for site, n in rows.items())
        kinds = ", ".join(
            f"{int(counts[key])} {key.removeprefix('columns_')}"
            for key in ("columns_categorical", "columns_ordinal", "columns_continuous")
            if counts.get(key)
        )
        found = f"{len(rows)} sites' own files: {sites}" if rows else "the sites' own files"
        return f"{found}; columns: {kinds}" if kinds else found
    for name in ("network", "dataset"):
        if settings.get(name):
            return f"built-in {name} {settings[name]!r}"
    return "built-in data"


def _model_text(model: FederatedEstimator) -> str:
    """What the saved model reads and predicts, and its size."""
    from fedstruct.estimators.prediction import Predictor

    arrays, _ = model.learned_state()
    size = f"{sum(int(np.asarray(a).size) for a in arrays.values()):,} weights"
    if not isinstance(model, Predictor):  # a model that only learned a graph
        return size
    try:
        columns = model.input_columns()
    except ConfigError:  # nothing to predict with (FedNGM released no global model)
        return size
    predicted = ", ".join(c for c in columns.read if c not in columns.required)
    required = columns.required
    shown = ", ".join(required[:8]) + (", ..." if len(required) > 8 else "")
    return (
        f"predicts {predicted} from {len(required)} columns ({shown}); {size}; "
        "use it with 'fedstruct predict'"
    )
