"""The FedCDnv protocol with perfect (oracle) CI tests: exact graphs."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData, load_network
from fedstruct.discovery import Knowledge, OracleTest, fci
from fedstruct.discovery.background import respect_knowledge
from fedstruct.errors import DataError
from fedstruct.graphs import Graph
from fedstruct.methods.fedcdnv import FedCDnv, FedCDnvClient
from fedstruct.methods.fedcdnv.sources import variable_subset_clients, variable_subsets
from fedstruct.methods.fedcdnv.update import c_update

# U -> X <- Z -> Y <- V: colliders at X and Y, Z hidden from client "a".
TRUTH = Graph.from_edges(
    ["U", "X", "Z", "Y", "V"], [("U", "X"), ("Z", "X"), ("Z", "Y"), ("V", "Y")]
)


class OracleClient(FedCDnvClient):
    """A client whose CI tests are d-separation in TRUTH over its own variables."""

    def learn(self):
        if self._result is None:
            hidden = [v for v in TRUTH.names if v not in self.data.variables]
            self._result = fci(OracleTest(TRUTH, hidden), alpha=self.config.alpha)
        return self._result


class OracleFedCDnv(FedCDnv):
    def make_client(self, data):
        return OracleClient(data, config=self.config_, seed=self.seed)


def oracle_data(name, variables):
    # Rows are never used by the oracle; values >= 5 keep them unlike any p-value row.
    ordered = [v for v in TRUTH.names if v in variables]
    rows = 5 + (np.arange(10)[:, None] + np.arange(len(ordered))[None, :]) % 4
    return ClientData(name, pd.DataFrame(rows, columns=ordered))


def test_c_update_orients_away_from_a_g0_collider():
    # G0 knows A *-> C <-* B; the client sees A, C, D (not B): A o-o C o-o D.
    dag = Graph.from_edges(["A", "B", "C", "D"], [("A", "C"), ("B", "C"), ("C", "D")])
    local = fci(OracleTest(dag, ["B"]))
    assert sorted(map(str, local.graph.edges())) == ["A o-o C", "C o-o D"]
    g0 = Graph.from_edges(["A", "B", "C", "D"], ["A o-> C", "B o-> C", "C o-o D"])
    updated = c_update(local.graph, g0, local.ci_test, alpha=0.05)
    # A ⫫ D | C: C is no collider between A and D, so C -> D (Algorithm 2, line 11).
    assert sorted(map(str, updated.edges())) == ["A o-o C", "C --> D"]


def test_c_update_copies_a_g0_v_structure_the_client_can_see():
    dag = Graph.from_edges(["A", "B", "C"], [("A", "C"), ("B", "C")])
    local = fci(OracleTest(dag))
    g0 = Graph.from_edges(["A", "B", "C"], ["A o-> C", "B o-> C"])
    assert local.graph == g0  # FCI found the collider itself; C-Update keeps it
    blank = local.graph.with_marks(np.where(local.graph.marks > 0, 3, 0))  # all circles
    assert sorted(map(str, c_update(blank, g0, local.ci_test, 0.05).edges())) == [
        "A o-> C",
        "B o-> C",
    ]


def test_oracle_federation_removes_the_edge_a_hidden_confounder_creates():
    a = oracle_data("a", ["U", "X", "Y", "V"])  # Z latent here: X <-> Y
    b = oracle_data("b", ["X", "Z", "Y"])  # X ⫫ Y | Z
    model = OracleFedCDnv().fit([a, b])
    assert str(model.local_graphs_["a"].edge("X", "Y")) == "X <-> Y"
    assert not model.local_graphs_["b"].is_adjacent("X", "Y")
    # X - Y is non-definite (Lemma 3.3: the non-overlapping pair <U, Z> lies in A_X ∪ A_Y)
    assert model.initial_graph_.is_adjacent("X", "Y")
    # ... so client a's adjacency (p = 0, non-stable) weighs 0 and client b's stable
    # non-adjacency (p = 1) decides: val = -n_b / (n_a + n_b).
    assert model.decisions_[("X", "Y")] == pytest.approx(-0.5)
    expected = ["U o-> X", "V o-> Y", "X o-o Z", "Z o-o Y"]
    assert model.graph_ == Graph.from_edges(model.graph_.names, expected)
    assert model.graph_.adjacency().sum() == TRUTH.adjacency().sum()  # the true skeleton
    # FeddG reads G0's status (Algorithm 1, line 17): U and Z share the neighbour X, so
    # Theorem 3.1 cannot decide <U, Z> (-1), Lemma 3.2 makes the edges at U, Z and V
    # non-definite (1), Lemma 3.3 the edge X - Y, which TPSS then removed.
    assert model.status_.loc["U", "Z"] == -1
    assert model.status_.loc["U", "X"] == 1 and model.status_.loc["Z", "Y"] == 1
    assert model.status_.loc["X", "Y"] == 1
    assert model.status_counts() == {-2: 3, -1: 2, 1: 5}
    # the removed X - Y is not definite: only the three pairs no graph ever joined are
    assert model.definite_pairs_ == ([], [("U", "Y"), ("U", "V"), ("X", "V")])
    assert model.definite_graph_.n_edges == 0
    assert [h["round"] for h in model.history_] == [1, 2]


def test_feddg_from_fedg_calls_the_edge_tpss_removed_definite_non_causal():
    a = oracle_data("a", ["U", "X", "Y", "V"])
    b = oracle_data("b", ["X", "Z", "Y"])
    model = OracleFedCDnv(definite_from="fedg").fit([a, b])
    assert model.graph_ == OracleFedCDnv().fit([a, b]).graph_  # FedG is the same
    # the status rebuilt on FedG: X - Y, absent from FedG, is overlapping: -2
    assert model.status_.loc["X", "Y"] == -2
    assert model.status_counts() == {-2: 4, -1: 2, 1: 4}
    assert model.definite_pairs_ == ([], [("U", "Y"), ("U", "V"), ("X", "Y"), ("X", "V")])


def test_fci_base_stops_after_the_first_round_and_vote_keeps_the_spurious_edge():
    a = oracle_data("a", ["U", "X", "Y", "V"])
    b = oracle_data("b", ["X", "Z", "Y"])
    base = OracleFedCDnv(strategy="largest").fit([a, b])
    assert [h["round"] for h in base.history_] == [1]
    vote = OracleFedCDnv(strategy="vote").fit([a, b])
    assert vote.decisions_[("X", "Y")] == pytest.approx(0.0)  # 10 rows each way: a tie
    assert not vote.graph_.is_adjacent("X", "Y")  # val must be > 0


def test_only_graphs_counts_names_and_scaled_pvalues_cross_the_wire():
    net = load_network("asia")
    split = variable_subsets(net.names, 3, seed=1, overlap=0.8)
    clients = variable_subset_clients(net, split, seed=1, n_range=(300, 600))
    model = FedCDnv().fit(clients)
    d = {c.name: len(c.variables) for c in clients}
    up = model.traffic_.per_client()
    for c in clients:
        k = d[c.name]
        # round 1: k*k int8 marks + names + 2 metrics; round 2: k*k marks, k*k float64
        # p-values, the separating sets (JSON) and 2 metrics
        assert up[c.name]["up"] >= 2 * k * k + 8 * k * k
        assert up[c.name]["up"] < 2 * k * k + 8 * k * k + 2000


def test_a_client_sharing_no_variable_is_named():
    a = oracle_data("a", ["U", "X"])
    b = oracle_data("b", ["Z", "Y"])
    c = oracle_data("c", ["X", "U", "V"])
    with pytest.raises(DataError, match=r"client\(s\) \['b'\] share no variable with any other"):
        OracleFedCDnv().fit([a, b, c])


# The server and background knowledge the clients ignore.
# The oracle clients run FCI without knowledge, so their graphs disagree with it:
# Z - Y is a true edge (forbidden as an adjacency here), TPSS removes X - Y (required
# here), and U o-> X has a circle at U (the tiers put X first: an arrowhead at U).
KNOWLEDGE = Knowledge(tiers=[["X"], ["U"]], required=[("X", "Y")], forbidden_adjacent=[("Z", "Y")])


def federation():
    return [oracle_data("a", ["U", "X", "Y", "V"]), oracle_data("b", ["X", "Z", "Y"])]


def test_fedg_and_g0_respect_knowledge_the_clients_graphs_contradict():
    plain = OracleFedCDnv().fit(federation())
    told = OracleFedCDnv(knowledge=KNOWLEDGE).fit(federation())
    assert plain.local_graphs_ == told.local_graphs_  # the clients ignore it
    assert plain.graph_.is_adjacent("Z", "Y") and not plain.graph_.is_adjacent("X", "Y")
    expected = ["U <-> X", "X --> Y", "X o-o Z", "Y <-o V"]
    assert sorted(map(str, told.graph_.edges())) == expected
    assert not told.initial_graph_.is_adjacent("Z", "Y")
    assert str(told.initial_graph_.edge("X", "Y")) == "X --> Y"
    for graph in (told.graph_, told.definite_graph_):
        assert not graph.is_adjacent("Z", "Y")


def test_fci_base_keeps_a_required_edge_and_drops_a_forbidden_adjacency():
    told = OracleFedCDnv(strategy="largest", knowledge=KNOWLEDGE).fit(federation())
    assert str(told.graph_.edge("X", "Y")) == "X --> Y"
    assert not told.graph_.is_adjacent("Z", "Y")


def test_a_required_pair_no_local_graph_holds_is_not_invented():
    names = ["A", "B", "C"]
    rules = Knowledge(required=[("A", "B"), ("B", "C")]).resolve(names)
    graph = Graph.from_edges(names, ["A o-o C"])
    found = Graph.from_edges(names, ["A o-o B", "A o-o C"]).adjacency()
    out = Graph(names, respect_knowledge(graph.marks, rules, found))
    assert sorted(map(str, out.edges())) == ["A --> B", "A o-o C"]  # no B - C
    assert np.array_equal(graph.marks, Graph.from_edges(names, ["A o-o C"]).marks)  # a copy


def test_a_client_holds_no_cached_test_between_its_rounds():
    """Round 1's search cache is dropped once its PAG is learned (round 2 computes its
    tests again, as a resumed run does): ten sites of hundreds of variables held
    gigabytes."""
    net = load_network("asia")
    split = variable_subsets(net.names, 2, seed=1, overlap=0.8)
    clients = variable_subset_clients(net, split, seed=1, n_range=(400, 400))
    client = FedCDnv().fit(clients).make_client(clients[0])
    result = client.learn()
    assert result.n_tests > 0 and len(result.ci_test.cache) == 0
    assert result.ci_test.n_tests == result.n_tests  # the counters keep what was computed
    searched = fci(result.ci_test, alpha=client.config.alpha)  # the same rows behind it
    assert np.array_equal(searched.graph.marks, result.graph.marks)
