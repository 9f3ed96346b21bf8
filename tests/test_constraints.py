"""The declarative field checks every config uses (fedstruct.constraints)."""

from dataclasses import dataclass

import numpy as np
import pytest

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.errors import ConfigError, PartitionError


@pytest.mark.parametrize(
    ("constraint", "good", "bad", "text"),
    [
        (Interval(int, 1), [1, 7, np.int64(3)], [0, 1.0, True, None], "an integer >= 1"),
        (Interval(float, 0, closed="neither"), [1e-9, 3, 2.5], [0, -1.0, np.inf], "a number > 0"),
        (Interval(float, 0, 1), [0, 1, 0.5], [-0.1, 1.01, np.nan], "a number in [0, 1]"),
        (Interval(float, 0, 1, closed="left"), [0.0, 0.99], [1.0], "a number in [0, 1)"),
        (Interval(float, 0, 1, closed="right"), [1.0], [0.0], "a number in (0, 1]"),
        (Interval(float, high=2, closed="neither"), [1.9, -5], [2.0], "a number < 2"),
        (Interval(float), [-1e300, 0.0], [np.inf, "1"], "a finite number"),
        (Boolean(), [True, False, np.True_], [0, 1, "yes"], "true or false"),
    ],
)
def test_each_constraint_accepts_what_it_describes(constraint, good, bad, text):
    assert constraint.describe() == text
    assert all(constraint.accepts(v) for v in good)
    assert not any(v is not None and constraint.accepts(v) for v in bad)


@dataclass(frozen=True)
class _Settings:
    rounds: int = 3
    rate: float | None = None
    mode: str = "a"

    def __post_init__(self) -> None:
        check_fields(self, _TABLE, "demo")


_TABLE = {
    "rounds": Interval(int, 1),
    "rate": Interval(float, 0, 1, allow_none=True),
    "mode": OneOf(("a", "b")),
}


def test_check_fields_names_owner_field_rule_and_value():
    _Settings(rate=0.5, mode="b")  # valid
    with pytest.raises(ConfigError, match=r"^demo rounds must be an integer >= 1, got 0$"):
        _Settings(rounds=0)
    with pytest.raises(
        ConfigError, match=r"^demo rate must be a number in \[0, 1\] \(or null\), got 2$"
    ):
        _Settings(rate=2)
    with pytest.raises(ConfigError, match=r"^unknown demo mode 'c'; valid demo modes: a, b$"):
        _Settings(mode="c")
    with pytest.raises(ConfigError, match="demo rounds must be an integer >= 1, got None"):
        _Settings(rounds=None)  # type: ignore[arg-type]


def test_check_fields_raises_the_error_class_asked_for_and_stops_at_the_first():
    class Thing:
        k = -1
        share = 5.0

    with pytest.raises(PartitionError, match="k must be an integer >= 0"):
        check_fields(Thing(), {"k": Interval(int, 0), "share": Interval(float, 0, 1)}, "",
                     PartitionError)  # fmt: skip
