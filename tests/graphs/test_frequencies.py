"""Edge frequencies over replicate graphs, and their consensus."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.errors import DataError, GraphError
from fedstruct.graphs import Graph
from fedstruct.graphs.frequencies import (
    DAG_PATTERNS,
    EdgeFrequencies,
    mark_pattern,
    site_contradictions,
)
from fedstruct.graphs.graph import ARROW, CIRCLE, TAIL

NAMES = ["A", "B", "C", "D"]


def graphs() -> list[Graph]:
    return [
        Graph.from_edges(NAMES, ["A --> B", "B o-> C"]),
        Graph.from_edges(NAMES, ["A --> B", "B <-> C"]),
        Graph.from_edges(NAMES, ["B <-- A", "B o-> C", "C o-o D"]),
        Graph.from_edges(NAMES, ["A o-> B"]),
    ]


def test_pattern_names_read_from_first_to_second_end() -> None:
    assert mark_pattern(TAIL, ARROW) == "-->"
    assert mark_pattern(ARROW, TAIL) == "<--"
    assert mark_pattern(CIRCLE, ARROW) == "o->"
    assert mark_pattern(ARROW, CIRCLE) == "<-o"
    assert mark_pattern(CIRCLE, CIRCLE) == "o-o"


def test_frequencies_are_shares_and_adjacency_is_their_sum() -> None:
    freq = EdgeFrequencies.of(graphs(), NAMES)
    assert freq.replicates == 4
    expected = dict.fromkeys(["<--", "<->", "<-o", "o-o", "none"], 0.0)
    expected.update({"adjacent": 1.0, "-->": 0.75, "o->": 0.25})
    assert freq.row("A", "B") == pytest.approx(expected)
    for a, b in freq.pairs():
        row = freq.row(a, b)
        shares = [v for k, v in row.items() if k not in ("adjacent", "none")]
        assert all(0.0 <= v <= 1.0 for v in row.values())
        assert sum(shares) == pytest.approx(row["adjacent"])
        assert row["none"] == pytest.approx(1.0 - row["adjacent"])
    assert freq.adjacency("C", "D") == 0.25
    assert freq.adjacency("A", "D") == 0.0


def test_a_pair_read_backwards_flips_its_patterns() -> None:
    freq = EdgeFrequencies.of(graphs(), NAMES)
    assert freq.pattern_frequencies("C", "B")["<-o"] == 0.5
    assert freq.pattern_frequencies("B", "C")["o->"] == 0.5
    assert freq.pattern_frequencies("B", "A")["<--"] == 0.75


def test_consensus_keeps_pairs_in_half_the_runs_with_their_most_frequent_marks() -> None:
    consensus = EdgeFrequencies.of(graphs(), NAMES).consensus()
    assert {str(e) for e in consensus.edges()} == {"A --> B", "B o-> C"}  # C-D: 1 of 4


def test_consensus_tie_goes_to_the_pattern_with_more_circles() -> None:
    runs = [Graph.from_edges(["A", "B"], ["A --> B"]), Graph.from_edges(["A", "B"], ["A o-> B"])]
    assert str(EdgeFrequencies.of(runs).consensus().edge("A", "B")) == "A o-> B"


def test_a_consensus_of_dags_is_made_acyclic_at_its_least_frequent_edge() -> None:
    names = ["A", "B", "C"]
    runs = [
        Graph.from_edges(names, ["A --> B", "B --> C", "C --> A"]),
        Graph.from_edges(names, ["A --> B", "B --> C"]),
        Graph.from_edges(names, ["A --> B", "B --> C", "C --> A"]),
    ]
    freq = EdgeFrequencies.of(runs, names, DAG_PATTERNS)
    assert not freq.consensus().is_acyclic()
    dag = freq.consensus(acyclic=True)
    assert dag.is_dag() and {str(e) for e in dag.edges()} == {"A --> B", "B --> C"}


def test_other_patterns_are_listed_when_some_graph_has_them() -> None:
    freq = EdgeFrequencies.of([Graph.from_edges(["A", "B"], ["A --- B"])], patterns=DAG_PATTERNS)
    assert freq.patterns == ("-->", "<--", "---")
    assert freq.row("A", "B")["---"] == 1.0


def test_json_round_trip_and_bad_counts() -> None:
    freq = EdgeFrequencies.of(graphs(), NAMES)
    back = EdgeFrequencies.from_json(freq.to_json())
    assert back.names == freq.names and back.patterns == freq.patterns
    assert np.array_equal(back.counts, freq.counts)
    bad = freq.to_json()
    bad["pairs"][0]["counts"] = {"-->": 9}
    with pytest.raises(DataError, match=r"0\.\.replicates"):
        EdgeFrequencies.from_json(bad)


def test_threshold_out_of_range_and_no_graph_are_refused() -> None:
    with pytest.raises(GraphError, match="at least one graph"):
        EdgeFrequencies.of([])
    with pytest.raises(GraphError, match=r"\(0, 1\]"):
        EdgeFrequencies.of(graphs(), NAMES).consensus(0.0)


def test_site_contradictions_count_adjacencies_among_the_sites_variables() -> None:
    consensus = Graph.from_edges(NAMES, ["A --> B", "B o-> C", "C o-o D"])
    site = Graph.from_edges(["A", "B", "C"], ["A o-o C", "B o-o C"])  # no D: C-D not counted
    assert site_contradictions(consensus, site) == 2  # A-B missing, A-C extra
