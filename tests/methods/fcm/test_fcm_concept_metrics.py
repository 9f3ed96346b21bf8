"""Concept metrics (CAS, OIS, NIS, CaCE, intervention AUC) and intervention policies
on hand-built cases with known values (issue 54, items 1 and 2)."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm import FCMRun
from fedstruct.methods.fcm import concept_metrics as cm
from fedstruct.methods.fcm.interventions import effect_sums, intervention_counts, level_order
from fedstruct.methods.fcm.model import ConceptModel, ModelSpec, module_key

runner = CliRunner()


def _labels(n=200, m=2, seed=0):
    return np.random.default_rng(seed).integers(0, 2, size=(n, m))


def test_a_perfectly_aligned_representation_has_cas_1_and_noise_far_less():
    """Aligned: each concept's representation is its one-hot label plus a jitter that
    keeps the rows distinct. (Exact duplicates stall k-medoids' heuristic start, whose
    2 most central medoids are then the same point: the reference's KMedoids gives
    the same 0.375 here, docs/benchmarks.md.)"""
    labels = _labels()
    jitter = np.random.default_rng(1).normal(scale=0.01, size=(200, 2, 2))
    aligned = [np.eye(2)[labels[:, j]] + jitter[:, j] for j in range(2)]
    assert cm.concept_alignment_score(aligned, labels) == pytest.approx(1.0)
    duplicated = [np.eye(2)[labels[:, j]] for j in range(2)]
    assert cm.concept_alignment_score(duplicated, labels) == pytest.approx(0.375)
    noise = [np.random.default_rng(j).normal(size=(200, 2)) for j in range(2)]
    assert cm.concept_alignment_score(noise, labels) < 0.6


def test_k_medoids_separates_two_far_groups():
    points = np.r_[np.zeros((5, 1)), np.full((4, 1), 10.0)] + np.arange(9)[:, None] * 0.01
    labels = cm.k_medoids(points, 2)
    assert len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1 and labels[0] != labels[5]


def _k_medoids_one_cluster_at_a_time(points, k):
    """The "alternate" k-medoids as the reference writes it: a loop over the clusters,
    each medoid moved to the member of least total distance *to* it, compared with the
    medoid's own position in the cluster's member list (the first member when an equal,
    earlier medoid took the medoid into its cluster)."""
    from sklearn.metrics import pairwise_distances

    distances = pairwise_distances(np.asarray(points, dtype=np.float64))
    medoids = np.argpartition(distances.sum(axis=1), k - 1)[:k]
    for _ in range(300):
        before = medoids.copy()
        labels = np.argmin(distances[medoids, :], axis=0)
        for c in range(k):
            members = np.flatnonzero(labels == c)
            if not len(members):
                continue
            costs = distances[np.ix_(members, members)].sum(axis=0)
            best = int(np.argmin(costs))
            if costs[best] < costs[int(np.argmax(members == medoids[c]))]:
                medoids[c] = members[best]
        if np.array_equal(before, medoids):
            break
    return np.argmin(distances[medoids, :], axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_k_medoids_equals_the_cluster_by_cluster_algorithm_with_ties_and_duplicates(seed):
    """The vectorised update gives the labels of the loop over clusters, also on the
    exact duplicates and ties of saturated concept probabilities (a CBM's)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 200))
    if seed % 2:
        points = rng.integers(0, 2, size=(n, 2)).astype(float)
    else:
        points = np.round(rng.dirichlet(np.ones(3), size=n), 1)
    for k in np.linspace(2, n, 5).astype(int):
        expected = _k_medoids_one_cluster_at_a_time(points, int(k))
        assert np.array_equal(cm.k_medoids(points, int(k)), expected)


def test_ois_from_hand_built_matrices():
    """Concept 1's representation predicts concept 0 perfectly, the oracle at chance:
    ||π - π*||_F / (m / 2) = 0.5 / 1."""
    purity = np.array([[1.0, 0.5], [1.0, 1.0]])
    oracle = np.array([[1.0, 0.5], [0.5, 1.0]])
    assert cm.oracle_impurity_score(purity, oracle) == pytest.approx(0.5)
    # a concept without an AUC as a target (one state in the test rows) is left out
    purity3 = np.pad(purity, ((0, 1), (0, 1)), constant_values=0.7)
    oracle3 = np.pad(oracle, ((0, 1), (0, 1)), constant_values=0.6)
    purity3[:, 2] = oracle3[:, 2] = np.nan
    assert cm.oracle_impurity_score(purity3, oracle3) == pytest.approx(0.5)


def test_ois_is_0_for_pure_representations_and_counts_a_leak():
    labels = _labels(400)
    pure = [np.eye(2)[labels[:, j]] for j in range(2)]
    purity, oracle = cm.purity_matrices(pure, labels, [2, 2], seed=0)
    assert cm.oracle_impurity_score(purity, oracle) == 0.0
    # concept 1's representation also carries concept 0's label
    leaky = [pure[0], np.c_[labels[:, 1], labels[:, 0]].astype(float)]
    purity, oracle = cm.purity_matrices(leaky, labels, [2, 2], seed=0)
    assert purity[1, 0] == 1.0 and oracle[1, 0] < 0.6  # independent labels
    by_hand = abs(1.0 - oracle[1, 0]) / (2 / 2)
    assert cm.oracle_impurity_score(purity, oracle) == pytest.approx(by_hand)


def test_nis_is_higher_when_concepts_leak_into_each_other():
    labels = _labels(400, 3)
    pure = [labels[:, j : j + 1].astype(float) for j in range(3)]
    # concept j's representation carries 0.3 of concept j+1's label: its correlation
    # with it (0.29) leaves it outside j+1's niche from β = 0.3 on
    leaky = [(labels[:, j] + 0.3 * labels[:, (j + 1) % 3])[:, None] for j in range(3)]
    clean = cm.niche_impurity_score(pure, labels, [2, 2, 2], seed=0)
    dirty = cm.niche_impurity_score(leaky, labels, [2, 2, 2], seed=0)
    assert clean < 0.95 * 0.5  # at most chance AUC without the niche, β in [0, 0.95]
    assert dirty > clean + 0.05


def test_causal_effect_is_the_largest_total_variation_between_states():
    assert cm.causal_effect({0: np.array([0.8, 0.2]), 1: np.array([0.3, 0.7])}) == 0.5
    three = {0: np.array([0.5, 0.5]), 1: np.array([0.4, 0.6]), 2: np.array([0.9, 0.1])}
    assert cm.causal_effect(three) == pytest.approx(0.5)
    assert cm.intervention_auc([0.5, 0.7, 0.9]) == pytest.approx(0.7)


# ------------------------------------------------------------------ policies
def _model(concept_probs, cardinalities=None, task_reads="c2"):
    """A CBM whose concepts have fixed probabilities (heads: zero weights, the given
    logits as bias) and whose task reads only ``task_reads`` (state 1 raises y = 1)."""
    names = [f"c{i}" for i in range(len(concept_probs))]
    cards = cardinalities or {n: len(p) for n, p in zip(names, concept_probs, strict=True)}
    spec = ModelSpec("cbm", "y", tuple(names), {**cards, "y": 2}, {"y": tuple(names)}, 3)
    model = ConceptModel(spec, seed=0)
    with torch.no_grad():
        for n, p in zip(names, concept_probs, strict=True):
            head = model.nodes[module_key(n)]
            head.out.weight.zero_()
            head.out.bias.copy_(torch.log(torch.tensor(p)))
        task = model.nodes[module_key("y")]
        for p in task.parameters():
            p.zero_()
        task.mix.inputs[module_key(task_reads)].weight[0] = torch.tensor([-1.0, 1.0])
        task.out.weight[:, 0] = torch.tensor([-10.0, 10.0])
    return model


def _rows(n, labels):
    x = torch.randn(n, 3)
    return x, torch.as_tensor(labels, dtype=torch.long)


def test_uncertainty_picks_the_concept_nearest_one_half_first():
    model = _model([[0.1, 0.9], [0.45, 0.55], [0.8, 0.2]])
    x, truth = _rows(4, [[1, 1, 0, 0]] * 4)
    curve = intervention_counts(model, x, truth, ["c0", "c1", "c2"], "uncertainty")
    assert curve.orders.tolist() == [[1, 2, 0]] * 4  # 0.55, then 0.2, then 0.9


def test_group_uncertainty_scores_a_concept_by_its_state_nearest_one_half():
    # c0 (3 states, 0.5 / 0.3 / 0.2) has the state nearest 0.5; by entropy over log k,
    # the binary c1 (0.6 / 0.4) is the more uncertain
    model = _model([[0.5, 0.3, 0.2], [0.6, 0.4], [0.9, 0.1]])
    x, truth = _rows(2, [[0, 0, 0, 0]] * 2)
    concepts = ["c0", "c1", "c2"]
    group = intervention_counts(model, x, truth, concepts, "group_uncertainty")
    entropy = intervention_counts(model, x, truth, concepts, "uncertainty")
    assert group.orders[0, 0] == 0 and entropy.orders[0, 0] == 1


def test_the_greedy_oracle_intervenes_first_where_task_accuracy_gains_most():
    """The task reads only c2, predicted wrong (0.2 for state 1 where the label is 1):
    intervening on c2 makes the task right; the others change nothing."""
    model = _model([[0.5, 0.5], [0.5, 0.5], [0.8, 0.2]])
    x, truth = _rows(5, [[0, 1, 1, 1]] * 5)
    curve = intervention_counts(model, x, truth, ["c0", "c1", "c2"], "optimal_greedy")
    assert curve.orders[:, 0].tolist() == [2] * 5
    assert curve.accuracies == [0.0, 1.0, 1.0, 1.0]
    level = intervention_counts(model, x, truth, ["c0", "c1", "c2"], "graph_level",
                                order=["c0", "c1", "c2"])  # fmt: skip
    assert level.accuracies == [0.0, 0.0, 0.0, 1.0]
    assert cm.intervention_auc(curve.accuracies) > cm.intervention_auc(level.accuracies)


def test_random_orders_are_seeded():
    model = _model([[0.5, 0.5]] * 4, task_reads="c0")
    x, truth = _rows(50, [[0, 0, 0, 0, 0]] * 50)
    concepts = ["c0", "c1", "c2", "c3"]
    a = intervention_counts(model, x, truth, concepts, "random", seed=3).orders
    b = intervention_counts(model, x, truth, concepts, "random", seed=3).orders
    c = intervention_counts(model, x, truth, concepts, "random", seed=4).orders
    assert (a == b).all() and (a != c).any()
    assert all(sorted(row) == [0, 1, 2, 3] for row in a.tolist())


def test_a_row_intervenes_only_where_it_has_the_label():
    model = _model([[0.5, 0.5], [0.5, 0.5], [0.8, 0.2]])
    x, truth = _rows(2, [[0, -1, 1, 1], [0, 1, -1, 1]])
    curve = intervention_counts(model, x, truth, ["c0", "c1", "c2"], "optimal_greedy")
    assert curve.orders[0].tolist()[-1] == -1 and 1 not in curve.orders[0].tolist()
    assert 2 not in curve.orders[1].tolist()


def test_graph_level_order_and_cace_of_the_concept_the_task_reads():
    graph = Graph.from_dag_matrix(("c0", "c1", "c2", "y"), np.array(
        [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]]))  # fmt: skip
    assert level_order(graph, "y", ["c2", "c1", "c0"]) == ["c0", "c1", "c2"]
    model = _model([[0.5, 0.5], [0.5, 0.5], [0.8, 0.2]])
    sums = effect_sums(model, torch.randn(4, 3), ["c0", "c2"])
    assert np.allclose(sums["c0"][0], sums["c0"][1])  # the task does not read c0
    effect = cm.causal_effect(dict(enumerate(sums["c2"] / 4)))
    assert effect == pytest.approx(
        torch.sigmoid(torch.tensor(20.0)).item() - torch.sigmoid(torch.tensor(-0.2)).item()
    )


