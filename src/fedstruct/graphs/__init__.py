"""Graph types, operations and metrics shared by every method (bottom layer)."""

from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Edge, Graph

__all__ = ["ARROW", "CIRCLE", "NONE", "TAIL", "Edge", "Graph"]
