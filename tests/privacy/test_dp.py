"""DP budgets: calibration and composition across rounds (RDP)."""

import pytest
from opacus.accountants import RDPAccountant

from fedstruct.errors import ConfigError
from fedstruct.privacy.dp import DPBudget, PrivacyLedger, SitePrivacy, site_budget


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
    # 3 rounds of 4 steps; at sample rate 0.25 (0.5 took Opacus 4 s: fractional orders)
    sigma = budget.noise_multiplier(0.25, 12)
    ledger = PrivacyLedger()
    taken = 0
    while ledger.allows(budget, sigma, 0.25, 4):
        ledger.record(sigma, 0.25, 4)
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


@pytest.mark.filterwarnings("ignore:Optimal order")  # α = 64 is optimal for this budget
def test_a_site_refuses_the_round_past_its_budget_before_training_it():
    budget = DPBudget(epsilon=2.0, delta=1e-3)
    site = SitePrivacy("a", budget, n_rows=100, batch_size=25, epochs=1, rounds=2)
    assert (site.sample_rate, site.steps) == (0.25, 4)
    for rnd in (1, 2):  # the noise is calibrated for these two rounds
        assert site.next_round(rnd).max_grad_norm == 1.0
        site.record_round()
    assert 1.9 < site.epsilon <= 2.0
    with pytest.raises(ConfigError, match=r"site 'a': training round 3 would spend ε = .* > "):
        site.next_round(3)  # e.g. a run resumed with more rounds
    assert len(site.ledger.history) == 2


def test_a_fixed_noise_multiplier_over_the_budget_is_refused_up_front():
    budget = DPBudget(epsilon=1.0, delta=1e-3)
    with pytest.raises(ConfigError, match=r"site 'b': 10 rounds of DP-SGD at noise multiplier"):
        SitePrivacy("b", budget, n_rows=100, batch_size=25, epochs=1, rounds=10,
                    noise_multiplier=0.5)  # fmt: skip
    kept = SitePrivacy("b", budget, n_rows=100, batch_size=25, epochs=1, rounds=1,
                       noise_multiplier=5.0)  # fmt: skip
    assert kept.noise_multiplier == 5.0


def test_site_delta_defaults_to_one_over_the_rows():
    assert site_budget(None, None, 1.0, 100) is None
    assert site_budget(3.0, None, 1.0, 400).delta == 1 / 400
    assert site_budget(3.0, 1e-5, 0.5, 400) == DPBudget(3.0, 1e-5, 0.5)
