"""The device setting: resolution, refusals, CPU-only messages and saved models, and the
code paths that must behave the same on any device (checked on the CPU and ``meta``)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
import torch
from torch import nn

from fedstruct.errors import ConfigError, DataError
from fedstruct.fl.device import host_array, resolve_device
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedcd.enco import ENCOConfig
from fedstruct.methods.fedcd.enco.graph_fitting import (
    edge_gradients,
    theta_update_mask,
    unintervened_block,
)
from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.network import NeuralView


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_auto_is_the_cpu_without_a_gpu_and_cuda_with_one(no_gpu, monkeypatch):
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match=r"has 2 CUDA GPU\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")


def test_cuda_without_a_gpu_and_a_misspelt_device_are_refused_in_one_line(no_gpu):
    with pytest.raises(ConfigError, match=r"finds no CUDA GPU.*--set device=cpu") as err:
        resolve_device("cuda:0")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="'gpu': give 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        resolve_device("gpu")


def test_the_cuda_graphs_setting_is_a_boolean():
    assert ENCOConfig().cuda_graphs is True
    with pytest.raises(ConfigError, match="cuda_graphs must be true or false"):
        ENCOConfig(cuda_graphs=1)


@pytest.mark.parametrize("config", [ENCOConfig, FedAvgConfig, CafeConfig, FCMConfig, FedNGMConfig])
def test_every_torch_method_checks_its_device_setting_without_a_gpu(config):
    assert config().device == "auto"
    assert config(device="cuda:1").device == "cuda:1"  # the spelling only: no GPU needed
    with pytest.raises(ConfigError, match=r"device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        config(device="gpu0")


def test_weights_leave_as_cpu_copies_and_a_meta_model_is_refused():
    model = nn.Linear(3, 2)
    params = get_params(model)
    assert all(type(v) is np.ndarray for v in params.values())
    params["weight"][0, 0] = 123.0  # a copy: the model is untouched
    assert float(model.weight[0, 0].detach()) != 123.0
    with pytest.raises(DataError, match="parameter 'weight' is on the 'meta' device"):
        get_params(nn.Linear(3, 2, device="meta"))


def test_host_array_copies_through_the_cpu():
    """The path a GPU tensor takes (mocked): detach, then .cpu(), then numpy."""
    tensor = mock.MagicMock(is_meta=False)
    tensor.detach.return_value.cpu.return_value.numpy.return_value = np.ones(2)
    out = host_array(tensor)
    tensor.detach.return_value.cpu.assert_called_once_with()
    np.testing.assert_array_equal(out, np.ones(2))


def test_weights_saved_from_one_model_load_into_a_cpu_model():
    trained = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    set_params(fresh, get_params(trained))
    x = torch.randn(5, 4)
    torch.testing.assert_close(fresh(x), trained(x), rtol=0, atol=0)


def test_a_precomputed_block_gives_the_masks_and_gradients_of_the_index_list():
    gen = torch.Generator().manual_seed(0)
    d, unintervened = 5, [1, 3, 4]
    block = unintervened_block(d, unintervened)
    assert torch.equal(theta_update_mask(d, 2, block), theta_update_mask(d, 2, unintervened))
    graphs = (torch.rand(6, d, d, generator=gen) < 0.5).float()
    nll, gamma, theta = torch.rand(6, d, generator=gen), torch.randn(d, d), torch.randn(d, d)
    by_list = edge_gradients(graphs, nll, gamma, theta, 2, 0.004, unintervened)
    by_block = edge_gradients(graphs, nll, gamma, theta, 2, 0.004, block)
    for a, b in zip(by_list, by_block, strict=True):
        assert torch.equal(a, b)
    # the target as a one-hot vector (how a step recorded as a CUDA graph passes it)
    one_hot = torch.eye(d)[2]
    assert torch.equal(theta_update_mask(d, one_hot, block), theta_update_mask(d, 2, block))
    by_vector = edge_gradients(graphs, nll, gamma, theta, one_hot, 0.004, block)
    for a, b in zip(by_vector, by_block, strict=True):
        assert torch.equal(a, b)


def test_scoring_outputs_a_block_at_a_time_gives_the_same_likelihoods():
    """Large d scores output variables in blocks (memory); the numbers must not change."""
    gen = torch.Generator().manual_seed(2)
    nets = ConditionalNetworks([3, 2, 4, 3, 2], hidden=8, generator=gen)
    x = torch.stack([torch.randint(0, k, (20,), generator=gen) for k in (3, 2, 4, 3, 2)], dim=1)
    graphs = (torch.rand(7, 5, 5, generator=gen) < 0.5).float()
    whole = nets.nll_per_graph(x, graphs, chunk=3)
    blocks = nets.nll_per_graph(x, graphs, chunk=3, max_gather=2 * 5 * 20 * 8)  # 2 outputs
    torch.testing.assert_close(blocks, whole, rtol=1e-6, atol=1e-6)


def test_a_routed_neural_view_moves_its_masks_with_its_weights():
    view = NeuralView(4, [6], seed=0)
    view.route([np.ones((6, 4)), np.ones((4, 6))])
    view.to("meta")
    assert all(m.is_meta for m in view.routing) and view.layers[0].weight.is_meta
    with pytest.raises(DataError, match="weight w0 is on the 'meta' device"):
        view.to_arrays()


def test_a_supernode_takes_its_own_device_over_the_runs():
    from fedstruct.deployment.app import node_settings

    settings = json.dumps({"device": "auto", "rounds": 3})
    context = SimpleNamespace(run_config={"settings": settings}, node_config={"device": "cpu"})
    assert json.loads(node_settings(context)) == {"device": "cpu", "rounds": 3}
    context.node_config = {}
    assert node_settings(context) == settings
    other = json.dumps({"rounds": 3})  # a method without the setting keeps the run's
    context = SimpleNamespace(run_config={"settings": other}, node_config={"device": "cpu"})
    assert node_settings(context) == other


def test_supernode_refuses_a_gpu_its_machine_lacks(tmp_path, monkeypatch, no_gpu):
    from typer.testing import CliRunner

    from fedstruct.cli import app

    args = ["flower", "supernode", "--insecure", "--partition", "0", "--device", "cuda"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "torch finds no CUDA GPU" in " ".join(result.output.split())


def test_a_model_saved_on_a_gpu_machine_loads_and_predicts_on_the_cpu(tmp_path, no_gpu):
    """model.json records device 'cuda' (as a GPU run writes it); the weights are CPU
    arrays, so a machine without a GPU loads the model and predicts the same."""
    from fedstruct.data import horizontal, load_network
    from fedstruct.fl.artifact import MODEL_JSON, load, write_model_json
    from fedstruct.methods.fedavg import FedAvg
    from fedstruct.runs.artifacts import write_artifacts

    net = load_network("asia")
    model = FedAvg("dysp", net.cardinalities, rounds=1, device="cpu").fit(
        horizontal(net.sample(300, seed=0), n_clients=2, seed=0)
    )
    write_artifacts(model, tmp_path)
    document = json.loads((tmp_path / MODEL_JSON).read_text())
    document["params"]["device"] = "cuda"
    write_model_json(tmp_path, document)  # as a GPU run writes it (with its checksums)
    loaded = load(tmp_path)
    assert loaded.config_.device == "cuda"
    rows = net.sample(50, seed=1)
    np.testing.assert_array_equal(loaded.predict_proba(rows), model.predict_proba(rows))
