"""The robustness harness: adversaries lie about graphs only, and each aggregator's
federated graph is scored."""

from __future__ import annotations

import numpy as np

from fedstruct.experiments.robustness import AdversarialClient, robustness_runs
from fedstruct.fl import Message
from fedstruct.methods.fedcd.client import FedCDClient
from fedstruct.methods.fedcd.learner import Beliefs


class _Echo:
    """Stands for a client whose reply holds one graph array and one statistic."""

    name = "liar"

    def __init__(self, marks: np.ndarray) -> None:
        self.marks = marks

    def handle(self, message: Message) -> Message:
        return Message("x.graph", arrays={"pag": self.marks, "n": np.array([7.0])})

    @staticmethod
    def graph_arrays(kind: str) -> frozenset[str]:
        return frozenset({"pag"})


def test_an_adversary_changes_its_graph_and_nothing_else():
    chain = np.zeros((4, 4), dtype=np.int8)
    for i in range(3):
        chain[i, i + 1], chain[i + 1, i] = 2, 3  # i -> i+1 (arrow at i+1, tail at i)
    liar = AdversarialClient(_Echo(chain), 0.7, np.random.default_rng(1))
    reply = liar.handle(Message("x.graph"))
    assert not np.array_equal(reply.arrays["pag"], chain)
    assert reply.arrays["n"].tolist() == [7.0]


def test_fedcd_beliefs_are_rewritten_only_where_the_lie_changes_the_graph():
    rng = np.random.default_rng(0)
    gamma, theta = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    theta = theta - theta.T
    np.fill_diagonal(gamma, -1e9)
    liar = AdversarialClient.__new__(AdversarialClient)
    liar.rate, liar.rng = 0.5, np.random.default_rng(2)
    new_gamma, new_theta = liar._beliefs(gamma, theta)
    before = Beliefs(gamma, theta).adjacency()
    after = Beliefs(new_gamma, new_theta).adjacency()
    changed = before != after
    assert changed.any()
    same = ~(changed | changed.T)
    assert np.array_equal(new_gamma[same], gamma[same])
    assert np.allclose(new_theta, -new_theta.T)
    assert FedCDClient.graph_arrays("fedcd.fit") == frozenset()  # beliefs, not marks


def test_the_harness_scores_every_aggregator(monkeypatch):
    import fedstruct.experiments.robustness as harness

    fedcdnv, fedngm = harness.AGGREGATORS["FedCDnv vote"], harness.AGGREGATORS["FedNGM merge"]
    chosen = {
        "FedCDnv vote": (fedcdnv[0], {**fedcdnv[1], "max_samples": 300, "min_samples": 200}),
        "FedNGM merge": (fedngm[0], {**fedngm[1], "samples": 4000, "epochs": 1}),
    }  # fmt: skip
    monkeypatch.setattr(harness, "AGGREGATORS", chosen)
    shds = {k: v[0] for k, v in robustness_runs((0, 2), 0.5, [0], quick=True).items()}
    assert set(shds) == {f"{a}, {k} of 6 lying" for a in chosen for k in (0, 2)}
    assert all(v >= 0 for v in shds.values())
    # the union merge has no defence: two liars add edges the honest merge lacks
    assert shds["FedNGM merge, 2 of 6 lying"] > shds["FedNGM merge, 0 of 6 lying"]
