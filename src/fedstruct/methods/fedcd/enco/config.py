"""ENCO's hyper-parameters (imported without torch: FED-CD's run settings inherit them)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Boolean, Interval, check_fields
from fedstruct.discovery.knowledge import Knowledge, KnowledgeSetting
from fedstruct.fl.device import AUTO, DeviceName

__all__ = ["ENCOConfig"]


@dataclass(frozen=True)
class ENCOConfig:
    """ENCO's hyper-parameters; defaults from Lippe et al. (2021), Appendix B.

    Parameters
    ----------
    hidden
        Width of each conditional network (64).
    model_steps
        Steps per epoch of distribution fitting: training the conditionals (1000).
    graph_steps
        Steps per epoch of graph fitting: updating the edge beliefs γ and θ (100).
    batch_size
        Rows per step in both stages (128).
    graphs_per_step
        Adjacency matrices ``K`` sampled per graph-fitting step (100).
    lambda_sparse
        Sparsity regulariser λ (0.004).
    lr_model
        Adam's learning rate of the conditional networks (5e-3).
    lr_gamma
        Adam's learning rate of the edge-existence parameters γ (2e-2).
    lr_theta
        Adam's learning rate of the edge-orientation parameters θ (1e-1).
    beta2_gamma
        Adam's β2 for γ (0.9; β1 = 0.9 everywhere, β2 = 0.999 elsewhere).
    weight_decay
        L2 weight decay of the networks' Adam (1e-4, the value of ENCO's experiment
        scripts; without it the conditionals drift over long runs and true edges are
        lost after ~8 epochs, see docs/fedcd.md).
    graph_chunk
        Graphs scored per batched forward pass on the CPU (memory vs speed; not a
        result change); a GPU scores all ``graphs_per_step`` in one pass.
    threads
        Torch threads while learning (default: ``FEDSTRUCT_THREADS``, else 1;
        :func:`fedstruct.fl.threads.default_threads`; never more than the cores this
        process may use).
    device
        Where ENCO trains: ``auto`` (a CUDA GPU when torch finds one, else the CPU),
        ``cpu``, ``cuda`` or ``cuda:N`` (:mod:`fedstruct.fl.device`; docs/runtime.md).
    cuda_graphs
        On a CUDA device, record each training step once as a CUDA graph and replay it
        (:mod:`fedstruct.fl.cuda_graphs`): one launch per step instead of ~180 small
        ones, which at d = 20 is most of a step's time. ``False``: op by op. No effect
        on the CPU, nor when the intervened batches differ in size (fewer rows than
        ``batch_size`` in some regimes, not in all). A replayed run draws its random
        numbers in another order than an op-by-op one: the two differ like two seeds.
    knowledge
        Background knowledge (a ``Knowledge``, a JSON/YAML file, docs/knowledge.md)
        that fixes edge parameters (:mod:`fedstruct.methods.fedcd.knowledge`); ``None``
        (default): none.
    """

    hidden: int = 64
    model_steps: int = 1000
    graph_steps: int = 100
    batch_size: int = 128
    graphs_per_step: int = 100
    lambda_sparse: float = 0.004
    lr_model: float = 5e-3
    lr_gamma: float = 2e-2
    lr_theta: float = 1e-1
    beta2_gamma: float = 0.9
    weight_decay: float = 1e-4
    graph_chunk: int = 25
    threads: int | None = None
    device: str = AUTO
    cuda_graphs: bool = True
    knowledge: str | Knowledge | None = None

    def __post_init__(self) -> None:
        # graphs_per_step >= 2: the gradient compares graphs with and without each edge
        check_fields(self, _ENCO_CONSTRAINTS, "enco")


_ENCO_CONSTRAINTS = {
    "knowledge": KnowledgeSetting(),
    **dict.fromkeys(
        ("hidden", "model_steps", "graph_steps", "batch_size", "graph_chunk"), Interval(int, 1)
    ),
    "graphs_per_step": Interval(int, 2),
    **dict.fromkeys(("lr_model", "lr_gamma", "lr_theta"), Interval(float, 0, closed="neither")),
    **dict.fromkeys(("lambda_sparse", "weight_decay"), Interval(float, 0)),
    "threads": Interval(int, 1, allow_none=True),
    "device": DeviceName(),
    "cuda_graphs": Boolean(),
}
