import pytest

from fedstruct.data import Schedule
from fedstruct.errors import ConfigError
from fedstruct.fl import Participation

NAMES = [f"c{i:02d}" for i in range(20)]


def test_full_participation_asks_everyone_on_time():
    plan = Participation().plan(NAMES, 1, seed=0)
    assert plan.sampled == tuple(NAMES)
    assert not plan.dropped
    assert plan.reports == frozenset(NAMES)
    assert all(plan.answers(n) for n in NAMES)


def test_sampling_rate_and_minimum():
    p = Participation(sample_rate=0.25)
    assert len(p.plan(NAMES, 3, seed=1).sampled) == 5
    assert len(Participation(sample_rate=0.01, min_clients=3).plan(NAMES, 3, 1).sampled) == 3
    # Different rounds sample differently, the same round the same way.
    assert p.plan(NAMES, 3, 1).sampled == p.plan(list(reversed(NAMES)), 3, 1).sampled
    assert p.plan(NAMES, 3, 1).sampled != p.plan(NAMES, 4, 1).sampled


def test_dropout_rate_is_respected_over_many_rounds():
    p = Participation(dropout=0.3)
    dropped = sum(len(p.plan(NAMES, r, 7).dropped) for r in range(1, 501))
    assert dropped / (500 * 20) == pytest.approx(0.3, abs=0.02)


def test_stragglers_miss_the_deadline_only_when_slower():
    p = Participation(straggler_rate=0.5, straggler_slowdown=3.0, deadline=2.0)
    plan = p.plan(NAMES, 1, 3)
    slow = {n for n, t in plan.latency.items() if t > 1.0}
    assert 0 < len(slow) < 20
    assert {n for n in NAMES if not plan.answers(n)} == slow
    no_deadline = Participation(straggler_rate=0.5).plan(NAMES, 1, 3)
    assert all(no_deadline.answers(n) for n in NAMES)


def test_always_reporting_share_reports_every_round():
    p = Participation(report_rate=0.1, always_report=0.25)
    always = frozenset.intersection(*(p.plan(NAMES, r, 5).reports for r in range(1, 30)))
    assert len(always) == 5


def test_schedule_controls_availability():
    sched = Schedule(join={"c00": 3}, leave={"c01": 2})
    p = Participation(schedule=sched)
    assert "c00" not in p.plan(NAMES, 2, 0).available
    assert "c00" in p.plan(NAMES, 3, 0).available
    assert "c01" in p.plan(NAMES, 1, 0).available
    assert "c01" not in p.plan(NAMES, 2, 0).available


def test_random_schedule_and_arrivals():
    s = Schedule.random(NAMES, rounds=10, late_fraction=0.5, leave_fraction=0.2, seed=0)
    assert len(s.join) == 10 and all(2 <= r <= 10 for r in s.join.values())
    assert all(s.leave[n] > s.join.get(n, 1) for n in s.leave)
    a = Schedule.arrivals(NAMES, initial=15, arrival_round=10)
    assert len(a.active(NAMES, 9)) == 15 and len(a.active(NAMES, 10)) == 20


@pytest.mark.parametrize(
    "kwargs", [{"sample_rate": 0.0}, {"dropout": 1.5}, {"min_clients": 0}, {"deadline": -1.0}]
)
def test_bad_participation_is_a_config_error(kwargs):
    with pytest.raises(ConfigError):
        Participation(**kwargs)


def test_schedule_rejects_leaving_before_joining():
    with pytest.raises(ConfigError, match="'c1' leaves at round 2 but joins at 3"):
        Schedule(join={"c1": 3}, leave={"c1": 2})
