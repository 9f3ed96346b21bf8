"""ENCO (Lippe et al. 2021): efficient neural causal discovery, as FED-CD's local learner.

Each epoch alternates the two stages of ENCO §3 (Algorithm 1):

1. **Distribution fitting** (§3.2): ``model_steps`` Adam steps on observational
   batches; every row masks the networks' inputs with its own adjacency sampled from
   ``σ(γ) σ(θ)`` (fixed for the stage), and the conditionals learn to predict each
   variable from any parent set.
2. **Graph fitting** (§3.3): ``graph_steps`` steps, each on a batch intervened on the
   next variable of a shuffled cycle over the intervened variables; ``K`` graphs are
   sampled, every variable's likelihood is scored under each of them, and γ, θ move
   along the estimators of :mod:`.graph_fitting`.

FED-CD (§5.3) starts each round from the broadcast prior ``(γ, θ)``; the networks
are fitted afresh each round from the client's seed for that round, as in the FED-CD
reference code, so a client keeps no state between rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError
from fedstruct.fl.grid import torch_threads
from fedstruct.fl.threads import default_threads, usable_cores
from fedstruct.methods.fedcd.enco.graph_fitting import ThetaAdam, edge_gradients, theta_update_mask
from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks
from fedstruct.methods.fedcd.learner import NO_SELF_LOOP, Beliefs, InterventionalData

__all__ = ["ENCO", "ENCOConfig"]


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
        Graphs scored per batched forward pass (memory vs speed; not a result change).
    threads
        Torch threads while learning (default: ``FEDSTRUCT_THREADS``, else 1;
        :func:`fedstruct.fl.threads.default_threads`; never more than the cores this
        process may use).
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

    def __post_init__(self) -> None:
        # graphs_per_step >= 2: the gradient compares graphs with and without each edge
        check_fields(self, _ENCO_CONSTRAINTS, "enco")


_ENCO_CONSTRAINTS = {
    **dict.fromkeys(
        ("hidden", "model_steps", "graph_steps", "batch_size", "graph_chunk"), Interval(int, 1)
    ),
    "graphs_per_step": Interval(int, 2),
    **dict.fromkeys(("lr_model", "lr_gamma", "lr_theta"), Interval(float, 0, closed="neither")),
    **dict.fromkeys(("lambda_sparse", "weight_decay"), Interval(float, 0)),
    "threads": Interval(int, 1, allow_none=True),
}


class ENCO:
    """ENCO as a :class:`~fedstruct.methods.fedcd.learner.LocalLearner`.

    Examples
    --------
    >>> learner = ENCO(ENCOConfig(model_steps=50, graph_steps=10))
    >>> prior = Beliefs.uniform(len(data.names))  # doctest: +SKIP
    >>> beliefs = learner.fit(data, prior, epochs=2, seed=0)  # doctest: +SKIP
    """

    def __init__(self, config: ENCOConfig | None = None) -> None:
        self.config = config or ENCOConfig()

    def fit(
        self,
        data: InterventionalData,
        prior: Beliefs,
        epochs: int,
        seed: int,
        progress: Callable[[int, Beliefs], None] | None = None,
    ) -> Beliefs:
        """Run ``epochs`` of ENCO from ``prior``; return the learned ``(γ, θ)``.

        Parameters
        ----------
        progress
            Called after each epoch with its number and the current beliefs.
        """
        cfg = self.config
        d = len(data.names)
        if prior.gamma.shape != (d, d) or prior.theta.shape != (d, d):
            raise ConfigError(
                f"prior beliefs have shape {prior.gamma.shape}, the data {d} variables"
            )
        threads = min(cfg.threads, usable_cores()) if cfg.threads else default_threads()
        with torch_threads(threads), _flush_denormals():
            gen = torch.Generator().manual_seed(int(seed) % (2**63))
            nets = ConditionalNetworks(data.cardinalities, cfg.hidden, gen)
            model_opt = torch.optim.Adam(
                nets.parameters(), lr=cfg.lr_model, weight_decay=cfg.weight_decay, fused=True
            )
            gamma = torch.nn.Parameter(torch.as_tensor(prior.gamma, dtype=torch.float32).clone())
            theta = torch.as_tensor(prior.theta, dtype=torch.float32).clone()
            with torch.no_grad():
                gamma.fill_diagonal_(NO_SELF_LOOP)
                theta.fill_diagonal_(0.0)
            gamma_opt = torch.optim.Adam([gamma], lr=cfg.lr_gamma, betas=(0.9, cfg.beta2_gamma))
            theta_opt = ThetaAdam(theta, lr=cfg.lr_theta)
            obs = torch.as_tensor(data.observational)
            inter = {t: torch.as_tensor(v) for t, v in data.interventional.items()}
            unintervened = [j for j in range(d) if j not in inter]
            obs_batches = _batches(len(obs), cfg.batch_size, gen)
            targets = _cycle(list(inter), gen)
            for epoch in range(1, epochs + 1):
                probs = _edge_probs(gamma.detach(), theta)
                for _ in range(cfg.model_steps):
                    rows = obs[next(obs_batches)]
                    parents = _sample_graphs(probs, len(rows), gen)
                    model_opt.zero_grad()
                    loss = nets.nll_per_sample_graph(rows, parents)
                    loss.backward()
                    model_opt.step()
                for _ in range(cfg.graph_steps):
                    t = next(targets)
                    pool = inter[t]
                    take = torch.randperm(len(pool), generator=gen)[: cfg.batch_size]
                    probs = _edge_probs(gamma.detach(), theta)
                    graphs = _sample_graphs(probs, cfg.graphs_per_step, gen)
                    nll = nets.nll_per_graph(pool[take], graphs, chunk=cfg.graph_chunk)
                    g_gamma, g_theta = edge_gradients(
                        graphs, nll, gamma.detach(), theta, t, cfg.lambda_sparse, unintervened
                    )
                    gamma.grad = g_gamma
                    gamma_opt.step()
                    theta_opt.step(g_theta, theta_update_mask(d, t, unintervened))
                self.last_loss_ = float(loss.detach())
                if progress is not None:
                    progress(epoch, _beliefs(gamma, theta))
            return _beliefs(gamma, theta)


def _beliefs(gamma: torch.Tensor, theta: torch.Tensor) -> Beliefs:
    out = gamma.detach().numpy().astype(np.float64)
    np.fill_diagonal(out, NO_SELF_LOOP)
    return Beliefs(out, theta.numpy().astype(np.float64))


@contextmanager
def _flush_denormals() -> Iterator[None]:
    """Treat subnormal floats as zero while learning.

    Weight decay drives the embeddings of inputs that are never parents, and Adam's
    moments of their gradients, towards zero; once they are subnormal every
    operation on them is 10-100x slower on x86 (measured: an epoch went from 8 s to
    60 s). Flushing them to zero changes values below 1e-38 only.
    """
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)  # torch's default


def _edge_probs(gamma: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(gamma) * torch.sigmoid(theta)
    return p.fill_diagonal_(0.0)


def _sample_graphs(probs: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """``n`` adjacency matrices with independent Bernoulli edges (zero diagonal)."""
    draws = torch.rand((n, *probs.shape), generator=gen)
    return (draws < probs).to(probs.dtype)


def _batches(n: int, size: int, gen: torch.Generator) -> Iterator[torch.Tensor]:
    """Row indices of shuffled batches, epoch after epoch (the last short batch dropped)."""
    if n <= size:
        while True:
            yield torch.arange(n)
    while True:
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n - size + 1, size):
            yield perm[start : start + size]


def _cycle(items: list[int], gen: torch.Generator) -> Iterator[int]:
    """The items in a fresh random order each pass (ENCO's intervention schedule)."""
    while True:
        for i in torch.randperm(len(items), generator=gen).tolist():
            yield items[i]
