"""Suite-wide pytest hooks."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import torch

from fedstruct.fl.backend import LocalBackend
from fedstruct.fl.grid import LocalGrid
from fedstruct.fl.message import Message


def pytest_report_header() -> str:
    """Say which torch kernels and thread count ran: trained numbers depend on them."""
    return (
        f"torch {torch.__version__}: CPU kernels {torch.backends.cpu.get_cpu_capability()}, "
        f"{torch.get_num_threads()} threads (make test-cpus runs the other settings)"
    )


class RecordingBackend(LocalBackend):
    """A local backend whose grid records every reply the server receives, as
    ``(node, message)`` pairs in ``received`` (the secure-aggregation audit tests:
    no summable payload may reach the server in the clear)."""

    def __init__(self) -> None:
        self.received: list[tuple[int, Message]] = []

    def run(self, server_fn, method, clients, participation, seed):
        built = [method.make_client(c) for c in clients]
        received = self.received

        class Grid(LocalGrid):
            def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
                replies = super()._exchange(messages)
                received.extend(sorted(replies.items()))
                return replies

        return server_fn(Grid(built, participation, seed))


@pytest.fixture
def recording_backend() -> type[RecordingBackend]:
    """:class:`RecordingBackend`, to build one per run (``recording_backend()``)."""
    return RecordingBackend
