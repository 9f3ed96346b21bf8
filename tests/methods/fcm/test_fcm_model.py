"""The F-CMs shared model: architectures, warm-start adaptation, interventions, loss."""

import numpy as np
import pandas as pd
import pytest
import torch

from fedstruct.errors import GraphError
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm import FCMConfig, ModelSpec
from fedstruct.methods.fcm.model import ConceptModel, adapt, node_of, parameter_change
from fedstruct.methods.fcm.train import eq2_loss, label_matrix, train_local

CARDS = {"a": 2, "b": 3, "c": 2, "y": 2}
GRAPH = Graph.from_edges(["a", "b", "c", "y"], [("a", "b"), ("b", "y"), ("c", "y")])


def spec(arch, concepts=("a", "b", "c"), graph=GRAPH, dim=5):
    return ModelSpec.build(FCMConfig(model=arch), "y", concepts, CARDS, dim, graph)


def outputs(arch_spec, params, x, truth=None, mask=None):
    model = ConceptModel(arch_spec)
    model.load_arrays(params)
    model.eval()
    with torch.no_grad():
        return model(x, truth, mask)


@pytest.mark.parametrize("arch", ["opaque", "cbm", "cem", "cgm", "c2bm"])
def test_module_inputs_follow_the_architecture(arch):
    s = spec(arch)
    expected = {
        "opaque": {"a": (), "b": (), "c": (), "y": ()},
        "cbm": {"a": (), "b": (), "c": (), "y": ("a", "b", "c")},
        "cem": {"a": (), "b": (), "c": (), "y": ("a", "b", "c")},
        "cgm": {"a": (), "b": ("a",), "c": (), "y": ("b", "c")},
        "c2bm": {"a": (), "b": ("a",), "c": (), "y": ("b", "c")},
    }[arch]
    assert dict(s.parents) == expected
    logits = ConceptModel(s, 0)(torch.zeros(4, 5))
    assert [t.shape for t in logits] == [(4, 2), (4, 3), (4, 2), (4, 2)]
    assert ModelSpec.from_json(s.to_json()) == s


@pytest.mark.parametrize("arch", ["cbm", "cem", "cgm", "c2bm"])
def test_adding_a_concept_keeps_every_prediction_and_old_parameter(arch):
    """§4.2.2 warm start: E1 (new concept d) and, for graph models, E2 (d -> y)."""
    cards = {**CARDS, "d": 4}
    graph = Graph.from_edges(
        ["a", "b", "c", "d", "y"], [("a", "b"), ("b", "y"), ("c", "y"), ("d", "y")]
    )
    old = ModelSpec.build(FCMConfig(model=arch), "y", ("a", "b", "c"), cards, 5, GRAPH)
    new = ModelSpec.build(FCMConfig(model=arch), "y", ("a", "b", "c", "d"), cards, 5, graph)
    assert "d" in new.parents["y"]
    before = adapt({}, None, old, seed=1)
    after = adapt(before, old, new, seed=2)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)
    added = [k for k in after if k not in before]
    assert {node_of(k) for k in added} == {"d", "y"}
    x = torch.randn(32, 5, generator=torch.Generator().manual_seed(0))
    y_old = outputs(old, before, x)
    y_new = outputs(new, after, x)
    for i in range(4):  # a, b, c, y: unchanged by the new concept
        torch.testing.assert_close(y_old[i], y_new[i if i < 3 else 4])


def test_reorienting_an_edge_drops_and_adds_one_input_each():
    """E2: b -> y reversed into y -> b removes y's input b and adds b's input y."""
    flipped = Graph.from_edges(["a", "b", "c", "y"], [("a", "b"), ("y", "b"), ("c", "y")])
    old, new = spec("c2bm"), spec("c2bm", graph=flipped)
    assert new.parents["b"] == ("a", "y") and new.parents["y"] == ("c",)
    before = adapt({}, None, old, seed=0)
    after = adapt(before, old, new, seed=0)
    gone = set(before) - set(after)
    assert gone and all(".coefficients.b." in k for k in gone)
    fresh = set(after) - set(before)
    assert fresh and all(".coefficients.y." in k and not after[k].any() for k in fresh)
    assert new.order.index("y") < new.order.index("b")


def test_cyclic_module_inputs_are_refused():
    with pytest.raises(GraphError, match="cycle"):
        ModelSpec("cgm", "y", ("a",), {"a": 2, "y": 2}, {"a": ("y",), "y": ("a",)}, 3)


def test_intervention_replaces_the_parent_prediction_for_its_children():
    """With a's label given, b's C2BM logits equal those of a one-hot input."""
    s = spec("c2bm")
    params = adapt({}, None, s, seed=3)
    for k in params:  # make b depend strongly on a's state
        if ".coefficients.a.bias" in k:
            params[k] = np.array([3.0, -3.0, 1.0, -1.0, 0.0, 2.0], dtype=np.float32)
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(1))
    truth = torch.tensor([[1, -1, -1, -1]] * 16)
    mask = torch.zeros(16, 4, dtype=torch.bool)
    mask[:, 0] = True
    plain = outputs(s, params, x)
    hit = outputs(s, params, x, truth, mask)
    torch.testing.assert_close(plain[0], hit[0])  # a's own logits unchanged
    assert not torch.allclose(plain[1], hit[1])
    # The intervened value is exactly the one-hot of state 1: recompute b by hand.
    model = ConceptModel(s)
    model.load_arrays(params)
    with torch.no_grad():
        node = model.nodes["b"]
        z = model.encoder(x)
        by_hand, _ = node(z, {"a": torch.tensor([[0.0, 1.0]] * 16)})
    torch.testing.assert_close(hit[1], by_hand)


def test_eq2_weights_concepts_and_task():
    s = spec("cbm")
    logits = [torch.zeros(2, 2), torch.zeros(2, 3), torch.zeros(2, 2), torch.zeros(2, 2)]
    truth = torch.tensor([[0, 1, -1, 1], [1, -1, -1, -1]])
    loss, task = eq2_loss(logits, truth, s, 0.8)
    # concepts: a (ln 2) + b (ln 3); c has no label; task: ln 2 (one row).
    assert task.item() == pytest.approx(np.log(2))
    assert loss.item() == pytest.approx(0.8 * (np.log(2) + np.log(3)) + 0.2 * np.log(2))


def test_frozen_modules_do_not_move():
    s = spec("cgm")
    model = ConceptModel(s, 0)
    before = model.state_arrays()
    x = torch.randn(64, 5, generator=torch.Generator().manual_seed(2))
    labels = pd.DataFrame({"a": np.arange(64) % 2, "y": (np.arange(64) // 2) % 2})
    train_local(
        model, x, label_matrix(labels, s), trainable=["a", "y"], epochs=2, batch_size=16,
        learning_rate=0.05, concept_weight=0.8, intervention_rate=0.5,
        rng=np.random.default_rng(0),
    )  # fmt: skip
    after = model.state_arrays()
    moved = {node_of(k) for k in after if not np.array_equal(after[k], before[k])}
    assert moved == {None, "a", "y"}  # the encoder (None) and the supervised modules


def test_parameter_change_counts_growth_and_changed_values():
    before = {"w": np.zeros(6, np.float32)}
    after = {"w": np.array([0, 0, 1, 0, 0, 2], np.float32), "v": np.ones(4, np.float32)}
    change = parameter_change(before, after)
    assert change == {"params_growth": 0.4, "params_changed_fraction": 0.6}
