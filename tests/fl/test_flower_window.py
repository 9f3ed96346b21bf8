"""FlowerGrid's window: at most ``max_in_flight`` messages of an exchange at the SuperLink.

Flower's simulation runtime scans every stored message for every node ten times a
second, so an exchange that stores all K messages at once costs K^2 per sweep
(fedstruct.fl.flower.grid's docstring); the grid pushes the next messages as answers
arrive. A stand-in for Flower's grid answers at once and records how many messages it
held unanswered.
"""

from __future__ import annotations

from uuid import uuid4

import pytest

pytest.importorskip("flwr")

from flwr.app import Message as FlowerMessage
from flwr.supercore.task_identity import TaskIdentity

from fedstruct.errors import ConfigError
from fedstruct.fl.flower.grid import HELLO, FlowerGrid
from fedstruct.fl.flower.records import from_records, to_records
from fedstruct.fl.message import Message


@pytest.fixture(autouse=True)
def _a_run(monkeypatch):
    """Flower stamps a message with the run of the process's task (a ServerApp's)."""
    monkeypatch.setattr(TaskIdentity, "_run_id", 1, raising=False)
    monkeypatch.setattr(TaskIdentity, "_node_id", 1, raising=False)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1, raising=False)


class _Link:
    """Flower's grid API (get_node_ids, push_messages, pull_messages): node ``100 + k``
    hosts partition ``k``; each message is answered by the next pull."""

    def __init__(self, nodes: int) -> None:
        self.nodes = [100 + k for k in range(nodes)]
        self.held: dict[str, FlowerMessage] = {}
        self.most_held = 0
        self.pushed = 0

    def get_node_ids(self) -> list[int]:
        return list(self.nodes)

    def push_messages(self, messages: list[FlowerMessage]) -> list[str]:
        ids = []
        for message in messages:
            message.metadata.__dict__["_message_id"] = str(uuid4())
            self.held[message.metadata.message_id] = message
            ids.append(message.metadata.message_id)
        self.pushed += len(messages)
        self.most_held = max(self.most_held, len(self.held))
        return ids

    def pull_messages(self, ids: list[str]) -> list[FlowerMessage]:
        replies = []
        for msg_id in ids:
            message = self.held.pop(msg_id, None)
            if message is None:
                continue
            partition = message.metadata.dst_node_id - 100
            asked = from_records(message.content)
            config = {"partition": partition} if asked.kind == HELLO else {"from": partition}
            replies.append(
                FlowerMessage(to_records(Message(asked.kind, config=config)), reply_to=message)
            )
        return replies


@pytest.mark.parametrize("window", [1, 3, None])
def test_an_exchange_keeps_at_most_the_window_at_the_link_and_every_node_answers(window):
    link = _Link(7)
    grid = FlowerGrid(link, [f"site-{k}" for k in range(7)], max_in_flight=window, poll_interval=0)
    replies = grid.exchange_outside_rounds({k: Message("ask") for k in range(7)})
    assert {k: r.config["from"] for k, r in replies.items()} == {k: k for k in range(7)}
    assert link.pushed == 14  # 7 hellos, 7 questions
    assert link.most_held == (7 if window is None else window)


def test_a_window_below_one_is_refused():
    with pytest.raises(ConfigError, match="max_in_flight must be at least 1"):
        FlowerGrid(_Link(2), ["a", "b"], max_in_flight=0)


def test_flower_sim_refuses_client_names_without_their_data():
    """flower-sim runs the clients here: names alone (a deployment's) are refused
    before Ray starts."""
    from fedstruct.fl.flower.simulation import FlowerSimBackend

    with pytest.raises(ConfigError, match="give their data, not names"):
        FlowerSimBackend().run(lambda grid: None, object(), ["a", "b"], None, 0)
