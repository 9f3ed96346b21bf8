"""Using what a run saved: predict, sample, query, show and export (docs/artifacts.md).

Every function takes a run folder (the ``--out`` of ``fedstruct run``), loads the
fitted estimator from its files (:func:`~fedstruct.experiments.artifacts.load`) and
works with the names a user knows: a table is read with the codebook the run's sites
were encoded with (``model.json``'s ``data``: level names in, level names out) and
its columns are checked against the model's variables; images are read as a site's
images are (a folder ``CLASS/*.png`` or an ``.npz``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedstruct.data.images import LABEL, read_image_site, to_rows
from fedstruct.data.sites import read_table
from fedstruct.errors import ArtifactError, ConfigError, DataError
from fedstruct.experiments.artifacts import graph_files, load
from fedstruct.fl import FederatedEstimator
from fedstruct.graphs.io import WeightedGraph, read_graph_with_weights, write_graph
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.fedngm import FedNGM

__all__ = [
    "EXPORT_FORMATS",
    "export_graph",
    "predict_file",
    "query",
    "sample",
    "saved_graph",
    "saved_graphs",
]

#: ``fedstruct export --format``: graph formats (``bif`` needs tables no method learns).
EXPORT_FORMATS = ("json", "dot", "graphml", "csv", "bif")


# ---------------------------------------------------------------- predict
def predict_file(
    folder: str | Path, data: str | Path, targets: Sequence[str] = ()
) -> tuple[pd.DataFrame, list[str]]:
    """The saved model's predictions for the rows of ``data``: one column per predicted
    variable (its state, by level name where the run's files named levels) and, for
    a categorical one, ``P(VAR=STATE)`` per state; for images, the file's own label
    too (``label_given``). Also the columns of ``data`` the model does not read (a
    FedNGM site's own variables), which were left out.

    Raises
    ------
    ArtifactError
        If the folder holds no model, the model only learned a graph, or ``data``'s
        columns do not match the model's (naming the missing and the extra ones).
    DataError
        If ``data`` cannot be read or holds a level the run's files never had.
    """
    model = load(folder)
    if isinstance(model, CAFE):
        rows, given = _image_rows(model, Path(data))
        table = model.prediction(rows, list(targets) or None).table()
        return table.assign(label_given=given), []
    try:
        columns = model.input_columns()
    except ConfigError as exc:
        raise ArtifactError(str(exc)) from None
    frame = read_table(data)
    prediction = model.prediction(frame, list(targets) or None, source=Path(data))
    return prediction.table(), columns.unread(list(frame.columns))


def _image_rows(model: CAFE, path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    site = read_image_site(path)
    if site.shape != model.shape:
        raise ArtifactError(
            f"{path}: its images are {site.shape} (channels, height, width), the model's "
            f"are {model.shape}; resize them as the run's sites were"
        )
    rows = to_rows(site.images, np.zeros(site.n_images, dtype=np.int64))
    return rows.drop(columns=[LABEL]), np.asarray(site.labels)


def _level_names(model: FederatedEstimator, variable: str) -> Sequence[str] | None:
    codebook = model.codebook()
    return None if codebook is None else codebook.levels(variable)


def _name(names: Sequence[str] | None, state: Any) -> Any:
    if names is None:
        return state
    code = int(state)
    return names[code] if 0 <= code < len(names) else state


# ------------------------------------------------------------ sample, query
def _fedngm(folder: str | Path, what: str) -> FedNGM:
    model = load(folder)
    if not isinstance(model, FedNGM):
        raise ArtifactError(
            f"{folder} holds a {model.method} model; {what} needs a FedNGM run (a model of "
            "the joint distribution)"
        )
    return model


def sample(folder: str | Path, n: int, *, seed: int = 0) -> pd.DataFrame:
    """``n`` rows drawn from a FedNGM run's global model (Gibbs sampling, §2.3), with
    level names where the run's files named levels.

    Raises
    ------
    ArtifactError
        If the folder holds no FedNGM model.
    ConfigError
        If ``n`` is not positive or no global model was released.
    """
    if n < 1:
        raise ConfigError(f"-n must be a positive number of rows, got {n}")
    model = _fedngm(folder, "sample")
    rows = model.released().sample(n, seed=seed)
    for variable in rows.columns:
        names = _level_names(model, variable)
        if names:
            rows[variable] = rows[variable].map(lambda s, n=names: _name(n, s))
    return rows


def query(folder: str | Path, given: Mapping[str, str], target: str) -> pd.DataFrame:
    """The posterior of ``target`` given evidence ``VAR=VALUE`` (FedNGM's conditional
    inference, §2.3): a categorical target's probability per state, a continuous
    one's predictive mean and median.

    Raises
    ------
    ArtifactError
        If the folder holds no FedNGM model.
    UnknownVariableError
        For a target or evidence variable the model does not have.
    DataError
        For an evidence level the run's files never had, or a non-number for a
        continuous variable.
    """
    model = _fedngm(folder, "query")
    ngm = model.released()
    for variable in (*given, target):
        if variable not in ngm.names:
            raise ArtifactError(
                f"the model has no variable {variable!r}; its variables are {list(ngm.names)}"
            )
    if target in given:
        raise ConfigError(f"{target!r} is both the target and given; drop --given {target}=...")
    row = pd.DataFrame({v: [_evidence_value(model, v, value)] for v, value in given.items()})
    spec = ngm.schema.spec(target)
    if spec.is_categorical:
        p = ngm.predict_proba(row, target)[0]
        names = _level_names(model, target)
        return pd.DataFrame({target: [_name(names, c) for c in spec.categories], "probability": p})
    return pd.DataFrame(
        {
            "target": [target],
            "mean": ngm.predict(row, target, point="mean"),
            "median": ngm.predict(row, target, point="median"),
        }
    )


def _evidence_value(model: FedNGM, variable: str, value: str) -> float | int:
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


# ------------------------------------------------------------ show, export
def saved_graphs(folder: str | Path) -> list[str]:
    """The stems of the graphs the run in ``folder`` saved (``graph``, and e.g.
    ``definite``): the ``STEM.json`` files with their GraphML beside them."""
    folder = Path(folder)
    return sorted(p.stem for p in folder.glob("*.json") if (folder / f"{p.stem}.graphml").is_file())


def saved_graph(
    model: FederatedEstimator, folder: str | Path, stem: str = "graph"
) -> WeightedGraph:
    """The graph the run of ``model`` (loaded from ``folder``) saved as ``STEM.json``,
    with its edges' confidences.

    Raises
    ------
    ArtifactError
        If the run saved no such graph (naming those it saved).
    """
    stems = saved_graphs(folder)
    if stem not in stems:
        raise ArtifactError(
            f"{folder}: this {model.method} run saved no graph {stem!r}"
            + (f"; it saved {stems}" if stems else f" ({model.method} learns no graph)")
        )
    return read_graph_with_weights(Path(folder) / graph_files(stem)["json"])


def export_graph(folder: str | Path, format: str, out: Path, stem: str = "graph") -> Path:
    """Write the run's graph ``stem`` to ``out`` in ``format`` (:data:`EXPORT_FORMATS`).

    Raises
    ------
    ArtifactError
        For BIF (no method of fedstruct learns conditional probability tables with its
        DAG), or a graph the run did not save.
    ConfigError
        For an unknown format.
    """
    if format not in EXPORT_FORMATS:
        raise ConfigError(f"unknown format {format!r}; use one of {list(EXPORT_FORMATS)}")
    graph, weights = saved_graph(load(folder), folder, stem)
    if format == "bif":
        raise ArtifactError(
            "BIF holds a DAG with a conditional probability table per variable; this run "
            "learned a graph without tables (FED-CD's and F-CMs' conditionals are neural "
            "networks); export json, dot or graphml"
        )
    write_graph(graph, out, format=format, weights=weights or None)
    return out
