"""What a learner records about every pair while it tests: separating sets and p-values.

One :class:`Evidence` per learner run wraps the client's :class:`CITest`. Every test a
learner asks for goes through :meth:`Evidence.independent`, which

- answers ``p > alpha`` (the learner's decision; the convention of causal-learn and
  of the paper's Definition 3.5, "p-value greater than alpha + theta2"),
- keeps, per unordered pair, the largest p-value over the tests *performed* on it
  during the run (cache hits included, tests skipped by the small-sample rule
  excluded),
- counts, per phase, the distinct tests computed and the queries (cache hits included).

When an edge is removed the learner calls :meth:`Evidence.separate`, which stores the
separating set and the p-value of the test that found it. The per-pair summary the
FedCDnv protocol needs (Definitions 3.4 and 3.5) is :meth:`Evidence.summary`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from fedstruct.methods.fedcdnv.local.citest import CITest

__all__ = ["Evidence"]


class Evidence:
    """Separating sets and p-values found by one learner run (module docstring).

    Parameters
    ----------
    ci_test
        The client's cached CI test.
    alpha
        Significance level: a test says independent iff its p-value exceeds it.
    """

    def __init__(self, ci_test: CITest, alpha: float) -> None:
        d = ci_test.n_variables
        self.ci_test = ci_test
        self.alpha = float(alpha)
        self.sepsets: dict[tuple[int, int], tuple[int, ...]] = {}
        self._sepsets_frozen: dict[tuple[int, int], frozenset[int]] = {}
        self._max_p = [[math.nan] * d for _ in range(d)]
        self._sep_p: dict[tuple[int, int], float] = {}
        self.tests_by_phase: dict[str, int] = {}
        self.queries_by_phase: dict[str, int] = {}
        self.queries = 0
        self._phase = ""
        self._phase_start = ci_test.n_tests
        self._phase_queries = 0

    # ----------------------------------------------------------------- phases
    def phase(self, name: str) -> None:
        """Start counting the tests of a new phase (closing the previous one)."""
        self._close_phase()
        self._phase = name
        self._phase_start = self.ci_test.n_tests
        self._phase_queries = self.queries

    def _close_phase(self) -> None:
        if self._phase:
            done = self.ci_test.n_tests - self._phase_start
            asked = self.queries - self._phase_queries
            self.tests_by_phase[self._phase] = self.tests_by_phase.get(self._phase, 0) + done
            self.queries_by_phase[self._phase] = self.queries_by_phase.get(self._phase, 0) + asked

    def finish(self) -> dict[str, int]:
        """Close the current phase and return the distinct tests computed per phase."""
        self._close_phase()
        self._phase = ""
        return dict(self.tests_by_phase)

    # ------------------------------------------------------------------ tests
    def independent(self, i: int, j: int, z: tuple[int, ...] = ()) -> tuple[bool, float]:
        """Test ``X_i ⊥ X_j | X_z``; return ``(p > alpha, p)`` and record the p-value.

        ``z`` must be a sorted tuple of Python ints without ``i`` and ``j`` (the
        learners build it so); the pair may come in either order.
        """
        a, b = (i, j) if i < j else (j, i)
        p, skipped = self.ci_test.query_key((a, b, z))
        self.queries += 1
        if not skipped:
            row = self._max_p[a]
            if not p <= row[b]:  # also when the stored value is NaN
                row[b] = p
        return p > self.alpha, p

    def separate(self, i: int, j: int, z: Iterable[int], p: float) -> None:
        """Record that ``z`` separates ``i`` and ``j`` with p-value ``p``."""
        key = (i, j) if i < j else (j, i)
        zs = tuple(sorted(int(k) for k in z))
        self.sepsets[key] = zs
        self._sepsets_frozen[key] = frozenset(zs)
        skipped = self.ci_test.is_skipped(key[0], key[1], zs)
        self._sep_p[key] = math.nan if skipped else float(p)

    def sepset_contains(self, x: int, y: int, z: int) -> bool:
        """The orientation rules' callback: is ``z`` in the separating set of ``x < y``?"""
        found = self._sepsets_frozen.get((x, y))
        return found is not None and z in found

    # ---------------------------------------------------------------- summary
    def max_pvalues(self) -> NDArray[np.float64]:
        """Symmetric matrix of the largest p-value performed per pair (NaN: none)."""
        upper = np.triu(np.array(self._max_p, dtype=np.float64), 1)  # NaN where untested
        out = upper + upper.T
        np.fill_diagonal(out, np.nan)
        return out

    def summary(self, adjacency: NDArray[np.bool_]) -> NDArray[np.float64]:
        """The per-pair p-value of Definitions 3.4 and 3.5 (FedCDnv §3.2).

        For a pair not adjacent in ``adjacency``: the p-value of the test that
        separated it (the one whose conditioning set is its recorded separating set).
        For an adjacent pair: the largest p-value over every test performed on it.
        NaN on the diagonal, for a pair whose deciding test(s) the small-sample rule
        skipped, and for a non-adjacent pair without a recorded separating set.
        """
        out = self.max_pvalues()
        d = out.shape[0]
        for a in range(d):
            for b in range(a + 1, d):
                if not adjacency[a, b]:
                    out[a, b] = out[b, a] = self._sep_p.get((a, b), math.nan)
        np.fill_diagonal(out, np.nan)
        return out
