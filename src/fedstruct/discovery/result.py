"""What a local learner returns: the graph, the separating sets, the p-values, the CI test."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.evidence import Evidence
from fedstruct.errors import GraphError
from fedstruct.graphs.graph import Graph

__all__ = ["LocalResult"]


@dataclass(frozen=True, eq=False)
class LocalResult:
    """The output of :func:`fci`, :func:`rfci` or :func:`pc` on one client's data.

    Attributes
    ----------
    algorithm
        ``"fci"``, ``"rfci"`` or ``"pc"``.
    graph
        The PAG (FCI, RFCI; circles, tails, arrowheads) or the CPDAG (PC; directed
        edges ``-->`` and undirected edges with tails at both ends).
    skeleton
        Adjacency after the adjacency search, before any later removal.
    sepsets
        For every non-adjacent pair ``(i, j)``, ``i < j``: the indices of its separating
        set (the conditioning set of the test that removed the edge).
    pvalues
        Symmetric ``(d, d)`` per-pair summary (FedCDnv Definitions 3.4-3.5): for a
        non-adjacent pair the separating test's p-value, for an adjacent pair the
        largest p-value over all tests performed on it; NaN on the diagonal and where
        the small-sample rule skipped the deciding test(s).
    max_pvalues
        Largest p-value over the tests performed on each pair (adjacent or not).
    ci_test
        The client's cached CI test: ``ci_test.pvalue(i, j, z)`` runs (or recalls) any
        further test on the same data, with indices in :attr:`names` order.
    n_tests
        Distinct tests computed during this run (cache hits of earlier runs excluded).
    tests_by_phase
        ``n_tests`` split by phase (``"adjacency"``, ``"possible_dsep"``,
        ``"unshielded_triples"``, ``"discriminating_paths"``).
    queries_by_phase
        Tests asked for per phase, cache hits included.
    alpha
        Significance level used.
    """

    algorithm: str
    graph: Graph
    skeleton: NDArray[np.bool_]
    sepsets: Mapping[tuple[int, int], tuple[int, ...]]
    pvalues: NDArray[np.float64]
    max_pvalues: NDArray[np.float64]
    ci_test: CITest
    n_tests: int
    tests_by_phase: Mapping[str, int] = field(default_factory=dict)
    queries_by_phase: Mapping[str, int] = field(default_factory=dict)
    alpha: float = 0.05

    @classmethod
    def from_evidence(
        cls,
        algorithm: str,
        graph: Graph,
        skeleton: NDArray[np.bool_],
        evidence: Evidence,
        start_tests: int,
    ) -> LocalResult:
        """Assemble a result from a finished run's :class:`Evidence`."""
        by_phase = evidence.finish()
        adjacency = graph.adjacency()
        sepsets = {k: v for k, v in evidence.sepsets.items() if not adjacency[k]}
        skeleton = skeleton.copy()
        skeleton.setflags(write=False)
        pvalues = evidence.summary(adjacency)
        max_p = evidence.max_pvalues()
        pvalues.setflags(write=False)
        max_p.setflags(write=False)
        return cls(
            algorithm=algorithm,
            graph=graph,
            skeleton=skeleton,
            sepsets=dict(sorted(sepsets.items())),
            pvalues=pvalues,
            max_pvalues=max_p,
            ci_test=evidence.ci_test,
            n_tests=evidence.ci_test.n_tests - start_tests,
            tests_by_phase=by_phase,
            queries_by_phase=dict(evidence.queries_by_phase),
            alpha=evidence.alpha,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in index order (the graph's and the CI test's)."""
        return self.graph.names

    def sepset(self, a: str, b: str) -> tuple[str, ...] | None:
        """Names of the separating set of ``a`` and ``b``, or ``None`` if they are adjacent.

        Raises
        ------
        UnknownVariableError
            If a name is not a variable.
        """
        i, j = self.graph.index(a), self.graph.index(b)
        found = self.sepsets.get((min(i, j), max(i, j)))
        return None if found is None else tuple(self.names[k] for k in found)

    def pvalue(self, a: str, b: str) -> float:
        """The per-pair summary p-value of ``a`` and ``b`` (see :attr:`pvalues`).

        Raises
        ------
        UnknownVariableError
            If a name is not a variable.
        GraphError
            If ``a == b``.
        """
        i, j = self.graph.index(a), self.graph.index(b)
        if i == j:
            raise GraphError(f"a p-value needs two different variables, got {a!r} twice")
        return float(self.pvalues[i, j])

    def sepset_contains(self, x: int, y: int, z: int) -> bool:
        """Orientation-rule callback: is ``z`` in the separating set of ``x < y``?"""
        found = self.sepsets.get((x, y))
        return found is not None and z in found

    def summary(self) -> dict[str, float]:
        """Flat numbers for reports: edges, separated pairs, tests."""
        return {
            "n_edges": float(self.graph.n_edges),
            "n_separated": float(len(self.sepsets)),
            "n_tests": float(self.n_tests),
            "ci_test_skipped_total": float(self.ci_test.n_skipped),
            "alpha": self.alpha,
            "nan_pvalues": float(
                sum(math.isnan(v) for v in self.pvalues[np.triu_indices(len(self.names), 1)])
            ),
        }
