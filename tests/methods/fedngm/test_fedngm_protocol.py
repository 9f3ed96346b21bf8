"""The FedNGM protocol end to end: phases, release threshold, stitching, bad input."""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, PrivacyViolationError, ProtocolError, UnknownVariableError
from fedstruct.methods.fedngm import FedNGM
from fedstruct.methods.fedngm.metrics import prediction_metrics

KINDS = {"a": "real", "b": "real", "c": "binary", "d": "real", "p": "real"}


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = np.tanh(2 * a) + 0.4 * rng.normal(size=n)
    c = (b + 0.4 * rng.normal(size=n) > 0).astype(np.int64)
    d = 0.8 * c + 0.5 * rng.normal(size=n)
    p = d + 0.3 * rng.normal(size=n)  # a client-only variable, predictable from d
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "p": p})


def _clients():
    df = _frame(4500, 0)
    return [
        ClientData("h1", df.iloc[:1500].reset_index(drop=True)),
        ClientData("h2", df.iloc[1500:3000].drop(columns="p").reset_index(drop=True)),
        ClientData("h3", df.iloc[3000:].drop(columns="p").reset_index(drop=True)),
    ]


@pytest.fixture(scope="module")
def fitted():
    return FedNGM(kinds=KINDS, epochs=20, burn_in=10, seed=0).fit(_clients())


def test_phases_common_variables_and_models(fitted):
    assert [h["phase"] for h in fitted.history_] == ["describe", "graph", "train", "release"]
    assert fitted.model_.names == ("a", "b", "c", "d")
    assert sorted(fitted.client_models_) == ["h1", "h2", "h3"]
    assert fitted.history_[2]["global_samples"] == 4500  # sum of n_k by default
    test = _frame(1000, 9)
    for name, own in fitted.client_models_.items():
        g = prediction_metrics(fitted.model_, test, "b")
        o = prediction_metrics(own, test, "b")
        assert g["mae"] < 0.6 * g["mean_mae"]
        assert g["mae"] < 1.10 * o["mae"], name  # 0.96-0.99 here; the 1.05 goal: benchmarks
    assert prediction_metrics(fitted.model_, test, "c")["auc"] > 0.9


def test_stitching_freezes_the_global_weights_and_predicts_the_private_variable(fitted):
    client = _clients()[0]
    stitched = fitted.personalise(client)
    assert stitched.names == ("a", "b", "c", "d", "p")
    old = fitted.model_.view.to_arrays()
    new = stitched.view.to_arrays()
    for key, value in old.items():
        rows, cols = value.shape if value.ndim == 2 else (value.shape[0], None)
        block = new[key][:rows, :cols] if cols is not None else new[key][:rows]
        np.testing.assert_array_equal(block, value)
    test = _frame(1000, 9)
    m = prediction_metrics(stitched, test, "p", train_mean=float(client.rows.p.mean()))
    assert m["mae"] < 0.6 * m["mean_mae"]


def test_nothing_to_stitch_is_an_error(fitted):
    with pytest.raises(ProtocolError, match="no variable outside the global model"):
        fitted.personalise(_clients()[1])


def test_release_threshold_withholds_the_graph():
    with pytest.raises(PrivacyViolationError, match="fewer than the release threshold T=4"):
        FedNGM(kinds=KINDS, epochs=1, release_threshold=4).fit(_clients())


def test_ngr_variant_skips_the_graph_round():
    est = FedNGM(kinds=KINDS, variant="ngr", epochs=3, burn_in=3).fit(_clients())
    assert [h["phase"] for h in est.history_] == ["describe", "train", "release"]
    assert est.graph_.names == ("a", "b", "c", "d")


def test_a_client_sharing_nothing_is_named():
    clients = [*_clients(), ClientData("lonely", pd.DataFrame({"z": [1.0, 2.0, 3.0]}))]
    with pytest.raises(ProtocolError, match="client 'lonely' shares no variable"):
        FedNGM(kinds={**KINDS, "z": "real"}, epochs=1).fit(clients)


