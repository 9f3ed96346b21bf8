"""Read a graph from any file a user may hand over: a graph file or a network's BIF.

``--truth FILE`` and per-site graph files accept fedstruct's graph files
(:mod:`fedstruct.graphs.io`: ``.json``, ``.dot``/``.gv``, ``.graphml``, ``.csv``)
and Bayesian networks in BIF (``.bif``, ``.bif.gz``), whose structure is the DAG of
their probability blocks, and the folder of a run that learned a graph (its
``graph.json``). :func:`given_graph` is what an estimator's ``graph=`` accepts.
"""

from __future__ import annotations

from pathlib import Path

from fedstruct.data.bif import read_bif_graph
from fedstruct.data.checks import require_regular_file
from fedstruct.errors import DataError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import read_graph

__all__ = ["RUN_GRAPH", "given_graph", "graph_name", "read_graph_file"]

#: The file of a run folder that holds the graph the run learned (its main one).
RUN_GRAPH = "graph.json"


def read_graph_file(path: str | Path) -> Graph:
    """The graph in ``path``: a BIF network's DAG, or a graph file read by suffix.

    Parameters
    ----------
    path
        A ``.bif``/``.bif.gz`` network, a ``.json``, ``.dot``, ``.gv``, ``.graphml``
        or ``.csv`` graph file, or a run folder (its :data:`RUN_GRAPH`).

    Raises
    ------
    DataError
        If the file is missing, unreadable, or its suffix is not one of those, or a
        folder holds no learned graph.
    GraphError, UnknownVariableError
        If a graph file describes an invalid graph (see :func:`fedstruct.graphs.io.read_graph`).
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"graph file '{path}' does not exist; check the path")
    require_regular_file(path, "graph file")
    if path.is_dir():
        if not (path / RUN_GRAPH).is_file():
            raise DataError(
                f"folder {path} holds no {RUN_GRAPH}; give a graph file, or the folder of "
                "a run that learned a graph (fedcdnv, fedcd, fcm, fedngm)"
            )
        path = path / RUN_GRAPH
    if path.name.lower().endswith((".bif", ".bif.gz")):
        return read_bif_graph(path)
    return read_graph(path)


def graph_name(graph: Graph | str | Path | None) -> str:
    """How a message names a graph handed to an estimator: its path, or ``(given)``."""
    return "(given)" if graph is None or isinstance(graph, Graph) else str(graph)


def given_graph(graph: Graph | str | Path | None) -> Graph | None:
    """A graph handed to an estimator (``graph=``): a :class:`Graph`, or the path of
    anything :func:`read_graph_file` reads (read now; an estimator calls this where
    it uses the graph, so a deployment's nodes, which never do, need no copy)."""
    if graph is None or isinstance(graph, Graph):
        return graph
    return read_graph_file(graph)
