"""DP budgets: calibration and composition across rounds (RDP)."""

import pytest
from opacus.accountants import RDPAccountant

from fedstruct.errors import ConfigError
from fedstruct.privacy.dp import DPBudget, PrivacyLedger


def test_calibrated_noise_spends_just_under_the_budget():
    budget = DPBudget(epsilon=2.0)
    sigma = budget.noise_multiplier(sample_rate=0.25, steps=40)
    spent = PrivacyLedger([(sigma, 0.25, 40)]).epsilon(budget.delta)
    assert 2.0 - 0.02 <= spent <= 2.0
    # More steps need more noise for the same budget.
    assert budget.noise_multiplier(0.25, 80) > sigma


def test_ledger_composes_rounds_like_a_single_accountant():
    rounds = [(1.1, 0.5, 4), (1.1, 0.5, 4), (2.0, 0.1, 30)]
    oracle = RDPAccountant()
    for sigma, q, n in rounds:
        for _ in range(n):
            oracle.step(noise_multiplier=sigma, sample_rate=q)
    ledger = PrivacyLedger()
    for entry in rounds:
        ledger.record(*entry)
    assert ledger.epsilon(1e-5) == pytest.approx(oracle.get_epsilon(1e-5), rel=1e-9)
    assert PrivacyLedger(rounds[:2]).epsilon(1e-5) < ledger.epsilon(1e-5)
    assert PrivacyLedger().epsilon(1e-5) == 0.0


def test_ledger_refuses_the_round_that_would_exceed_the_budget():
    budget = DPBudget(epsilon=1.0)
    sigma = budget.noise_multiplier(0.5, 12)  # 3 rounds of 4 steps
    ledger = PrivacyLedger()
    taken = 0
    while ledger.allows(budget, sigma, 0.5, 4):
        ledger.record(sigma, 0.5, 4)
        taken += 1
    assert taken == 3 and ledger.epsilon(budget.delta) <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"epsilon": 0.0}, "epsilon"), ({"epsilon": 1.0, "delta": 1.0}, "delta"),
     ({"epsilon": 1.0, "max_grad_norm": 0.0}, "DP max_grad_norm must be a number > 0")],
)  # fmt: skip
def test_bad_budgets_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        DPBudget(**kwargs)
