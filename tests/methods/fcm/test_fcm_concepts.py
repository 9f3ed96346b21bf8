"""F-CMs' concept data sets (App. B.1) and client partition (App. D.1)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from fedstruct.data.networks import load_network
from fedstruct.errors import ConfigError, UnknownNetworkError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm.concepts import (
    ConceptDataset,
    autoencoder_inputs,
    make_concept_dataset,
    split_counts,
)
from fedstruct.methods.fcm.sources import concept_clients, perturb_dag

N = 3000


@pytest.fixture(scope="module")
def asia() -> ConceptDataset:
    return make_concept_dataset("asia", n_samples=N, autoencoder_epochs=5)


def pair_diff(a: Graph, b: Graph) -> int:
    """Node pairs whose state (none, i->j, j->i) differs between two DAGs on the same nodes."""
    assert a.names == b.names
    da, db = a.directed(), b.directed()
    return int(np.triu((da != db) | (da.T != db.T), 1).sum())


def half_up(x: float) -> int:
    return int(np.floor(x + 0.5))


# ------------------------------------------------------------------ data set
def test_dataset_shapes_labels_and_split(asia: ConceptDataset) -> None:
    net = load_network("asia")
    assert asia.network == "asia" and asia.task == "dysp"
    assert asia.x.shape == (N, 32) and asia.x.dtype == np.float32
    assert asia.features == tuple(f"x{j}" for j in range(32))
    assert asia.concepts == tuple(v for v in net.names if v != "dysp")
    assert len(asia.concepts) == 7
    assert asia.graph == net.graph
    assert asia.cardinalities == {v: 2 for v in net.names}
    # the labels are exactly the network's forward sample with the seed
    assert list(asia.labels.columns) == list(net.graph.names)
    assert (asia.labels.dtypes == np.int64).all()
    pd.testing.assert_frame_equal(asia.labels, net.sample(N, seed=0))
    assert np.bincount(asia.split).tolist() == [2100, 300, 600]


def test_split_counts_rounding() -> None:
    assert split_counts(3000) == (2100, 300, 600)
    assert split_counts(10) == (7, 1, 2)
    # 11 -> 7.7 / 1.1 / 2.2: floors 7/1/2, the leftover row to the largest remainder
    assert split_counts(11) == (8, 1, 2)
    # 15 -> 10.5 / 1.5 / 3: two remainders of .5 tie, the earlier part wins
    assert split_counts(15) == (11, 1, 3)
    for n in range(10, 200):
        assert sum(split_counts(n)) == n and min(split_counts(n)) >= 1


def test_inputs_standardised_with_train_statistics(asia: ConceptDataset) -> None:
    train = asia.x[asia.split == 0].astype(np.float64)
    np.testing.assert_allclose(train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(train.std(axis=0), 1.0, atol=1e-4)
    # the other parts were not standardised with their own statistics
    test = asia.x[asia.split == 2].astype(np.float64)
    assert np.abs(test.mean(axis=0)).max() > 1e-3


def test_autoencoder_inputs_one_hot_without_task() -> None:
    labels = pd.DataFrame({"a": [0, 2, 1], "t": [1, 0, 1], "b": [1, 1, 0]})
    got = autoencoder_inputs(labels, {"a": 3, "t": 2, "b": 2}, task="t")
    want = np.array(
        [[1, 0, 0, 0, 1], [0, 0, 1, 0, 1], [0, 1, 0, 1, 0]],
        dtype=np.float32,
    )
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_autoencoder_inputs_codes_and_task() -> None:
    """The reference code's "flattened" values: one column per concept, its state code;
    the task only when asked for, last."""
    labels = pd.DataFrame({"a": [0, 2, 1], "t": [1, 0, 1], "b": [1, 1, 0]})
    cards = {"a": 3, "t": 2, "b": 2}
    codes = autoencoder_inputs(labels, cards, task="t", encoding="codes")
    np.testing.assert_array_equal(codes, np.array([[0, 1], [2, 1], [1, 0]], dtype=np.float32))
    assert codes.dtype == np.float32
    with_task = autoencoder_inputs(labels, cards, task="t", encoding="codes", with_task=True)
    np.testing.assert_array_equal(with_task[:, 2], [1, 0, 1])
    onehot = autoencoder_inputs(labels, cards, task="t", with_task=True)
    np.testing.assert_array_equal(onehot[:, 5:], [[0, 1], [1, 0], [0, 1]])


def test_task_in_the_autoencoder_leaks_into_the_inputs() -> None:
    """``autoencoder_task`` (the reference code's variant) puts the task in ``x``: a
    linear model then predicts dysp beyond what the concepts allow (0.86 on asia)."""
    kw = {"n_samples": N, "noise": 0.0, "autoencoder_epochs": 150}
    tr, te = slice(0, 2000), slice(2000, N)
    for leak, low, high in ((False, 0.0, 0.9), (True, 0.95, 1.0)):
        ds = make_concept_dataset("asia", autoencoder_task=leak, **kw)
        y = ds.labels["dysp"].to_numpy()
        acc = LogisticRegression(max_iter=1000).fit(ds.x[tr], y[tr]).score(ds.x[te], y[te])
        assert low <= acc <= high, (leak, acc)


def test_autoencoder_layouts_and_rows_change_the_inputs() -> None:
    """Every option of step 3 changes the inputs (so each is a real choice), the
    labels and split stay those of the seed."""
    base = make_concept_dataset("asia", n_samples=300, autoencoder_epochs=2)
    for kw in (  # each the other value than the default's
        {"autoencoder_input": "codes"},
        {"autoencoder_layout": "reference"},
        {"autoencoder_rows": "all"},
        {"autoencoder_hidden": 8},
    ):
        other = make_concept_dataset("asia", n_samples=300, autoencoder_epochs=2, **kw)
        assert not np.allclose(other.x, base.x), kw
        assert other.labels.equals(base.labels)
        np.testing.assert_array_equal(other.split, base.split)


def test_autoencoder_inputs_of_asia_leave_out_dysp(asia: ConceptDataset) -> None:
    enc = autoencoder_inputs(asia.labels, asia.cardinalities, asia.task)
    assert enc.shape == (N, 14)  # 7 binary concepts, not 8 variables
    dysp = asia.labels["dysp"].to_numpy()
    # no input column equals the task's one-hot column (or its complement)
    for j in range(enc.shape[1]):
        assert not np.array_equal(enc[:, j], dysp) and not np.array_equal(enc[:, j], 1 - dysp)


def test_task_does_not_leak_into_noise_free_inputs() -> None:
    """Without noise x determines the concepts, but the task only as well as concepts do."""
    ds = make_concept_dataset("asia", n_samples=N, noise=0.0, autoencoder_epochs=30)
    tr, te = ds.split == 0, ds.split == 2
    lab = ds.labels
    for v in ds.concepts:
        y = lab[v].to_numpy()
        if len(np.unique(y[tr])) < 2:
            continue
        acc = LogisticRegression(max_iter=1000).fit(ds.x[tr], y[tr]).score(ds.x[te], y[te])
        assert acc >= 0.97, v
    # Oracle: the best prediction of dysp from the full concept vector (train frequencies).
    keys = lab[list(ds.concepts)].astype(str).agg("".join, axis=1).to_numpy()
    y = lab["dysp"].to_numpy()
    table = pd.Series(y[tr]).groupby(keys[tr]).mean()
    pred = (pd.Series(keys[te]).map(table).fillna(y[tr].mean()).to_numpy() > 0.5).astype(int)
    oracle = float((pred == y[te]).mean())
    acc = LogisticRegression(max_iter=1000).fit(ds.x[tr], y[tr]).score(ds.x[te], y[te])
    assert oracle < 0.9  # dysp is genuinely uncertain given the concepts
    assert acc <= oracle + 0.05  # 0.863 vs 0.862; a leaked task would give ~1.0


def test_noise_lowers_concept_recoverability() -> None:
    """At noise 1 the inputs are pure noise: a concept is predicted at its majority rate."""
    ds = make_concept_dataset("asia", n_samples=N, noise=1.0, autoencoder_epochs=1)
    tr, te = ds.split == 0, ds.split == 2
    y = ds.labels["smoke"].to_numpy()
    acc = LogisticRegression(max_iter=1000).fit(ds.x[tr], y[tr]).score(ds.x[te], y[te])
    majority = max(np.mean(y[te]), 1 - np.mean(y[te]))
    assert acc < majority + 0.04


def test_dataset_determinism_and_global_state(asia: ConceptDataset) -> None:
    torch_state = torch.random.get_rng_state().clone()
    np_state = np.random.get_state()[1].copy()  # noqa: NPY002 (checked untouched)
    threads = torch.get_num_threads()
    again = make_concept_dataset("asia", n_samples=N, autoencoder_epochs=5)
    other = make_concept_dataset("asia", n_samples=N, autoencoder_epochs=5, seed=1)
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)  # noqa: NPY002
    assert torch.get_num_threads() == threads
    np.testing.assert_array_equal(again.x, asia.x)
    np.testing.assert_array_equal(again.split, asia.split)
    assert not np.allclose(other.x, asia.x)
    assert not np.array_equal(other.split, asia.split)
    assert not other.labels.equals(asia.labels)


def test_frame_parts(asia: ConceptDataset) -> None:
    test = asia.frame("test")
    idx = np.flatnonzero(asia.split == 2)
    assert list(test.columns) == [*asia.features, *asia.graph.names]
    assert test.index.tolist() == idx.tolist()
    np.testing.assert_array_equal(test[list(asia.features)].to_numpy(), asia.x[idx])
    np.testing.assert_array_equal(test["dysp"].to_numpy(), asia.labels["dysp"].to_numpy()[idx])
    assert test["x0"].dtype == np.float32 and test["dysp"].dtype == np.int64
    both = asia.frame(["train", "validation"])
    assert both.index.tolist() == np.flatnonzero(asia.split < 2).tolist()
    assert len(asia.frame()) == N
    with pytest.raises(ConfigError, match="bogus"):
        asia.frame("bogus")


def test_dataset_errors() -> None:
    with pytest.raises(UnknownNetworkError, match="asia"):
        make_concept_dataset("nosuch")
    with pytest.raises(UnknownVariableError, match="nosuch"):
        make_concept_dataset("asia", "nosuch")
    with pytest.raises(ConfigError, match="noise"):
        make_concept_dataset("asia", noise=1.5)
    with pytest.raises(ConfigError, match="n_samples"):
        make_concept_dataset("asia", n_samples=9)
    with pytest.raises(ConfigError, match="default task"):
        make_concept_dataset("cancer")
    for field in ("autoencoder_input", "autoencoder_layout", "autoencoder_rows"):
        with pytest.raises(ConfigError, match=field):
            make_concept_dataset("asia", n_samples=100, **{field: "bogus"})
    with pytest.raises(ConfigError, match="autoencoder_patience"):
        make_concept_dataset("asia", n_samples=100, autoencoder_patience=0)


# ----------------------------------------------------------------- partition
def walking_parents(part, graph: Graph, cohort: int, v: str) -> set[str]:
    new = set(part.new_concepts)
    ps = set(graph.parents(v))
    return ps - new if cohort == 0 else ps


def test_partition_structure(asia: ConceptDataset) -> None:
    part = concept_clients(asia)
    g = asia.graph
    names = [c.name for c in part.clients]
    assert names == [f"client-{k}" for k in range(1, 21)]
    assert [part.cohort[n] for n in names] == [0] * 10 + [1] * 10
    assert [c.name for c in part.initial] == names[:10]
    assert [c.name for c in part.late] == names[10:]
    # new concepts: round(0.3 * 7) = 2, never the task, some task parent stays old
    assert len(part.new_concepts) == 2 and "dysp" not in part.new_concepts
    assert not set(g.parents("dysp")) <= set(part.new_concepts)
    for c in part.clients:
        sup = set(c.supervised)
        assert c.supervised == tuple(v for v in g.names if v in sup)  # graph order
        assert c.graph.names == c.supervised
        cohort = part.cohort[c.name]
        for v in sup:  # ancestral closure of the walks
            wp = walking_parents(part, g, cohort, v)
            assert not wp or wp & sup, (c.name, v)
    for c in part.initial:
        assert not set(c.supervised) & set(part.new_concepts)
    late = set().union(*(c.supervised for c in part.late))
    assert set(part.new_concepts) <= late
    assert set().union(*(c.supervised for c in part.clients)) == set(g.names)
    # task missing: round(0.2 * 10) = 2 clients per cohort
    assert sum("dysp" not in c.supervised for c in part.initial) == 2
    assert sum("dysp" not in c.supervised for c in part.late) == 2
    # unperturbed: the graphs are exactly the induced true sub-graphs
    for c in part.clients:
        assert c.graph == g.restrict(c.supervised)
        assert part.true_graphs[c.name] == c.graph


def test_partition_rows(asia: ConceptDataset) -> None:
    part = concept_clients(asia, n_clients=7, n_initial=3, seed=4)
    pool = np.flatnonzero(asia.split < 2)
    indices = [c.rows.index.to_numpy() for c in part.clients]
    allidx = np.concatenate(indices)
    assert len(allidx) == len(set(allidx.tolist())) == 2400
    assert sorted(allidx.tolist()) == pool.tolist()
    assert [len(i) for i in indices] == [343] * 6 + [342]
    codes = asia.labels.to_numpy()
    for c, idx in zip(part.clients, indices, strict=True):
        assert list(c.rows.columns) == [*asia.features, *c.supervised]
        np.testing.assert_array_equal(c.rows[list(asia.features)].to_numpy(), asia.x[idx])
        assert c.rows["x0"].dtype == np.float32
        for j, v in enumerate(asia.graph.names):
            if v in c.supervised:
                col = c.rows[v].to_numpy()
                assert col.dtype == np.int64
                np.testing.assert_array_equal(col, codes[idx, j])
    pd.testing.assert_frame_equal(part.test, asia.frame("test"))
    assert len(part.test) == 600 and (part.test[list(asia.graph.names)] >= 0).all().all()


def test_partition_determinism(asia: ConceptDataset) -> None:
    a, b = concept_clients(asia, seed=3), concept_clients(asia, seed=3)
    c = concept_clients(asia, seed=5)
    sig = lambda p: [(x.supervised, x.rows.index.tolist()) for x in p.clients]  # noqa: E731
    assert sig(a) == sig(b) and a.new_concepts == b.new_concepts
    assert sig(a) != sig(c)


def test_task_missing_rounding(asia: ConceptDataset) -> None:
    # 0.25 * 10 = 2.5 -> 3 per cohort (half up)
    part = concept_clients(asia, task_missing=0.25)
    assert sum("dysp" in c.supervised for c in part.clients) == 14
    # everyone would miss it: one client per cohort keeps it
    part = concept_clients(asia, task_missing=1.0, n_clients=6, n_initial=4)
    assert ["dysp" in c.supervised for c in part.initial].count(True) == 1
    assert ["dysp" in c.supervised for c in part.late].count(True) == 1


def test_single_paths_and_coverage(asia: ConceptDataset) -> None:
    """One ancestor path per client: each client holds a root-to-dysp path of asia."""
    part = concept_clients(
        asia, paths_per_client=1, extra_concepts=0, task_missing=0.0, new_concept_fraction=0.0
    )
    g = asia.graph
    dag = nx.DiGraph([tuple(e[:2]) for e in g.edges()])
    roots = [v for v in g.names if not g.parents(v)]
    paths = [set(p) for r in roots for p in nx.all_simple_paths(dag, r, "dysp")]
    assert len(paths) == 3
    # xray is on no path to dysp: coverage adds it (with one path) to exactly one client
    holders = [c for c in part.clients if "xray" in c.supervised]
    assert len(holders) == 1
    for c in part.clients:
        if c is not holders[0]:
            assert set(c.supervised) in paths, c.supervised


def test_no_late_cohort_means_no_new_concepts(asia: ConceptDataset) -> None:
    part = concept_clients(asia, n_clients=5, n_initial=5)
    assert part.new_concepts == () and part.late == []
    assert set().union(*(c.supervised for c in part.clients)) == set(asia.graph.names)


def test_many_new_concepts_keep_a_task_parent(asia: ConceptDataset) -> None:
    for seed in range(5):
        part = concept_clients(asia, new_concept_fraction=0.86, seed=seed)  # 6 of 7
        assert len(part.new_concepts) == 6
        old = set(asia.concepts) - set(part.new_concepts)
        assert old & set(asia.graph.parents("dysp"))
        for c in part.initial:
            assert set(c.supervised) <= old | {"dysp"}


def test_perturbed_clients(asia: ConceptDataset) -> None:
    part = concept_clients(asia, perturbed_clients=0.5, perturbed_edges=0.5, seed=2)
    g = asia.graph
    changed = 0
    for c in part.clients:
        truth = part.true_graphs[c.name]
        assert truth == g.restrict(c.supervised)
        assert c.graph.names == truth.names and c.graph.is_dag()
        assert truth.n_edges > 0  # so every perturbed client really changes
        d = pair_diff(c.graph, truth)
        assert d in (0, max(half_up(0.5 * truth.n_edges), 1)), (c.name, d, truth.n_edges)
        changed += d > 0
    assert changed == 10


def test_perturb_dag_exact_modifications() -> None:
    g = load_network("alarm").graph
    kinds = {"flip": 0, "remove": 0, "add": 0}
    for seed in range(10):
        for n_mod in (0, 1, 7, g.n_edges):
            out = perturb_dag(g, n_mod, np.random.default_rng(seed))
            assert out.is_dag() and out.names == g.names
            assert pair_diff(out, g) == n_mod
            a, b = g.directed(), out.directed()
            kinds["flip"] += int((a & b.T).sum())
            kinds["remove"] += int((a & ~b & ~b.T).sum())
            kinds["add"] += int((b & ~a & ~a.T).sum())
    assert all(v > 50 for v in kinds.values()), kinds
    with pytest.raises(ConfigError, match="modifications"):
        perturb_dag(g, g.n_edges + 1, np.random.default_rng(0))


def test_perturb_dag_avoids_cycles_in_a_tournament() -> None:
    """In a complete DAG nothing can be added and only some flips are acyclic."""
    names = list("abcd")
    g = Graph.from_edges(names, list(itertools.combinations(names, 2)))
    for seed in range(20):
        out = perturb_dag(g, 3, np.random.default_rng(seed))
        assert out.is_dag() and pair_diff(out, g) == 3


def test_partition_errors(asia: ConceptDataset) -> None:
    bad = [
        ({"n_clients": 0}, "n_clients"),
        ({"n_initial": 0}, "n_initial"),
        ({"n_initial": 21}, "n_initial"),
        ({"task_missing": 1.5}, "task_missing"),
        ({"new_concept_fraction": -0.1}, "new_concept_fraction"),
        ({"perturbed_clients": 2}, "perturbed_clients"),
        ({"perturbed_edges": -1}, "perturbed_edges"),
        ({"paths_per_client": 0}, "paths_per_client"),
        ({"client_parts": ("train", "test")}, "test"),
        ({"new_concept_fraction": 1.0}, "new_concept_fraction"),
        ({"n_clients": 3000, "n_initial": 1}, "3000 clients"),
    ]
    for kwargs, words in bad:
        with pytest.raises(ConfigError, match=words):
            concept_clients(asia, **kwargs)
    either = make_concept_dataset("asia", "either", n_samples=100, autoencoder_epochs=1)
    with pytest.raises(ConfigError, match=r"'either' has children \['xray', 'dysp'\]"):
        concept_clients(either)
