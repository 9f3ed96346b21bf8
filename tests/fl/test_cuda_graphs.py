"""Steps recorded as CUDA graphs and replayed (``fedstruct.fl.cuda_graphs``) and ENCO's
recorded path. They need a CUDA GPU: CI has none, so they run where one is lent
(benchmarks/gpu.py's device command runs this file first)."""

from __future__ import annotations

import pytest
import torch

from fedstruct.fl.cuda_graphs import ReplayedStep

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _train(batches: list[torch.Tensor], record: bool) -> tuple[torch.Tensor, bool]:
    """A linear model fitted by Adam on ``batches`` (fed through one buffer), on the GPU,
    op by op or recorded; its final parameters and whether it was recorded."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=0.05, fused=True, capturable=record)
    x = torch.zeros(32, 8, device="cuda")

    def step() -> None:
        opt.zero_grad()
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        loss.backward()
        opt.step()

    run = ReplayedStep(step) if record else step
    for batch in batches:
        x.copy_(batch)
        run()
    params = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()
    return params, isinstance(run, ReplayedStep) and run.recorded


def test_a_replayed_step_computes_what_the_op_by_op_step_computes():
    batches = [torch.randn(32, 8, generator=torch.Generator().manual_seed(i)) for i in range(12)]
    by_ops, _ = _train(batches, record=False)
    replayed, recorded = _train(batches, record=True)
    assert recorded
    torch.testing.assert_close(replayed, by_ops, rtol=1e-5, atol=1e-6)


def test_each_replay_draws_new_random_numbers_from_its_generator():
    gen = torch.Generator("cuda").manual_seed(0)
    out = torch.zeros(4, device="cuda")

    def step() -> None:
        out.copy_(torch.rand(4, device="cuda", generator=gen))

    run, seen = ReplayedStep(step, [gen]), []
    for _ in range(6):
        run()
        seen.append(out.clone())
    draws = torch.stack(seen).cpu()
    assert run.recorded
    assert len({tuple(row.tolist()) for row in draws}) == 6  # no replay repeats a draw
    assert 0.0 <= float(draws.min()) and float(draws.max()) < 1.0


def test_enco_recorded_on_the_gpu_learns_the_graph_the_op_by_op_run_learns():
    from fedstruct.data.scm import CategoricalSCM
    from fedstruct.graphs.metrics import shd
    from fedstruct.graphs.random import erdos_renyi_dag
    from fedstruct.methods.fedcd import (
        ENCO,
        Beliefs,
        InterventionalData,
        final_graph,
        horizontal_interventions,
    )
    from fedstruct.methods.fedcd.enco import ENCOConfig

    dag = erdos_renyi_dag(8, seed=0, edges_per_node=1.0, shuffle=True)
    scm = CategoricalSCM(dag, seed=0)
    [whole] = horizontal_interventions(scm, 1, n_observational=3000, n_per_intervention=300, seed=0)
    data = InterventionalData.from_client(whole)
    scores = {}
    for record in (False, True):
        config = ENCOConfig(device="cuda", cuda_graphs=record, model_steps=500, graph_steps=60)
        beliefs = ENCO(config).fit(data, Beliefs.uniform(8), epochs=6, seed=0)
        scores[record] = shd(dag, final_graph(data.names, beliefs))
    assert scores[False] <= 1 and scores[True] <= 1, scores
