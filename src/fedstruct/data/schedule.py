"""When each client belongs to the federation: join and leave rounds.

Rounds are numbered from 1, as in Flower. A client with ``join = r`` takes part
from round ``r`` on; with ``leave = s`` its last round is ``s - 1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fedstruct.errors import ConfigError

__all__ = ["Schedule"]


@dataclass(frozen=True)
class Schedule:
    """Join and leave rounds per client name.

    Parameters
    ----------
    join
        Client name -> first round it takes part in. Absent clients join at round 1.
    leave
        Client name -> first round it no longer takes part in. Absent clients stay.

    Raises
    ------
    ConfigError
        If a round is below 1 or a client leaves before (or when) it joins.
    """

    join: Mapping[str, int] = field(default_factory=dict)
    leave: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "join", dict(self.join))
        object.__setattr__(self, "leave", dict(self.leave))
        for name, r in self.join.items():
            if int(r) < 1:
                raise ConfigError(f"client {name!r} joins at round {r}; rounds start at 1")
        for name, r in self.leave.items():
            if int(r) <= self.join.get(name, 1):
                raise ConfigError(
                    f"client {name!r} leaves at round {r} but joins at {self.join.get(name, 1)}; "
                    "a client must take part in at least one round"
                )

    def is_active(self, name: str, rnd: int) -> bool:
        """Whether client ``name`` belongs to the federation in round ``rnd``."""
        return self.join.get(name, 1) <= rnd < self.leave.get(name, np.iinfo(np.int64).max)

    def active(self, names: Sequence[str], rnd: int) -> list[str]:
        """The names among ``names`` that belong to the federation in round ``rnd``."""
        return [n for n in names if self.is_active(n, rnd)]

    @classmethod
    def arrivals(cls, names: Sequence[str], initial: int, arrival_round: int) -> Schedule:
        """The first ``initial`` clients from round 1, the others from ``arrival_round``.

        This is the pre-/post-arrival cohort set-up of evolving federations (e.g. the
        F-CMs experiments, new clients at round 10 or 20).
        """
        if not 0 < initial <= len(names):
            raise ConfigError(f"initial cohort size {initial} must lie in 1..{len(names)}")
        return cls(join={n: arrival_round for n in names[initial:]})

    @classmethod
    def random(
        cls,
        names: Sequence[str],
        rounds: int,
        late_fraction: float,
        leave_fraction: float,
        seed: int,
    ) -> Schedule:
        """Random late joins and early leaves.

        A share ``late_fraction`` of the clients joins at a round drawn uniformly
        from ``2..rounds``; a share ``leave_fraction`` (drawn independently, never
        leaving before joining) leaves at a later round drawn uniformly.

        Parameters
        ----------
        names
            Client names.
        rounds
            Number of rounds of the run.
        late_fraction, leave_fraction
            Shares in ``[0, 1]``.
        seed
            Seed of the draws.
        """
        for label, frac in (("late_fraction", late_fraction), ("leave_fraction", leave_fraction)):
            if not 0.0 <= frac <= 1.0:
                raise ConfigError(f"{label} must lie in [0, 1], got {frac}")
        if rounds < 2:
            return cls()
        rng = np.random.default_rng([seed, 0x5C4ED])
        n = len(names)
        late = rng.permutation(n)[: round(late_fraction * n)]
        join = {names[i]: int(rng.integers(2, rounds + 1)) for i in sorted(late)}
        leave: dict[str, int] = {}
        for i in sorted(rng.permutation(n)[: round(leave_fraction * n)]):
            first = join.get(names[i], 1)
            if first < rounds:
                leave[names[i]] = int(rng.integers(first + 1, rounds + 1))
        return cls(join=join, leave=leave)
