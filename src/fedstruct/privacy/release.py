"""Release thresholds: share an aggregate only when enough clients built it.

FedNGM §2.6: "not sharing either the updated global dependency graph or the global
NGM master model with any clients unless updates are based on data from no less than
T clients", so that no client can work back to another's data.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Interval, check_fields

__all__ = ["ReleaseThreshold"]


@dataclass(frozen=True)
class ReleaseThreshold:
    """The minimum number ``T`` of contributing clients for a release.

    Raises
    ------
    ConfigError
        If ``min_clients`` is not a positive integer.
    """

    min_clients: int

    def __post_init__(self) -> None:
        check_fields(self, {"min_clients": Interval(int, 1)}, "release threshold")

    def allows(self, contributors: int) -> bool:
        """Whether an aggregate built from ``contributors`` clients may be released."""
        return contributors >= self.min_clients

    def refusal(self, what: str, contributors: int) -> str:
        """Why ``what`` may not be released ("" if it may)."""
        if self.allows(contributors):
            return ""
        return (
            f"{what} was built from {contributors} client(s), fewer than the release "
            f"threshold T={self.min_clients}; it is not released"
        )
