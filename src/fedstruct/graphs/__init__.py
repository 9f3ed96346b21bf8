"""Graph types, operations and metrics shared by every method (bottom layer).

One :class:`Graph` type covers DAGs, CPDAGs and PAGs (names + endpoint marks).
Conversions to and from networkx, pgmpy and causal-learn live in
:mod:`fedstruct.graphs.convert`; graph files (JSON, DOT, GraphML, edges CSV) in
:mod:`fedstruct.graphs.io`.
"""

from fedstruct.graphs.combine import (
    BeliefMatrix,
    StrengthVote,
    strength_vote,
    union,
    union_names,
)
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Edge, Graph
from fedstruct.graphs.io import WeightedGraph, read_graph, read_graph_with_weights, write_graph
from fedstruct.graphs.metrics import (
    ORIENTATION_CONVENTIONS,
    RelationFDR,
    Scores,
    ancestral_pairs,
    edge_scores,
    fdr,
    graph_metrics,
    orientation_scores,
    pair_disagreement,
    relation_fdr,
    shd,
)
from fedstruct.graphs.pag import dag_to_mag, dag_to_pag, is_ancestral, is_maximal, mag_to_pag
from fedstruct.graphs.projection import Projection, break_cycles, project_to_dag
from fedstruct.graphs.random import GRAPH_KINDS, random_dag
from fedstruct.graphs.separation import SeparationOracle, d_separated, m_separated

__all__ = [
    "ARROW",
    "CIRCLE",
    "GRAPH_KINDS",
    "NONE",
    "ORIENTATION_CONVENTIONS",
    "TAIL",
    "BeliefMatrix",
    "Edge",
    "Graph",
    "Projection",
    "RelationFDR",
    "Scores",
    "SeparationOracle",
    "StrengthVote",
    "WeightedGraph",
    "ancestral_pairs",
    "break_cycles",
    "d_separated",
    "dag_to_mag",
    "dag_to_pag",
    "edge_scores",
    "fdr",
    "graph_metrics",
    "is_ancestral",
    "is_maximal",
    "m_separated",
    "mag_to_pag",
    "orientation_scores",
    "pair_disagreement",
    "project_to_dag",
    "random_dag",
    "read_graph",
    "read_graph_with_weights",
    "relation_fdr",
    "shd",
    "strength_vote",
    "union",
    "union_names",
    "write_graph",
]
