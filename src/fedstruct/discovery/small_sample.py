"""When a discrete test has too few rows to be performed (the small-sample rules).

A G² or χ² test of ``X ⊥ Y | Z`` on ``n`` rows is performed only when ``n`` is large
against its table (:class:`SmallSampleRule`); the named rules are those of the Causal
Learner toolbox, pcalg and causal-learn (:data:`SMALL_SAMPLE_RULES`; the choice is
documented in docs/local_learners.md). Every place that counts a table applies them
through :func:`rule_performs` and :func:`skipped_pvalue`: the one-process tests
(:mod:`~fedstruct.discovery.discrete`), the centre tables of a level
(:mod:`~fedstruct.discovery.centre_tables`) and the pooled tests
(:mod:`~fedstruct.discovery.from_statistics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = [
    "SMALL_SAMPLE_RULES",
    "SmallSampleRule",
    "resolve_small_sample_rule",
    "rule_max_size",
    "rule_performs",
    "skipped_pvalue",
]


@dataclass(frozen=True)
class SmallSampleRule:
    """When a discrete test has too few rows to be performed, and what is assumed then.

    The test of ``X ⊥ Y | Z`` is performed iff ``n >= min_ratio * size``, where
    ``size`` is the number of cells ``|X||Y|∏|Z_k|`` (``per="cell"``) or the plain
    degrees of freedom ``(|X|-1)(|Y|-1)∏|Z_k|`` (``per="df"``), computed from the
    cardinalities (not from the observed table). A test not performed returns the
    ``verdict``: ``"dependent"`` (p = 0) or ``"independent"`` (p = 1), and counts as
    skipped (:attr:`CITest.n_skipped`).

    Attributes
    ----------
    min_ratio
        Required rows per cell (or per degree of freedom); ``0`` performs every test.
    per
        ``"cell"`` or ``"df"``.
    verdict
        ``"dependent"`` or ``"independent"``.
    """

    min_ratio: float
    per: Literal["cell", "df"] = "cell"
    verdict: Literal["dependent", "independent"] = "dependent"

    def __post_init__(self) -> None:
        if not self.min_ratio >= 0:
            raise ConfigError(f"min_ratio must be >= 0, got {self.min_ratio}")
        if self.per not in ("cell", "df"):
            raise ConfigError(unknown_choice_message("small-sample unit", self.per, ("cell", "df")))
        if self.verdict not in ("dependent", "independent"):
            raise ConfigError(
                unknown_choice_message("verdict", self.verdict, ("dependent", "independent"))
            )


SMALL_SAMPLE_RULES: dict[str, SmallSampleRule] = {
    # Causal Learner toolbox (Ling et al. 2021), my_g2_test: n / (|X||Y|prod|Z|) >= 5,
    # else p = NaN, read as dependence by its PC-style skeleton searches.
    "toolbox": SmallSampleRule(5.0, "cell", "dependent"),
    # pcalg (Kalisch et al. 2012) gSquareDis: n < 10 * df  =>  p = 1 ("treated as independence").
    "pcalg": SmallSampleRule(10.0, "df", "independent"),
    # causal-learn: no rule; every test is performed.
    "none": SmallSampleRule(0.0, "cell", "dependent"),
}
"""Named small-sample rules; ``"toolbox"`` is the default (see docs/local_learners.md)."""


def resolve_small_sample_rule(rule: str | SmallSampleRule) -> SmallSampleRule:
    """A :class:`SmallSampleRule` from itself or from a name of :data:`SMALL_SAMPLE_RULES`.

    Raises
    ------
    ConfigError
        For an unknown name.
    """
    if isinstance(rule, SmallSampleRule):
        return rule
    if rule not in SMALL_SAMPLE_RULES:
        raise ConfigError(unknown_choice_message("small-sample rule", rule, SMALL_SAMPLE_RULES))
    return SMALL_SAMPLE_RULES[rule]


def rule_performs(
    rule: SmallSampleRule, cards: Sequence[int], i: int, j: int, z: Sequence[int], n: int
) -> bool:
    """Whether ``rule`` performs the test of ``X_i ⊥ X_j | X_z`` on ``n`` rows, the
    variables having ``cards`` levels (:class:`SmallSampleRule`); never on no row."""
    if n == 0:
        return False
    if rule.min_ratio == 0:
        return True
    size = (cards[i] - 1) * (cards[j] - 1) if rule.per == "df" else cards[i] * cards[j]
    for k in z:
        size *= cards[k]
    return n >= rule.min_ratio * size


def rule_max_size(
    rule: SmallSampleRule,
    cards: NDArray[np.float64],
    i: int,
    j: int,
    candidates: Sequence[int],
    n: int,
) -> int:
    """The largest ``k`` such that some ``k``-subset of ``candidates`` gives a test of
    ``X_i ⊥ X_j`` that ``rule`` performs on ``n`` rows, when a test it does not perform
    says "dependent" (:meth:`~fedstruct.discovery.citest.CITest.max_testable_size`):
    the ``k`` candidates of fewest levels pass the rule; ``-1`` when not even the
    pair's own table does. ``len(candidates)`` for a rule that performs every test or
    reads a skipped test as "independent" (such a test may remove an edge)."""
    if rule.min_ratio == 0 or rule.verdict != "dependent":
        return len(candidates)
    size = (cards[i] - 1) * (cards[j] - 1) if rule.per == "df" else cards[i] * cards[j]
    budget = n / rule.min_ratio
    if size > budget:
        return -1
    if not len(candidates):
        return 0
    # the product of the k smallest cardinalities, in logs (no overflow)
    logs = np.cumsum(np.log(np.sort(cards[list(candidates)])))
    return int(np.searchsorted(logs, np.log(budget / size) + 1e-12, side="right"))


def skipped_pvalue(rule: SmallSampleRule, n: int) -> float:
    """The p-value of a test ``rule`` does not perform on ``n`` rows: its verdict, and
    "dependent" (0) with no row at all (no evidence either way; a skipped test never
    removes an edge)."""
    return 0.0 if n == 0 or rule.verdict == "dependent" else 1.0
