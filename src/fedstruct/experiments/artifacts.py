"""What a run learned, as files anyone can load (docs/artifacts.md), and loading them.

Every graph the fitted estimator learned (:meth:`~fedstruct.fl.FederatedEstimator.learned_graphs`)
is written in four formats (:mod:`fedstruct.graphs.io`): ``STEM.json`` (our format,
round-trips to :class:`~fedstruct.graphs.Graph`), ``STEM.dot`` (Graphviz),
``STEM.graphml`` (networkx, yEd; PAG marks as edge attributes) and an edges table
(one row per edge: its ends, the mark at each end and the method's confidence where
it has one), ``edges.csv`` for the main graph and ``STEM-edges.csv`` for the others.
Every table the estimator names (:meth:`~fedstruct.fl.FederatedEstimator.learned_tables`)
is written as ``STEM.csv``: FED-CD's full edge-probability matrix
(``edge-probabilities.csv``).
Everything else it learned goes into ``model.safetensors`` + ``model.json``
(:mod:`fedstruct.fl.artifact`); :func:`load` reads a run folder back into a fitted
estimator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedstruct.errors import ArtifactError, unknown_choice_message
from fedstruct.fl import FederatedEstimator
from fedstruct.fl.artifact import read_model, save_model
from fedstruct.graphs.io import write_graph
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.fcm import FCM
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedngm import FedNGM

__all__ = [
    "ESTIMATORS",
    "graph_files",
    "graph_title",
    "load",
    "read_history",
    "write_artifacts",
    "write_graphs",
    "write_tables",
]

#: The estimator class of each method a run folder may hold.
ESTIMATORS: dict[str, type[FederatedEstimator]] = {
    cls.method: cls for cls in (FedCDnv, FedCD, FCM, FedNGM, CAFE, FedAvg)
}


def graph_files(stem: str) -> dict[str, str]:
    """The file of each format for the graph called ``stem``."""
    edges = "edges.csv" if stem == "graph" else f"{stem}-edges.csv"
    return {"json": f"{stem}.json", "dot": f"{stem}.dot", "graphml": f"{stem}.graphml",
            "csv": edges}  # fmt: skip


def graph_title(method: str, stem: str, graph: Any) -> str:
    """The title of a saved graph's picture (the run's and ``fedstruct show``'s)."""
    return f"{method}: {stem} ({graph.n_nodes} variables, {graph.n_edges} edges)"


def write_graphs(model: Any, out: Path) -> list[str]:
    """Write every graph ``model`` learned into ``out``, and its picture ``STEM.png``
    (:func:`~fedstruct.experiments.graph_picture.draw_graph`); return the files' names."""
    from fedstruct.experiments.graph_picture import draw_graph  # matplotlib: when drawing

    written = []
    for stem, (graph, confidence) in model.learned_graphs().items():
        for fmt, name in graph_files(stem).items():
            write_graph(graph, out / name, format=fmt, weights=confidence)
            written.append(name)
        draw_graph(graph, out / f"{stem}.png", title=graph_title(model.method, stem, graph),
                   weights=confidence)  # fmt: skip
        written.append(f"{stem}.png")
    return written


def write_tables(model: FederatedEstimator, out: Path) -> list[str]:
    """Write every table ``model`` learned besides its graphs
    (:meth:`~fedstruct.fl.FederatedEstimator.learned_tables`) as ``out/STEM.csv``, its
    index first; return the files' names."""
    written = []
    for stem, table in model.learned_tables().items():
        table.to_csv(out / f"{stem}.csv")
        written.append(f"{stem}.csv")
    return written


def write_artifacts(
    model: FederatedEstimator, out: Path, *, data: Mapping[str, Any] | None = None
) -> list[str]:
    """Write what the fitted ``model`` learned into ``out``: its graphs, its tables and
    its model files (``data``: what its inputs are, saved in ``model.json``); return
    the names."""
    return [
        *write_graphs(model, out),
        *write_tables(model, out),
        *save_model(model, out, data=data),
    ]


def read_history(folder: Path) -> list[dict[str, Any]]:
    """``folder/history.json``: the run's per-round records (``[]`` if absent).

    Raises
    ------
    ArtifactError
        If it is not JSON or not a list of objects.
    """
    path = folder / "history.json"
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"{path} is not valid JSON ({exc}); the file is damaged") from None
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise ArtifactError(
            f"{path} is not a list of per-round records (JSON objects); the file is damaged "
            "or was changed by hand"
        )
    return history


def load(folder: str | Path) -> FederatedEstimator:
    """The fitted estimator a run saved in ``folder``, as it was after ``fit``.

    The learned attributes (``graph_``, ``model_``, ...) come from ``model.json`` and
    ``model.safetensors``, ``history_`` from ``history.json``; ``data_`` is what its
    inputs are when the run read a user's files (variables, kinds, level names; or
    image shape and class names), else ``None``.

    Raises
    ------
    ArtifactError
        If the folder holds no saved model, one written by a newer fedstruct, a
        changed or truncated weights file, or a method this fedstruct does not know.
    """
    folder = Path(folder)
    saved = read_model(folder)
    if saved.method not in ESTIMATORS:
        raise ArtifactError(
            f"{folder}: " + unknown_choice_message("method", saved.method, ESTIMATORS)
        )
    try:
        estimator = ESTIMATORS[saved.method](**saved.params)
        estimator.restore(saved.arrays, saved.learned)
    except (KeyError, ValueError, TypeError) as exc:
        raise ArtifactError(
            f"{folder}: model.json and model.safetensors do not fit together ({exc}); "
            "copy both files again from the run folder that wrote them"
        ) from exc
    estimator.history_ = read_history(folder)
    estimator.data_ = saved.data  # type: ignore[attr-defined]
    return estimator