# ------------------------------------------------------------------ settings and runs
def test_a_bad_policy_name_is_one_line_listing_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError, match="optimal_greedy"):
        FCMRun(intervention_policy="smart")
    result = runner.invoke(app, ["run", "fcm", "--out", str(tmp_path / "r"),
                                 "--set", "intervention_policy=smart"])  # fmt: skip
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    assert all(p in result.output for p in ("graph_level", "random", "group_uncertainty"))


SMALL = ["--network", "asia", "--clients", "4", "--rounds", "4", "--seed", "0", "--quiet",
         "--set", "samples=1200", "--set", "autoencoder_epochs=3", "--set", "initial_clients=2",
         "--set", "arrival_round=2", "--set", "clients_per_round=3", "--set", "batch_size=128",
         "--set", "metric_rows=200", "--set", "concept_metrics_every=2"]  # fmt: skip


def _run(tmp_path, name, *extra):
    out = tmp_path / name
    result = runner.invoke(app, ["run", "fcm", *SMALL, "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    read = lambda f: json.loads((out / f).read_text())  # noqa: E731
    return read("metrics.json"), read("history.json")


def test_a_small_federation_reports_the_concept_metrics_per_round_and_final(tmp_path):
    metrics, history = _run(tmp_path, "cbm", "--model", "cbm",
                            "--set", "intervention_policy=uncertainty")  # fmt: skip
    for key in ("cas", "ois", "nis", "cace_mean", "intervention_auc"):
        assert key in metrics and np.isfinite(metrics[key]), key
    assert 0 < metrics["cas"] <= 1 and metrics["ois"] >= 0 and 0 <= metrics["nis"] <= 1
    points = [metrics[f"intervention_task_accuracy_{t}"] for t in range(8)]  # 7 concepts
    assert metrics["intervention_auc"] == pytest.approx(np.mean(points))
    assert all("val_intervention_auc" in h and "val_cace_mean" in h for h in history)
    assert [("cas" in h) for h in history] == [False, True, False, True]  # every 2 rounds
    shown = runner.invoke(app, ["show", str(tmp_path / "cbm")])
    assert shown.exit_code == 0 and "concept metrics" in shown.output
    assert "intervention_auc" in shown.output and "cas" in shown.output
    opaque, opaque_history = _run(tmp_path, "opaque", "--model", "opaque")
    assert "cas" in opaque and "cace_mean" not in opaque and "intervention_auc" not in opaque
    assert not any("val_intervention_auc" in h for h in opaque_history)


@pytest.mark.slow
def test_the_interventions_recipe_draws_one_curve_per_policy(tmp_path, monkeypatch):
    from fedstruct.methods.fcm import recipes
    from fedstruct.methods.fcm.config import INTERVENTION_POLICIES
    from fedstruct.runs.recipes import run_recipe

    tiny = {"samples": 1200, "rounds": 3, "max_epochs": 3, "clients": 4, "initial_clients": 2,
            "arrival_round": 2, "clients_per_round": 3, "autoencoder_epochs": 3,
            "metric_rows": 100, "concept_metrics_every": 0}  # fmt: skip
    monkeypatch.setattr(recipes, "QUICK", tiny)
    run_recipe("fcm-interventions", quick=True, out=tmp_path)
    rows = {r["name"]: r for r in json.loads((tmp_path / "results.json").read_text())}
    for policy in INTERVENTION_POLICIES:
        assert recipes.policy_label("asia", "c2bm", policy) in rows
        assert np.isfinite(rows[recipes.policy_label("asia", "c2bm", policy)]["intervention_auc"])
    assert (tmp_path / "policies_asia_c2bm.png").stat().st_size > 10_000
