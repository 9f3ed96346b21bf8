"""Issue 49, item 2: a model whose training diverged (``learning_rate=1e30``) stops in
one line naming the learning rate, not a traceback on a NaN metric."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data import ClientData, load_network
from fedstruct.errors import ConfigError, SecureAggregationError
from fedstruct.fl.divergence import non_finite
from fedstruct.fl.secagg.quantize import quantise
from fedstruct.methods.fedavg import FedAvg


def test_non_finite_names_the_first_array_holding_nan_or_inf():
    ok = {"a": np.ones(3), "b": np.zeros((2, 2), dtype=np.float32)}
    assert non_finite(ok) is None
    assert non_finite({**ok, "c": np.array([1.0, np.inf]), "d": np.array([np.nan])}) == "c"


def _clients() -> list[ClientData]:
    rows = load_network("asia").sample(300, seed=0)
    return [ClientData("a", rows.iloc[:150]), ClientData("b", rows.iloc[150:])]


def test_fedavg_stops_in_the_round_its_weights_overflow():
    model = FedAvg("dysp", load_network("asia").cardinalities, rounds=3, learning_rate=1e30)
    with pytest.raises(ConfigError) as err:
        model.fit(_clients())
    assert str(err.value).startswith("fedavg diverged: in round 1 the global model's weight")
    assert "learning_rate = 1e+30 is too large for these data: lower it" in str(err.value)


def test_an_estimator_refuses_learned_weights_that_are_not_finite():
    """The check every method trained with a ``learning_rate`` gets after its last
    round (FCM, FedNGM, CAFE had no per-round one: a NaN model "finished")."""
    model = FedAvg("dysp", load_network("asia").cardinalities, rounds=1).fit(_clients())
    model._check_converged()  # a finite model passes
    name = sorted(model.params_)[0]
    model.params_[name] = np.full_like(model.params_[name], np.nan)
    with pytest.raises(ConfigError, match=f"fedavg diverged: its learned weight '{name}' is no"):
        model._check_converged()


def test_a_secure_sum_refuses_a_nan_as_diverged_not_as_out_of_range():
    with pytest.raises(SecureAggregationError) as err:
        quantise({"w": np.array([1.0, np.nan])}, {}, 24, 3, "'client-1'")
    assert "'w' holds nan, not a number a sum can carry (the client's computation" in str(err.value)
    assert "fractional_bits" not in str(err.value)
