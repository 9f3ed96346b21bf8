"""The robustness harness: adversaries lie about graphs only, and each aggregator's
federated graph is scored."""

from __future__ import annotations

import numpy as np

from fedstruct.fl import Message
from fedstruct.graphs.graph import ARROW, TAIL
from fedstruct.methods.fedcd.client import FedCDClient
from fedstruct.methods.fedcd.learner import Beliefs
from fedstruct.reproduction.robustness import AdversarialClient, Collusion, robustness_runs


class _Echo:
    """Stands for a client whose reply holds one graph array, one statistic and, if
    given, the graph's variable names."""

    name = "liar"

    def __init__(self, marks: np.ndarray, names: list[str] | None = None) -> None:
        self.marks, self.names = marks, names

    def handle(self, message: Message) -> Message:
        config = {"names": self.names} if self.names else {}
        return Message("x.graph", arrays={"pag": self.marks, "n": np.array([7.0])}, config=config)

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


def _chain(names: list[str]) -> np.ndarray:
    marks = np.zeros((len(names), len(names)), dtype=np.int8)
    for i in range(len(names) - 1):
        marks[i, i + 1], marks[i + 1, i] = ARROW, TAIL  # names[i] -> names[i + 1]
    return marks


def test_colluders_impose_one_lie_over_names_and_independent_liars_do_not():
    names = [f"v{k}" for k in range(10)]
    chain = _chain(names)
    own = names[6:1:-1]  # a third colluder sees v2..v6, in another order

    def replies(collusion):
        liars = [
            AdversarialClient(_Echo(chain, names), 0.5, np.random.default_rng(1), collusion),
            AdversarialClient(_Echo(chain, names), 0.5, np.random.default_rng(2), collusion),
            AdversarialClient(_Echo(_chain(own), own), 0.5, np.random.default_rng(3), collusion),
        ]
        return [liar.handle(Message("x.graph")).arrays["pag"] for liar in liars]

    collusion = Collusion(0.5, np.random.default_rng(0))
    first, second, third = replies(collusion)
    assert not np.array_equal(first, chain)
    assert np.array_equal(first, second)  # one lie, not two
    assert any(a not in own or b not in own for a, b in collusion.claims)
    for a, b in collusion.claims:  # the subset colluder agrees on its pairs, by name
        if a in own and b in own:
            i, j = own.index(a), own.index(b)
            k, m = names.index(a), names.index(b)
            assert (third[i, j], third[j, i]) == (first[k, m], first[m, k])
    first, second, _ = replies(None)
    assert not np.array_equal(first, second)


def test_fedcd_beliefs_are_rewritten_only_where_the_lie_changes_the_graph():
    rng = np.random.default_rng(0)
    gamma, theta = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    theta = theta - theta.T
    np.fill_diagonal(gamma, -1e9)
    liar = AdversarialClient(_Echo(gamma), 0.5, np.random.default_rng(2))
    new_gamma, new_theta = liar._beliefs(gamma, theta)
    before = Beliefs(gamma, theta).adjacency()
    after = Beliefs(new_gamma, new_theta).adjacency()
    changed = before != after
    assert changed.any()
    same = ~(changed | changed.T)
    assert np.array_equal(new_gamma[same], gamma[same])
    assert np.allclose(new_theta, -new_theta.T)
    # beliefs are lied about as beliefs: only a secure sum's reply adds marks ("graph")
    assert not {"gamma", "theta"} & FedCDClient.graph_arrays("fedcd.fit")


def test_the_harness_scores_every_aggregator(monkeypatch):
    import fedstruct.reproduction.robustness as harness

    fedcdnv, fedngm = harness.AGGREGATORS["FedCDnv vote"], harness.AGGREGATORS["FedNGM merge"]
    chosen = {
        "FedCDnv vote": (fedcdnv[0], {**fedcdnv[1], "max_samples": 300, "min_samples": 200}),
        "FedNGM merge": (fedngm[0], {**fedngm[1], "samples": 4000, "epochs": 1}),
    }  # fmt: skip
    monkeypatch.setattr(harness, "AGGREGATORS", chosen)
    runs = robustness_runs((0, 2), 0.5, [0], quick=True)
    assert all(set(scores) == set(harness.COLUMNS) for scores in runs.values())
    shds = {k: v["federated_shd"][0] for k, v in runs.items()}
    assert set(shds) == {
        row
        for a in chosen
        for row in (f"{a}, 0 of 6 lying", *(f"{a}, 2 of 6 lying ({m})" for m in harness.MODES))
    }
    assert all(v >= 0 for v in shds.values())
    # the union merge has no defence: two liars add edges the honest merge lacks
    assert shds["FedNGM merge, 2 of 6 lying (independent)"] > shds["FedNGM merge, 0 of 6 lying"]


def test_the_recipe_passes_its_rate_to_every_run(monkeypatch, tmp_path):
    import fedstruct.reproduction.robustness as harness
    from fedstruct.runs.recipes import run_recipe

    asked = []

    def runs(adversaries, rate, seeds, quick):
        asked.append((tuple(adversaries), rate, list(seeds), quick))
        return {"x, 0 of 6 lying": {c: [1.0] for c in harness.COLUMNS}}

    monkeypatch.setattr(harness, "robustness_runs", runs)
    run_recipe("aggregator-robustness", quick=True, out=tmp_path / "a", rate=0.5)
    run_recipe("aggregator-robustness", quick=True, out=tmp_path / "b")
    assert asked == [((0, 1, 2), 0.5, [0], True), ((0, 1, 2), harness.RATE, [0], True)]
    assert "50% of edges" in (tmp_path / "a" / "results.md").read_text()
