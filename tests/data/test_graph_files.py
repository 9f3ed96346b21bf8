"""Tests for fedstruct.data.graph_files and the BIF structure reader."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fedstruct.data import load_network, read_graph_file
from fedstruct.data.bif import bundled_bif_path, read_bif_graph
from fedstruct.errors import CyclicGraphError, DataError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.io import write_graph


def test_bundled_asia_bif_reads_to_the_network_dag():
    graph = read_graph_file(bundled_bif_path("asia"))
    assert graph == load_network("asia").graph
    assert graph.is_dag() and graph.n_nodes == 8 and graph.n_edges == 8
    assert set(graph.parents("either")) == {"lung", "tub"}


def test_plain_bif_file(tmp_path: Path):
    path = tmp_path / "asia.bif"
    path.write_text(gzip.decompress(bundled_bif_path("asia").read_bytes()).decode())
    assert read_graph_file(path) == load_network("asia").graph == read_bif_graph(path)


def test_cyclic_bif_is_refused(tmp_path: Path):
    path = tmp_path / "loop.bif"
    path.write_text(
        "network loop { }\n"
        "variable a { type discrete [ 2 ] { x, y }; }\n"
        "variable b { type discrete [ 2 ] { x, y }; }\n"
        "probability ( a | b ) { table 0.5, 0.5, 0.5, 0.5; }\n"
        "probability ( b | a ) { table 0.5, 0.5, 0.5, 0.5; }\n"
    )
    with pytest.raises(CyclicGraphError, match=r"network 'loop'"):
        read_graph_file(path)


def test_other_files_go_to_graph_io(tmp_path: Path):
    g = Graph.from_edges(["A", "B", "C"], ["A o-> B", "B <-> C"])
    for suffix in (".json", ".dot", ".graphml"):
        assert read_graph_file(write_graph(g, tmp_path / f"g{suffix}")) == g


def test_missing_files_are_named(tmp_path: Path):
    with pytest.raises(DataError, match=r"graph file '.*nope\.bif' does not exist"):
        read_graph_file(tmp_path / "nope.bif")
    with pytest.raises(DataError, match=r"graph file '.*nope\.dot' does not exist"):
        read_graph_file(tmp_path / "nope.dot")
