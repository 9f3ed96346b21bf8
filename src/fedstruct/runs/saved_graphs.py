"""The graphs a run saved, read back and exported from the run folder's files alone.

``fedstruct export`` needs the saved graph files and the run's method (``model.json``,
checked by :func:`~fedstruct.fl.artifact.read_model`), not the fitted estimator:
nothing here imports a method, so exporting a graph imports none (docs/architecture.md,
"How methods are found"); only refusing BIF imports the run's estimator class, to say
what the method learns instead (its ``learns``). ``fedstruct show`` reads its graph
here too.
"""

from __future__ import annotations

from pathlib import Path

from fedstruct.errors import ArtifactError, ConfigError, FedstructError
from fedstruct.files import parse_json, read_text
from fedstruct.fl.artifact import read_model
from fedstruct.graphs.io import WeightedGraph, read_graph_with_weights, write_graph
from fedstruct.registry import estimator_class
from fedstruct.runs.artifacts import graph_files

__all__ = ["EXPORT_FORMATS", "export_graph", "run_files", "saved_graph", "saved_graphs"]

#: ``fedstruct export --format``: graph formats (``bif`` needs tables no method learns).
EXPORT_FORMATS = ("json", "dot", "graphml", "csv", "bif")


#: Files of a run folder besides those ``run.json`` lists (figures, artifacts).
_RECORD_FILES = ("config.json", "run.json", "metrics.json", "history.json", "model.json")


def run_files(folder: str | Path) -> list[Path]:
    """The files the run in ``folder`` wrote, which ``predict``, ``sample`` and
    ``export`` never write onto: its records, its checkpoint, every file ``run.json``
    lists and its saved graphs in every format."""
    folder = Path(folder)
    names = set(_RECORD_FILES)
    names.update(p.name for p in folder.glob("checkpoint*"))
    names.update(_listed_files(folder / "run.json"))
    for stem in saved_graphs(folder):
        names.update({*graph_files(stem).values(), f"{stem}.png"})
    return sorted(folder / name for name in names)


def _listed_files(run_json: Path) -> list[str]:
    """The file names ``run.json`` lists (in any list of names; none if unreadable)."""
    if not run_json.exists():
        return []
    try:
        record = parse_json(read_text(run_json, "the run's record"), str(run_json))
    except FedstructError:  # a FIFO, a huge or damaged file: only the other names count
        return []
    if not isinstance(record, dict):
        return []
    return [
        name
        for value in record.values()
        if isinstance(value, list)
        for name in value
        if isinstance(name, str) and name and Path(name).name == name
    ]


def saved_graphs(folder: str | Path) -> list[str]:
    """The stems of the graphs the run in ``folder`` saved (``graph``, and e.g.
    ``definite``): the ``STEM.json`` files with their GraphML beside them."""
    folder = Path(folder)
    return sorted(p.stem for p in folder.glob("*.json") if (folder / f"{p.stem}.graphml").is_file())


def saved_graph(method: str, folder: str | Path, stem: str = "graph") -> WeightedGraph:
    """The graph the ``method`` run in ``folder`` saved as ``STEM.json``, with its
    edges' confidences.

    Raises
    ------
    ArtifactError
        If the run saved no such graph (naming those it saved).
    """
    stems = saved_graphs(folder)
    if stem not in stems:
        raise ArtifactError(
            f"{folder}: this {method} run saved no graph {stem!r}"
            + (f"; it saved {stems}" if stems else f" ({method} learns no graph)")
        )
    return read_graph_with_weights(Path(folder) / graph_files(stem)["json"])


def export_graph(folder: str | Path, format: str, out: Path, stem: str = "graph") -> Path:
    """Write the run's graph ``stem`` to ``out`` in ``format`` (:data:`EXPORT_FORMATS`).

    Raises
    ------
    ArtifactError
        For a folder without a valid saved model (:func:`~fedstruct.fl.artifact.read_model`),
        BIF (no method of fedstruct learns conditional probability tables with its DAG;
        the message says what the run's method learned), or a graph the run did not save.
    ConfigError
        For an unknown format.
    """
    if format not in EXPORT_FORMATS:
        raise ConfigError(f"unknown format {format!r}; use one of {list(EXPORT_FORMATS)}")
    method = read_model(folder).method
    graph, weights = saved_graph(method, folder, stem)
    if format == "bif":
        learned = estimator_class(method).learns  # the refusal alone imports the method
        raise ArtifactError(
            f"BIF holds a DAG with a conditional probability table per variable; this "
            f"{method} run learned {learned}: export json, dot, graphml or csv"
        )
    write_graph(graph, out, format=format, weights=weights or None)
    return out
