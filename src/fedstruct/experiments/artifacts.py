"""What a run learned, as files anyone can load (docs/artifacts.md).

Every graph the fitted estimator learned (:meth:`~fedstruct.fl.FederatedEstimator.learned_graphs`)
is written in four formats (:mod:`fedstruct.graphs.io`): ``STEM.json`` (our format,
round-trips to :class:`~fedstruct.graphs.Graph`), ``STEM.dot`` (Graphviz),
``STEM.graphml`` (networkx, yEd; PAG marks as edge attributes) and an edges table
(one row per edge: its ends, the mark at each end and the method's confidence where
it has one), ``edges.csv`` for the main graph and ``STEM-edges.csv`` for the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedstruct.graphs.io import write_graph

__all__ = ["graph_files", "write_graphs"]


def graph_files(stem: str) -> dict[str, str]:
    """The file of each format for the graph called ``stem``."""
    edges = "edges.csv" if stem == "graph" else f"{stem}-edges.csv"
    return {"json": f"{stem}.json", "dot": f"{stem}.dot", "graphml": f"{stem}.graphml",
            "csv": edges}  # fmt: skip


def write_graphs(model: Any, out: Path) -> list[str]:
    """Write every graph ``model`` learned into ``out``; return the files' names."""
    written = []
    for stem, (graph, confidence) in model.learned_graphs().items():
        for fmt, name in graph_files(stem).items():
            write_graph(graph, out / name, format=fmt, weights=confidence)
            written.append(name)
    return written
