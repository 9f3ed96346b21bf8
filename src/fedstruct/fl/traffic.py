"""Byte accounting: what crossed the wire, per round, client and direction."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["Traffic"]


@dataclass
class Traffic:
    """Counts of payload bytes and messages sent down (server -> client) and up.

    ``records[(rnd, client, direction)] = [bytes, messages]`` with direction
    ``"down"`` or ``"up"``.
    """

    records: dict[tuple[int, str, str], list[int]] = field(default_factory=dict)

    def add(self, rnd: int, client: str, direction: str, nbytes: int) -> None:
        """Record one message of ``nbytes`` bytes."""
        entry = self.records.setdefault((rnd, client, direction), [0, 0])
        entry[0] += int(nbytes)
        entry[1] += 1

    def total(self, direction: str) -> int:
        """All bytes sent in ``direction`` (``"down"`` or ``"up"``)."""
        return sum(v[0] for (_, _, d), v in self.records.items() if d == direction)

    def messages(self, direction: str) -> int:
        """Number of messages sent in ``direction``."""
        return sum(v[1] for (_, _, d), v in self.records.items() if d == direction)

    def per_round(self) -> dict[int, dict[str, int]]:
        """Round -> ``{"down": bytes, "up": bytes}``."""
        out: dict[int, dict[str, int]] = defaultdict(lambda: {"down": 0, "up": 0})
        for (rnd, _, d), v in self.records.items():
            out[rnd][d] += v[0]
        return dict(sorted(out.items()))

    def per_client(self) -> dict[str, dict[str, int]]:
        """Client -> ``{"down": bytes, "up": bytes}``."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"down": 0, "up": 0})
        for (_, client, d), v in self.records.items():
            out[client][d] += v[0]
        return dict(sorted(out.items()))

    def summary(self) -> dict[str, float]:
        """Flat metrics: ``bytes_down``, ``bytes_up``, ``messages_down``, ``messages_up``."""
        return {
            "bytes_down": self.total("down"),
            "bytes_up": self.total("up"),
            "messages_down": self.messages("down"),
            "messages_up": self.messages("up"),
        }
