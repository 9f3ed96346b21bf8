import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData, Schedule
from fedstruct.errors import PrivacyViolationError, ProtocolError
from fedstruct.fl import Client, LocalGrid, Message, Participation, handles


class EchoClient(Client):
    """Replies with the column means of its data plus the round it saw."""

    def __init__(self, data, leak=False, **kw):
        super().__init__(data, **kw)
        self.leak = leak
        self.calls = 0

    @handles("echo.ask", max_entries=lambda c, m: c.data.rows.shape[1] + 2)
    def ask(self, msg):
        self.calls += 1
        values = self.data.rows.to_numpy()[0] if self.leak else self.data.rows.mean().to_numpy()
        return Message("echo.ask", arrays={"v": values}, metrics={"round": msg.config["round"]})


def make_clients(k, leak_at=None):
    rng = np.random.default_rng(0)
    return [
        EchoClient(
            ClientData(f"c{i}", pd.DataFrame(rng.normal(size=(30, 3)), columns=list("xyz"))),
            leak=(i == leak_at),
        )
        for i in range(k)
    ]


def test_round_is_stamped_and_bytes_are_counted():
    grid = LocalGrid(make_clients(3))
    grid.begin_round(4)
    replies = grid.send_and_receive({n: Message("echo.ask") for n in grid.node_ids()})
    assert sorted(replies) == [0, 1, 2]
    assert all(r.metrics["round"] == 4 for r in replies.values())
    # down: 8 bytes (the round) per message; up: 3 float64 + 1 metric = 32 bytes
    assert grid.traffic.summary() == {
        "bytes_down": 24,
        "bytes_up": 96,
        "messages_down": 3,
        "messages_up": 3,
    }
    assert grid.traffic.per_client()["c1"] == {"down": 8, "up": 32}


def test_dropouts_give_no_answer_and_do_not_compute():
    clients = make_clients(10)
    grid = LocalGrid(clients, Participation(dropout=0.5), seed=3)
    grid.begin_round(1)
    plan = grid.participation.plan([c.name for c in clients], 1, 3)
    replies = grid.send_and_receive({n: Message("echo.ask") for n in grid.node_ids()})
    assert {clients[n].name for n in replies} == {c.name for c in clients} - plan.dropped
    assert sum(c.calls for c in clients) == len(replies)
    assert grid.lost_answers == len(plan.dropped) > 0


def test_outside_rounds_every_node_answers_whatever_the_participation_model():
    clients = make_clients(6)
    grid = LocalGrid(clients, Participation(dropout=0.5), seed=3)
    grid.begin_round(2)
    assert grid.participation.plan([c.name for c in clients], 2, 3).dropped  # some drop out
    replies = grid.exchange_outside_rounds({n: Message("echo.ask") for n in grid.connected_ids()})
    assert sorted(replies) == list(range(6))
    assert all(r.metrics["round"] == 2 for r in replies.values())
    assert grid.traffic.per_client()["c5"] == {"down": 8, "up": 32}
    assert grid.late_replies() == [] and grid.lost_answers == 0


def test_late_reporters_deliver_later_with_staleness():
    clients = make_clients(6)
    grid = LocalGrid(clients, Participation(report_rate=0.3), seed=11)
    received, late = 0, []
    for rnd in range(1, 8):
        grid.begin_round(rnd)
        late += [(rnd, lr) for lr in grid.late_replies()]
        received += len(grid.send_and_receive({n: Message("echo.ask") for n in grid.node_ids()}))
    assert late, "with a report rate of 0.3 some answers must arrive late"
    for delivered, lr in late:
        assert lr.staleness >= 1
        assert lr.message.metrics["round"] == lr.sent_round == delivered - lr.staleness
    # Every computed answer arrives on time, late, or is still pending.
    assert received + len(late) + len(grid.get_state()["pending"]) == 6 * 7


def test_late_joiner_takes_part_from_its_round():
    clients = make_clients(3)
    grid = LocalGrid(clients, Participation(schedule=Schedule(join={"c2": 3})))
    grid.begin_round(2)
    assert grid.node_ids() == [0, 1]
    with pytest.raises(ProtocolError, match="node 2 is not available in round 2"):
        grid.send_and_receive({2: Message("echo.ask")})
    grid.begin_round(3)
    assert grid.node_ids() == [0, 1, 2]


def test_leaking_client_is_stopped_by_the_audit():
    grid = LocalGrid(make_clients(3, leak_at=1))
    grid.begin_round(1)
    with pytest.raises(PrivacyViolationError, match=r"client 'c1'.*'v' contains 1 row"):
        grid.send_and_receive({n: Message("echo.ask") for n in grid.node_ids()})


def test_unknown_kind_is_a_protocol_error():
    grid = LocalGrid(make_clients(1))
    grid.begin_round(1)
    with pytest.raises(
        ProtocolError, match=r"no handler for 'nope\.x'; it answers \['echo\.ask'\]"
    ):
        grid.send_and_receive({0: Message("nope.x")})
