"""The learners' shared start (start_search) and minimal-separation helper."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.discovery.citest import CITest, ci_key
from fedstruct.discovery.evidence import Evidence
from fedstruct.discovery.search import separate_by_subset, start_search
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import NONE, TAIL


class ScriptedTest(CITest):
    """Independent exactly for the listed facts (p-value given), dependent otherwise."""

    def __init__(self, names, facts):
        super().__init__(names, "scripted", None)
        self.facts = {ci_key(i, j, z): p for (i, j, z), p in facts.items()}

    def _compute(self, i, j, z):
        return self.facts.get((i, j, z), 0.001), False


def test_separate_by_subset_records_the_first_subset_by_size():
    facts = {(0, 1, (2, 3)): 0.4, (0, 1, (4,)): 0.3, (0, 1, (2, 3, 4)): 0.9}
    evidence = Evidence(ScriptedTest(list("abcde"), facts), alpha=0.05)
    assert separate_by_subset(evidence, 1, 0, (2, 3, 4)) == (4,)  # size 1 before size 2
    assert evidence.sepsets == {(0, 1): (4,)}
    assert evidence.ci_test.n_tests == 3  # (2,), (3,), (4,); the empty set is not tried
    assert separate_by_subset(evidence, 2, 3, (0, 1)) is None
    assert (2, 3) not in evidence.sepsets


def test_start_search_counts_the_tests_of_its_own_run():
    ci_test = ScriptedTest(list("abc"), {(0, 2, (1,)): 0.5})
    ci_test.pvalue(0, 1)  # a test before the run
    search = start_search(ci_test, alpha=0.05, test="g2", depth=None, stable=True)
    assert search.tests_before == 1 and search.ci_test is ci_test
    assert search.evidence.sepsets == {(0, 2): (1,)}
    assert search.skeleton.sum() == 4  # a - b - c
    result = search.result("pc", np.where(search.skeleton, TAIL, NONE).astype(np.int8))
    assert result.n_tests == ci_test.n_tests - 1
    assert result.tests_by_phase == {"adjacency": ci_test.n_tests - 1}
    with pytest.raises(ConfigError, match="alpha"):
        start_search(ci_test, alpha=1.0, test="g2", depth=None, stable=True)
    with pytest.raises(ConfigError, match="depth"):
        start_search(ci_test, alpha=0.05, test="g2", depth=-2, stable=True)
