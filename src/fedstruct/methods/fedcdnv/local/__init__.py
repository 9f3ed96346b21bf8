"""FedCDnv's local learners: our own PC, FCI and RFCI with cached CI tests.

Each client runs :func:`fci` (or :func:`rfci`) on its own data; the
:class:`LocalResult` holds the PAG, every separating set, the per-pair p-values of
FedCDnv's Definitions 3.4-3.5 and the client's cached :class:`CITest`, which
C-Update (Algorithm 2) reuses for its extra tests. See docs/local_learners.md.
"""

from fedstruct.methods.fedcdnv.local.build import CI_TESTS, as_ci_test, make_ci_test
from fedstruct.methods.fedcdnv.local.citest import CIKey, CITest, OracleTest, ci_key
from fedstruct.methods.fedcdnv.local.discrete import (
    DOF_CONVENTIONS,
    SMALL_SAMPLE_RULES,
    DiscreteTest,
    SmallSampleRule,
)
from fedstruct.methods.fedcdnv.local.fci import fci
from fedstruct.methods.fedcdnv.local.fisherz import FisherZTest
from fedstruct.methods.fedcdnv.local.pc import pc
from fedstruct.methods.fedcdnv.local.result import LocalResult
from fedstruct.methods.fedcdnv.local.rfci import rfci

__all__ = [
    "CI_TESTS",
    "DOF_CONVENTIONS",
    "SMALL_SAMPLE_RULES",
    "CIKey",
    "CITest",
    "DiscreteTest",
    "FisherZTest",
    "LocalResult",
    "OracleTest",
    "SmallSampleRule",
    "as_ci_test",
    "ci_key",
    "fci",
    "make_ci_test",
    "pc",
    "rfci",
]
