"""ENCO pieces: the two network paths agree, the gradient estimator, θ's Adam."""

import numpy as np
import pytest
import torch

from fedstruct.methods.fedcd.enco.graph_fitting import (
    ThetaAdam,
    edge_gradients,
    theta_update_mask,
)
from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks


def test_per_graph_and_per_sample_paths_give_the_same_likelihood():
    gen = torch.Generator().manual_seed(0)
    nets = ConditionalNetworks([3, 2, 4, 3], hidden=16, generator=gen)
    x = torch.stack([torch.randint(0, k, (50,), generator=gen) for k in (3, 2, 4, 3)], dim=1)
    graph = (torch.rand(4, 4, generator=gen) < 0.5).float().fill_diagonal_(0)
    per_graph = nets.nll_per_graph(x, graph[None].expand(3, -1, -1), chunk=2)  # (3, d)
    per_sample = nets.nll_per_sample_graph(x, graph[None].expand(50, -1, -1))
    assert per_graph.shape == (3, 4)
    torch.testing.assert_close(per_graph[0], per_graph[2])
    assert float(per_graph.mean()) == pytest.approx(float(per_sample.detach()), rel=1e-5)


def test_unused_categories_get_no_probability():
    nets = ConditionalNetworks([2, 3], hidden=8, generator=torch.Generator().manual_seed(1))
    x = torch.tensor([[1, 2], [0, 0]])
    nll = nets.nll_per_graph(x, torch.zeros(1, 2, 2))
    assert torch.isfinite(nll).all()
    # a binary variable's two probabilities sum to one: its NLLs are those of a 2-way softmax
    logits = nets._head(torch.zeros(2, 1, 8))
    assert torch.isinf(logits[0, 0, 2]) and not torch.isinf(logits[1, 0, 2])


def test_edge_gradients_match_the_estimator_by_hand():
    graphs = torch.zeros(2, 3, 3)
    graphs[0, 0, 1] = 1.0  # graph 0 has 0 -> 1, graph 1 has no edge
    nll = torch.tensor([[0.5, 1.0, 0.7], [0.5, 2.0, 0.7]])  # L_1 better with the edge
    zero = torch.zeros(3, 3)
    g_gamma, g_theta = edge_gradients(graphs, nll, zero, zero, target=0, lambda_sparse=0.004)
    assert float(g_gamma[0, 1]) == pytest.approx(0.25 * 0.5 * (-1.0 + 0.004))
    assert float(g_gamma[:, 0].abs().sum()) == 0.0  # the intervened variable's parents
    assert float(g_theta[0, 1]) == pytest.approx(-0.125)
    assert float(g_theta[1, 0]) == pytest.approx(0.125)
    # edges present in every graph or in none carry no information
    assert float(g_gamma[1, 2]) == 0.0 and float(g_theta[2, 1]) == 0.0


def test_theta_adam_moves_only_masked_entries_by_lr_on_its_first_step():
    theta = torch.zeros(3, 3)
    opt = ThetaAdam(theta, lr=0.1)
    grad = torch.tensor([[0.0, -2.0, 0.5], [2.0, 0.0, 1.0], [-0.5, -1.0, 0.0]])
    mask = theta_update_mask(3, target=0, unintervened=[1, 2])
    opt.step(grad, mask)
    assert float(theta[0, 1]) == pytest.approx(0.1, rel=1e-4)  # -lr · sign(grad)
    assert float(theta[2, 0]) == pytest.approx(0.1, rel=1e-4)
    assert float(theta[1, 2]) == pytest.approx(-0.01, rel=1e-4)  # a tenth of the rate
    assert float(theta[0, 0]) == 0.0
    np.testing.assert_array_equal(mask.diagonal().numpy(), 0.0)
