"""FED-CD with secure aggregation: voting and proximity give the plain run's beliefs
to the quantisation bound (proximity as a ratio of two sums, each client weighing
its own beliefs by its own targets), the bins' exchange gives the same cut points,
and the server never holds a client's reply in the clear."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from fedstruct.data.scm import CategoricalSCM
from fedstruct.fl import LocalBackend, LocalGrid, Message
from fedstruct.fl.secagg import protocol as p
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcd.sources import vertical_interventions

TINY = {"model_steps": 10, "graph_steps": 2, "graphs_per_step": 5, "batch_size": 32}


@pytest.fixture(scope="module")
def clients():
    scm = CategoricalSCM(chain_dag(4, seed=0), seed=0, n_categories=3)
    return vertical_interventions(scm, 3, n_observational=200, n_per_intervention=20, seed=0)


@pytest.mark.parametrize(
    "options",
    [
        {"aggregation": "vote"},
        {"aggregation": "proximity"},
        {"aggregation": "proximity", "weighting": "normalize", "belief_space": "logit"},
        {"aggregation": "proximity", "distance": "undirected"},  # issue 49: was ignored
    ],
)
def test_secure_aggregation_gives_the_plain_beliefs(clients, options, recording_backend):
    plain = FedCD(rounds=2, seed=1, **TINY, **options).fit(clients)
    backend = recording_backend()
    secure = FedCD(rounds=2, seed=1, secure_aggregation=True, **TINY, **options)
    secure.fit(clients, backend=backend)
    np.testing.assert_allclose(secure.beliefs_.gamma, plain.beliefs_.gamma, atol=1e-4)
    np.testing.assert_allclose(secure.beliefs_.theta, plain.beliefs_.theta, atol=1e-4)
    assert secure.graph_ == plain.graph_
    for a, b in zip(plain.history_, secure.history_, strict=True):
        assert a["edges"] == b["edges"] and a["clients_answered"] == b["clients_answered"] == 3
        assert b["edge_entropy"] == pytest.approx(a["edge_entropy"], abs=1e-12)
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-6)
    assert secure.client_graphs_ == [{}, {}]  # no site's own graph is ever seen
    protocol = {p.KEYS, p.SHARE, p.MASK, p.UNMASK}
    assert {m.kind for _, m in backend.received} == protocol | {"fedcd.names"}


def test_the_bins_exchange_gives_the_same_cuts_securely(clients):
    rng = np.random.default_rng(0)
    levelled = []
    for k, c in enumerate(clients):
        level = 10.0 * c.rows.iloc[:, 0] + rng.normal(k, 2.0, c.n_rows)
        levelled.append(type(c)(c.name, c.rows.assign(level=level), intervention=c.intervention))
    options = {"continuous": ["level"], "bins": 3, "bin_grid": 32, "rounds": 1, **TINY}
    plain = FedCD(**options).fit(levelled)
    secure = FedCD(secure_aggregation=True, **options).fit(levelled)
    # the grid moves with the mean and sd, which the fixed point rounds (~1e-9 here)
    np.testing.assert_allclose(secure.bins_.cuts["level"], plain.bins_.cuts["level"], rtol=1e-8)


class _FreshClients(LocalBackend):
    """A local backend that answers every message with a newly built client holding
    only the previous one's state and secure-aggregation session, as a deployed node
    (a fresh ClientApp process per message) does."""

    def run(self, server_fn, method, clients, participation, seed):
        built = [method.make_client(c) for c in clients]

        class Grid(LocalGrid):
            def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
                for n in messages:
                    old = self.clients[n]
                    new = method.make_client(clients[n])
                    new.set_state(old.get_state())
                    new._secagg = old._secagg
                    self.clients[n] = new
                return super()._exchange(messages)

        return server_fn(Grid(built, participation, seed))


def test_proximity_keeps_the_fits_beliefs_through_the_clients_state(clients):
    options = {"aggregation": "proximity", "rounds": 1, "seed": 1, **TINY}
    fresh = FedCD(secure_aggregation=True, **options).fit(clients, backend=_FreshClients())
    same = FedCD(secure_aggregation=True, **options).fit(clients)
    np.testing.assert_allclose(fresh.beliefs_.gamma, same.beliefs_.gamma, atol=1e-12)


def test_each_client_weighs_by_the_distance_setting():
    """Issue 49: a client's factor of eq. (1) counted ``outgoing`` distances whatever
    ``distance`` said, so a secure run ignored ``distance="undirected"``."""
    from fedstruct.methods.fedcd.aggregate import proximity_factor, proximity_scores

    dag = np.zeros((3, 3), dtype=bool)
    dag[0, 1] = dag[1, 2] = True  # 0 -> 1 -> 2; the client intervened on 1
    for distance in ("outgoing", "undirected"):
        factor = proximity_factor(dag, [1], 16.0, 0.2, 0.1, 0.3, "softmax", distance)
        scores = proximity_scores(dag, [[1]], 16.0, 0.2, 0.1, distance)[0]
        np.testing.assert_allclose(factor, np.exp(0.3 * (scores - 0.1)))
    outgoing = proximity_factor(dag, [1], 16.0, 0.2, 0.1, 0.3, "normalize", "outgoing")
    undirected = proximity_factor(dag, [1], 16.0, 0.2, 0.1, 0.3, "normalize", "undirected")
    assert outgoing[0, 1] == 0.1 and undirected[0, 1] == 16.0  # the edge into the target
