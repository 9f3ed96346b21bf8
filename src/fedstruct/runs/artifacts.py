"""What a run learned, as files anyone can load (docs/artifacts.md), and loading them.

Every graph the fitted estimator learned
(:meth:`~fedstruct.estimators.FederatedEstimator.learned_graphs`) is written in four
formats (:mod:`fedstruct.graphs.io`): ``STEM.json`` (our format, round-trips to
:class:`~fedstruct.graphs.Graph`), ``STEM.dot`` (Graphviz), ``STEM.graphml``
(networkx, yEd; PAG marks as edge attributes) and an edges table (one row per edge:
its ends, the mark at each end and the method's confidence where it
has one), ``edges.csv`` for the main graph and ``STEM-edges.csv`` for the others.
After a bootstrap (docs/confidence.md) the learned graph's and the consensus's
(``consensus.*``) JSON and edges tables carry each edge's frequencies, and their
pictures colour each edge by how often it came back.
Every table the estimator names
(:meth:`~fedstruct.estimators.FederatedEstimator.learned_tables`)
is written as ``STEM.csv``: FED-CD's full edge-probability matrix
(``edge-probabilities.csv``).
Everything else it learned goes into ``model.safetensors`` + ``model.json``
(:mod:`fedstruct.fl.artifact`, whose :func:`~fedstruct.fl.artifact.load` reads a run
folder back into a fitted estimator).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedstruct.fl.artifact import save_model
from fedstruct.graphs.io import write_graph

if TYPE_CHECKING:
    from fedstruct.estimators import FederatedEstimator

__all__ = [
    "graph_files",
    "graph_title",
    "write_artifacts",
    "write_graphs",
    "write_tables",
]


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
    (:func:`~fedstruct.drawing.picture.draw_graph`); return the files' names."""
    from fedstruct.drawing.picture import draw_graph  # matplotlib: when drawing
    from fedstruct.estimators.graph_learner import GraphLearner

    written = []
    frequencies = model.graph_frequencies() if isinstance(model, GraphLearner) else {}
    for stem, (graph, confidence) in model.learned_graphs().items():
        found = frequencies.get(stem)
        for fmt, name in graph_files(stem).items():
            write_graph(graph, out / name, format=fmt, weights=confidence, frequencies=found)
            written.append(name)
        title = graph_title(model.method, stem, graph)
        if found is None:
            draw_graph(graph, out / f"{stem}.png", title=title, weights=confidence)
        else:  # coloured by how often each edge came back in the resampled runs
            draw_graph(graph, out / f"{stem}.png", title=title, weights=found.adjacency_matrix(),
                       label=f"adjacency frequency over {found.replicates} resampled runs",
                       limits=(0.0, 1.0))  # fmt: skip
        written.append(f"{stem}.png")
    return written


def write_tables(model: FederatedEstimator, out: Path) -> list[str]:
    """Write every table ``model`` learned besides its graphs
    (:meth:`~fedstruct.estimators.FederatedEstimator.learned_tables`) as ``out/STEM.csv``, its
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
