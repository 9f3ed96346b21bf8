"""Local constraint-based causal discovery: PC, FCI and RFCI with cached CI tests.

A library layer that every method and experiment may call (it imports only
``graphs``, ``data``, ``errors`` and ``fl.progress``): :func:`pc` learns a CPDAG,
:func:`fci` and :func:`rfci` a PAG, on one table. :func:`make_ci_test` builds the CI test
from the data (G², Pearson χ², Fisher-z, the conditional-Gaussian or degenerate-Gaussian
test for mixed data, or ``"auto"``, chosen from the variables' kinds and, between the
two mixed tests, the rows: :func:`choose_ci_test`; :data:`CI_TESTS`);
:class:`OracleTest` answers
from a known graph's d-separations. Every learner returns a :class:`LocalResult`:
the graph, every separating set, the per-pair p-values and the cached
:class:`CITest`, on which a caller runs further tests without recomputing any
(FedCDnv's C-Update does). Each learner takes background knowledge
(:class:`Knowledge`: tiers, forbidden and required edges, forbidden adjacencies;
docs/knowledge.md). See docs/local_learners.md.
"""

from fedstruct.discovery.build import CI_TESTS, as_ci_test, choose_ci_test, make_ci_test
from fedstruct.discovery.citest import CIKey, CITest, OracleTest, ci_key
from fedstruct.discovery.conditional_gaussian import ConditionalGaussianTest
from fedstruct.discovery.degenerate import DegenerateGaussianTest
from fedstruct.discovery.discrete import (
    DOF_CONVENTIONS,
    SMALL_SAMPLE_RULES,
    DiscreteTest,
    SmallSampleRule,
)
from fedstruct.discovery.fci import fci
from fedstruct.discovery.fisherz import FisherZTest
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.pc import pc
from fedstruct.discovery.result import LocalResult
from fedstruct.discovery.rfci import rfci

__all__ = [
    "CI_TESTS",
    "DOF_CONVENTIONS",
    "SMALL_SAMPLE_RULES",
    "CIKey",
    "CITest",
    "ConditionalGaussianTest",
    "DegenerateGaussianTest",
    "DiscreteTest",
    "FisherZTest",
    "Knowledge",
    "LocalResult",
    "OracleTest",
    "SmallSampleRule",
    "as_ci_test",
    "choose_ci_test",
    "ci_key",
    "fci",
    "make_ci_test",
    "pc",
    "rfci",
]