def test_bad_kinds_are_named():
    with pytest.raises(ConfigError, match="'a' has kind 'number'"):
        FedNGM(kinds={**KINDS, "a": "number"}).prepare()
    with pytest.raises(UnknownVariableError, match=r"client 'h1' has variables \['p'\]"):
        FedNGM(kinds={k: v for k, v in KINDS.items() if k != "p"}, epochs=1).fit(_clients())


def test_held_out_rows_are_scored_at_each_client_with_the_release():
    from fedstruct.fl import holdout_split
    from fedstruct.methods.fedngm.metrics import global_own_ratio

    clients = _clients()
    est = FedNGM(kinds=KINDS, epochs=5, burn_in=5, seed=0, test_fraction=0.2).fit(clients)
    assert sorted(est.site_scores_) == ["h1", "h2", "h3"]
    for client in clients:
        kept, held = holdout_split(client.n_rows, 0.2, 0, client.name)
        assert est.client_models_[client.name].n_rows == len(kept) == 1200  # trained on 80 %
        test = client.rows.iloc[held]
        expected = global_own_ratio(est.model_, est.client_models_[client.name], test)
        score = est.site_scores_[client.name]
        assert score["held_out"] == len(held) == 300
        assert score["global_own_ratio"] == pytest.approx(expected, rel=1e-9)
    assert FedNGM(kinds=KINDS, epochs=1, seed=0).fit(clients).site_scores_ == {}


def test_a_given_graph_replaces_the_graph_round():
    from fedstruct.graphs.graph import Graph
    from fedstruct.graphs.pag import dag_to_pag

    truth = Graph.from_edges(list("abcdp"), ["a --> b", "b --> c", "c --> d", "d --> p"])
    chain = {("a", "b"), ("b", "c"), ("c", "d")}
    for given in (truth, dag_to_pag(truth)):  # the DAG, or the PAG discovery would give
        est = FedNGM(kinds=KINDS, epochs=2, burn_in=5, seed=0, graph=given).fit(_clients())
        assert [h["phase"] for h in est.history_] == ["describe", "train", "release"]
        assert {tuple(sorted((e.a, e.b))) for e in est.graph_.edges()} == chain
        assert est.model_.adjacency.sum() == 2 * len(chain)
    collider = Graph.from_edges(list("abcd"), ["a --> c", "b --> c"])
    skeleton = FedNGM(kinds=KINDS, graph=collider, graph_rule="skeleton", epochs=1, burn_in=5,
                      seed=0).fit(_clients())  # fmt: skip
    assert not skeleton.graph_.is_adjacent("a", "b")  # the moral graph would marry a and b
    with pytest.raises(ConfigError, match=r"lacks the common variables \['d'\]"):
        FedNGM(kinds=KINDS, graph=truth.restrict("abc"), epochs=1).fit(_clients())
    with pytest.raises(ConfigError, match="NGR variant learns no graph"):
        FedNGM(kinds=KINDS, graph=truth, variant="ngr").prepare()


def test_a_given_graph_against_the_knowledge_is_refused(tmp_path):
    from fedstruct.errors import KnowledgeError
    from fedstruct.graphs.graph import Graph

    path = tmp_path / "k.json"
    path.write_text('{"forbidden_adjacent": [["a", "b"]], "required": [["c", "d"]]}')
    given = Graph.from_edges(list("abcd"), ["a --> b", "b --> c"])
    with pytest.raises(KnowledgeError, match=r"a - b \(forbidden_adjacent\); c -> d missing"):
        FedNGM(kinds=KINDS, graph=given, knowledge=str(path)).prepare().make_server()
    FedNGM(kinds=KINDS, graph=given).prepare().make_server()


def test_the_merged_graph_holds_the_required_pairs(fitted):
    from fedstruct.discovery import Knowledge

    plain = fitted.graph_
    assert not plain.is_adjacent("a", "d")  # a chain: a - b - c - d
    knowledge = Knowledge(required=[("a", "d")], tiers=[["a"], ["d"]])
    model = FedNGM(kinds=KINDS, epochs=1, burn_in=1, seed=0, knowledge=knowledge).fit(_clients())
    assert model.graph_.is_adjacent("a", "d")
    assert model.graph_.n_edges == plain.n_edges + 1
