"""FED-CD's federations: observational plus interventional data, split two ways."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import OBSERVATIONAL
from fedstruct.data.networks import load_network
from fedstruct.errors import PartitionError, SampleSizeError, UnknownVariableError
from fedstruct.methods.fedcd.sources import horizontal_interventions, vertical_interventions


def test_vertical_interventions_disjoint_targets_sixteen_four() -> None:
    net = load_network("child")  # 20 variables, as FED-CD's 16-4 split
    clients = vertical_interventions(
        net, 2, n_observational=1000, n_per_intervention=30, seed=0, targets_per_client=(16, 4)
    )
    t1, t2 = (set(c.intervention_targets) for c in clients)
    assert (len(t1), len(t2)) == (16, 4)
    assert not t1 & t2 and t1 | t2 == set(net.names)
    for c in clients:
        regimes = c.regimes()
        assert (regimes == OBSERVATIONAL).sum() == 500
        assert c.n_rows == 500 + 30 * len(c.intervention_targets)
        for t in c.intervention_targets:
            rows = c.interventional(t)
            assert len(rows) == 30
            assert set(rows[t].unique()) <= set(range(net.cardinalities[t]))
    # Observational rows split without overlap: together the global sample.
    pooled = pd.concat([c.observational() for c in clients]).sort_values(list(net.names))
    full = net.sample(1000, seed=[0, 0]).sort_values(list(net.names))
    np.testing.assert_array_equal(pooled.to_numpy(), full.to_numpy())


def test_vertical_interventions_balanced_by_default_and_seeded() -> None:
    net = load_network("sachs")
    a = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=5)
    assert sorted(len(c.intervention_targets) for c in a) == [3, 4, 4]
    b = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=5)
    assert all(x.rows.equals(y.rows) for x, y in zip(a, b, strict=True))
    c = vertical_interventions(net, 3, n_observational=300, n_per_intervention=10, seed=6)
    assert [x.intervention_targets for x in a] != [x.intervention_targets for x in c]


def test_vertical_interventions_uniform_target_and_value_target() -> None:
    net = load_network("asia")
    [client] = vertical_interventions(
        net, 1, n_observational=0, n_per_intervention=4000, seed=1, targets=["lung"]
    )
    assert client.n_rows == 4000 and client.intervention_targets == ("lung",)
    share = client.rows["lung"].mean()
    assert 0.45 < share < 0.55  # uniform, while observationally P(lung = no) = 0.945
    [fixed] = vertical_interventions(
        net, 1, n_observational=10, n_per_intervention=50, seed=1, targets=["lung"], value="yes"
    )
    assert (fixed.interventional("lung")["lung"] == 0).all()


def test_vertical_interventions_errors() -> None:
    net = load_network("asia")
    with pytest.raises(PartitionError, match="summing to the 8 targets"):
        vertical_interventions(
            net, 2, n_observational=10, n_per_intervention=5, seed=0, targets_per_client=(4, 3)
        )
    with pytest.raises(UnknownVariableError, match="'lungs'"):
        vertical_interventions(
            net, 2, n_observational=10, n_per_intervention=5, seed=0, targets=["lungs"]
        )
    with pytest.raises(SampleSizeError, match="n_per_intervention"):
        vertical_interventions(net, 2, n_observational=10, n_per_intervention=0, seed=0)
    with pytest.raises(PartitionError, match="1 observational rows cannot be shared by 2"):
        vertical_interventions(net, 2, n_observational=1, n_per_intervention=5, seed=0)
    with pytest.raises(PartitionError, match="client 'client-2' would get no rows"):
        vertical_interventions(
            net, 2, n_observational=0, n_per_intervention=5, seed=0, targets_per_client=(8, 0)
        )


def test_horizontal_interventions_share_every_target() -> None:
    net = load_network("sachs")
    clients = horizontal_interventions(net, 3, n_observational=301, n_per_intervention=20, seed=2)
    assert [int((c.regimes() == OBSERVATIONAL).sum()) for c in clients] == [101, 100, 100]
    for c in clients:
        assert set(c.intervention_targets) == set(net.names)
    for t in net.names:
        assert sorted(len(c.interventional(t)) for c in clients) == [6, 7, 7]
    # Same global data set as the vertical split with the same seed.
    vertical = vertical_interventions(net, 2, n_observational=301, n_per_intervention=20, seed=2)
    owner = next(c for c in vertical if "Raf" in c.intervention_targets)
    pooled = pd.concat([c.interventional("Raf") for c in clients])
    cols = list(net.names)
    mine = owner.interventional("Raf")
    np.testing.assert_array_equal(
        pooled.sort_values(cols).to_numpy(), mine.sort_values(cols).to_numpy()
    )
    with pytest.raises(PartitionError, match="2 rows per target cannot give each of 3"):
        horizontal_interventions(net, 3, n_observational=30, n_per_intervention=2, seed=0)
