"""Read a graph from any file a user may hand over: a graph file or a network's BIF.

``--truth FILE`` and per-site graph files accept fedstruct's graph files
(:mod:`fedstruct.graphs.io`: ``.json``, ``.dot``/``.gv``, ``.graphml``, ``.csv``)
and Bayesian networks in BIF (``.bif``, ``.bif.gz``), whose structure is the DAG of
their probability blocks.
"""

from __future__ import annotations

from pathlib import Path

from fedstruct.data.bif import read_bif_graph
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import read_graph

__all__ = ["read_graph_file"]


def read_graph_file(path: str | Path) -> Graph:
    """The graph in ``path``: a BIF network's DAG, or a graph file read by suffix.

    Parameters
    ----------
    path
        A ``.bif``/``.bif.gz`` network, or a ``.json``, ``.dot``, ``.gv``,
        ``.graphml`` or ``.csv`` graph file.

    Raises
    ------
    DataError
        If the file is missing, unreadable, or its suffix is not one of those.
    GraphError, UnknownVariableError
        If a graph file describes an invalid graph (see :func:`fedstruct.graphs.io.read_graph`).
    """
    path = Path(path)
    if path.name.lower().endswith((".bif", ".bif.gz")):
        return read_bif_graph(path)
    return read_graph(path)
