"""The generators' shared argument checks."""

import numpy as np
import pytest

from fedstruct.data.checks import fraction, integer_at_least
from fedstruct.errors import ConfigError, PartitionError


def test_integer_at_least_accepts_integers_and_names_a_bad_value():
    assert integer_at_least(np.int64(3), "n", 3) == 3
    for bad in (2, True, 3.0, "3"):
        with pytest.raises(ConfigError, match=r"n is .*; give an integer >= 3; hint"):
            integer_at_least(bad, "n", 3, "; hint")


def test_fraction_closed_and_open_intervals():
    assert fraction(0, "f") == 0.0 and fraction(np.float32(1.0), "f") == 1.0
    with pytest.raises(ConfigError, match=r"f is 1.5; give a number in \[0, 1\]"):
        fraction(1.5, "f")
    with pytest.raises(ConfigError):
        fraction(True, "f")
    assert fraction(0.5, "f", open_interval=True) == 0.5
    with pytest.raises(PartitionError, match="strictly between 0 and 1"):
        fraction(0.0, "f", open_interval=True, error=PartitionError)
