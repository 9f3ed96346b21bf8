"""The pieces PC, FCI and RFCI share: starting a run and finding a minimal separation.

- :func:`start_search` is every learner's first step: it checks ``alpha`` and
  ``depth``, builds the CI test and the :class:`Evidence`, and runs the adjacency
  search (Spirtes, Glymour & Scheines 2000, §5.4.2, steps A-B, PC-stable form;
  :func:`~fedstruct.discovery.skeleton.adjacency_search`). The
  :class:`StartedSearch` it returns turns the learner's final marks into its
  :class:`LocalResult` (:meth:`StartedSearch.result`).
- :func:`separate_by_subset` tries the non-empty subsets of a candidate set by
  increasing size and records the first that separates a pair: RFCI's *minimal*
  separating sets, in its unshielded-triple check and its discriminating-path check
  (Colombo, Maathuis, Kalisch & Richardson 2012, Ann. Statist. 40(1), §3, steps 2-3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.build import as_ci_test
from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.knowledge import Knowledge, KnowledgeRules, Prune, as_rules
from fedstruct.discovery.result import LocalResult
from fedstruct.discovery.skeleton import adjacency_search, check_depth
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import Graph

__all__ = ["StartedSearch", "check_alpha", "separate_by_subset", "start_search"]


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in ``[0, 1)``.

    Raises
    ------
    ConfigError
        Otherwise.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 <= alpha < 1:
        raise ConfigError(f"alpha must be a number in [0, 1), got {alpha!r}")
    return float(alpha)


@dataclass(frozen=True)
class StartedSearch:
    """A learner run after its adjacency search (returned by :func:`start_search`).

    Attributes
    ----------
    ci_test
        The run's cached CI test.
    evidence
        What the run has recorded so far; its current phase is ``"adjacency"``.
    skeleton
        The adjacency search's symmetric boolean adjacency matrix.
    tests_before
        ``ci_test.n_tests`` before the run: the result counts the tests after it.
    knowledge
        The run's background knowledge resolved against its variables (``None``: none).
    """

    ci_test: CITest
    evidence: Evidence
    skeleton: NDArray[np.bool_]
    tests_before: int
    knowledge: KnowledgeRules | None = None

    def result(self, algorithm: str, marks: NDArray[np.int8]) -> LocalResult:
        """The run's :class:`LocalResult`, with the learner's final ``marks`` as its graph.

        Closes the evidence's current phase.
        """
        graph = Graph(self.ci_test.names, marks)
        return LocalResult.from_evidence(
            algorithm, graph, self.skeleton, self.evidence, self.tests_before
        )


def start_search(
    data: CITest | DataLike,
    *,
    alpha: float,
    test: str,
    depth: int | None,
    stable: bool,
    progress: str | None = None,
    knowledge: Knowledge | KnowledgeRules | None = None,
    latent_free: bool = False,
    prune_sets: Prune = False,
) -> StartedSearch:
    """Check the options, build the CI test and the evidence, run the adjacency search.

    The learners' shared first step (module docstring); their later phases call
    ``evidence.phase`` themselves.

    Parameters
    ----------
    data
        A :class:`CITest` (reused with its cache) or data (``ClientData``,
        ``DataFrame``, array) for ``make_ci_test(data, test)``.
    alpha
        Significance level; a test says independent iff ``p > alpha``.
    test
        Test name when ``data`` is data: ``"auto"`` (the learners' default),
        ``"g2"``, ``"chi2"``, ``"fisherz"``, ``"cg"`` or ``"dg"``
        (:data:`~fedstruct.discovery.build.CI_TESTS`); missing values are deleted
        test-wise (:mod:`fedstruct.discovery.missing`).
    depth
        Largest conditioning set of the adjacency search; ``None`` or ``-1``: none.
    stable
        PC-stable adjacency search or the order-dependent original.
    progress
        A label to show the adjacency search's progress under on stderr (and its
        cost first on a wide table:
        :func:`~fedstruct.discovery.skeleton.adjacency_search`);
        ``None``: silent.
    knowledge, latent_free
        Background knowledge (checked against the CI test's variables) and whether
        the learner assumes no latent confounder, for
        :func:`~fedstruct.discovery.skeleton.adjacency_search`.
    prune_sets
        With knowledge, where to condition each pair only on its possible ancestors
        (:meth:`~fedstruct.discovery.knowledge.KnowledgeRules.pool`): ``True``
        everywhere, ``"possible_dsep"`` only among Possible-D-SEP's candidates.

    Returns
    -------
    StartedSearch
        The CI test, the evidence (in phase ``"adjacency"``), the skeleton and the
        CI test's count of tests before the run.

    Raises
    ------
    ConfigError
        For an out-of-range ``alpha`` or ``depth``, or an unknown test.
    KnowledgeError, UnknownVariableError
        For knowledge that contradicts itself or names another variable.
    DataError, NonFiniteDataError
        For bad data.
    """
    alpha = check_alpha(alpha)
    check_depth(depth)
    ci_test = as_ci_test(data, test)
    rules = as_rules(knowledge, ci_test.names, prune_sets)
    tests_before = ci_test.n_tests
    evidence = Evidence(ci_test, alpha)
    evidence.phase("adjacency")
    skeleton = adjacency_search(
        evidence,
        depth=depth,
        stable=stable,
        progress=progress,
        knowledge=rules,
        latent_free=latent_free,
    )
    return StartedSearch(ci_test, evidence, skeleton, tests_before, rules)


def separate_by_subset(
    evidence: Evidence, u: int, v: int, candidates: Sequence[int]
) -> tuple[int, ...] | None:
    """Record the first non-empty subset of ``candidates`` that separates ``u`` and ``v``.

    Subsets are tried by increasing size, each size in ``itertools.combinations``
    order, so the one recorded (:meth:`Evidence.separate`) is a minimal separating
    set among them (Colombo et al. 2012, §3). The empty set is not tried.

    Parameters
    ----------
    evidence
        Asks the tests and records the separation.
    u, v
        The pair.
    candidates
        Sorted variable indices without ``u`` and ``v``.

    Returns
    -------
    tuple of int or None
        The separating subset found, or ``None`` if none is (nothing recorded then).
    """
    asked = evidence.ci_test.provisional
    for size in range(1, len(candidates) + 1):
        for subset in combinations(candidates, size):
            independent, p = evidence.independent(u, v, subset)
            if independent:
                evidence.separate(u, v, subset, p)
                return subset
        if evidence.ci_test.provisional > asked:
            return None  # this size's tests are being gathered (CITest.barrier)
    return None
