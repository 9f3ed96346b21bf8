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

On a CUDA device each step is recorded once as a CUDA graph and replayed
(``ENCOConfig.cuda_graphs``; :mod:`fedstruct.fl.cuda_graphs`).

FED-CD (§5.3) starts each round from the broadcast prior ``(γ, θ)``; the networks
are fitted afresh each round from the client's seed for that round, as in the FED-CD
reference code, so a client keeps no state between rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from fedstruct.errors import ConfigError
from fedstruct.fl.cuda_graphs import ReplayedStep
from fedstruct.fl.device import host_array, resolve_device, seed_device
from fedstruct.fl.grid import torch_threads
from fedstruct.fl.threads import default_threads, usable_cores
from fedstruct.methods.fedcd.enco.config import ENCOConfig
from fedstruct.methods.fedcd.enco.graph_fitting import (
    ThetaAdam,
    edge_gradients,
    theta_update_mask,
    unintervened_block,
)
from fedstruct.methods.fedcd.enco.networks import ConditionalNetworks
from fedstruct.methods.fedcd.knowledge import FixedEdges
from fedstruct.methods.fedcd.learner import NO_SELF_LOOP, Beliefs, InterventionalData

__all__ = ["ENCO", "GRAPH_STAGE", "MODEL_STAGE", "ENCOConfig"]

#: The two stages of an epoch, as :meth:`ENCO.fit`'s ``tick`` names them.
MODEL_STAGE = "distribution fitting"
GRAPH_STAGE = "graph fitting"


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
        tick: Callable[[str], None] | None = None,
    ) -> Beliefs:
        """Run ``epochs`` of ENCO from ``prior``; return the learned ``(γ, θ)``.

        Parameters
        ----------
        progress
            Called after each epoch with its number and the current beliefs.
        tick
            Called after each step with its stage, :data:`MODEL_STAGE` or
            :data:`GRAPH_STAGE` (a progress line:
            :class:`~fedstruct.methods.fedcd.progress.EncoPace`).
        """
        cfg = self.config
        d = len(data.names)
        if prior.gamma.shape != (d, d) or prior.theta.shape != (d, d):
            raise ConfigError(
                f"prior beliefs have shape {prior.gamma.shape}, the data {d} variables"
            )
        device = resolve_device(cfg.device)
        threads = min(cfg.threads, usable_cores()) if cfg.threads else default_threads()
        with torch_threads(threads), _flush_denormals():
            seed = int(seed) % (2**63)
            gen = torch.Generator().manual_seed(seed)
            # The networks start from the same weights on every device; on a GPU the
            # draws of every step come from the GPU's own generator (no host copies).
            nets = ConditionalNetworks(data.cardinalities, cfg.hidden, gen).to(device)
            draws = gen if device.type == "cpu" else torch.Generator(device).manual_seed(seed)
            seed_device(seed, device)
            obs = torch.as_tensor(data.observational, device=device)
            inter = {t: torch.as_tensor(v, device=device) for t, v in data.interventional.items()}
            # Each step recorded as a CUDA graph and replayed (one launch, not ~180), when
            # its shapes never change: every intervened batch of the same size.
            batch_sizes = {min(len(v), cfg.batch_size) for v in inter.values()}
            record = cfg.cuda_graphs and device.type == "cuda" and len(batch_sizes) <= 1
            model_opt = torch.optim.Adam(
                nets.parameters(),
                lr=cfg.lr_model,
                weight_decay=cfg.weight_decay,
                fused=True,
                capturable=record,
            )
            gamma = torch.nn.Parameter(_on(prior.gamma, device).clone())
            theta = _on(prior.theta, device).clone()
            with torch.no_grad():
                gamma.fill_diagonal_(NO_SELF_LOOP)
                theta.fill_diagonal_(0.0)
            fixed = FixedEdges.from_knowledge(cfg.knowledge, data.names)
            clamp = None if fixed is None else fixed.clamper(gamma, theta)
            if clamp is not None:
                clamp()
            gamma_opt = torch.optim.Adam(
                [gamma], lr=cfg.lr_gamma, betas=(0.9, cfg.beta2_gamma), capturable=record
            )
            steps = _Steps(
                cfg,
                nets,
                model_opt,
                gamma,
                gamma_opt,
                theta_opt=ThetaAdam(theta, lr=cfg.lr_theta),
                clamp=clamp,
                block=unintervened_block(d, [j for j in range(d) if j not in inter], device),
                draws=draws,
                chunk=cfg.graph_chunk if device.type == "cpu" else cfg.graphs_per_step,
                in_place=record,
            )
            fit_model, fit_graph = steps.model_step, steps.graph_step
            if record:
                fit_model = ReplayedStep(fit_model, [draws])
                fit_graph = ReplayedStep(fit_graph, [draws])
            one_hot = torch.eye(d, device=device)
            obs_batches = _batches(len(obs), cfg.batch_size, draws)
            targets = _cycle(list(inter), gen)  # host ints: index the pools, no sync
            for epoch in range(1, epochs + 1):
                steps.feed(probs=_edge_probs(gamma.detach(), theta))
                for _ in range(cfg.model_steps):
                    steps.feed(rows=obs[next(obs_batches)])
                    fit_model()
                    if tick is not None:
                        tick(MODEL_STAGE)
                for _ in range(cfg.graph_steps):
                    t = next(targets)
                    pool = inter[t]
                    take = _randperm(len(pool), draws)[: cfg.batch_size]
                    steps.feed(batch=pool[take], target=one_hot[t])
                    fit_graph()
                    if tick is not None:
                        tick(GRAPH_STAGE)
                if progress is not None:
                    progress(epoch, _beliefs(gamma, theta))
            if steps.loss is not None:  # the one copy to the host, after the epochs
                self.last_loss_ = float(steps.loss)
            return _beliefs(gamma, theta)


@dataclass
class _Steps:
    """ENCO's two training steps on state that stays in place.

    The inputs of a step (the distribution-fitting probabilities and rows, the
    intervened batch and its target) arrive through :meth:`feed`; with ``in_place``
    they are copied into the tensors the previous step read, so that each step can be
    recorded once as a CUDA graph and replayed
    (:class:`fedstruct.fl.cuda_graphs.ReplayedStep`).
    """

    cfg: ENCOConfig
    nets: ConditionalNetworks
    model_opt: torch.optim.Optimizer
    gamma: torch.nn.Parameter
    gamma_opt: torch.optim.Optimizer
    theta_opt: ThetaAdam
    clamp: Callable[[], None] | None
    block: torch.Tensor  # unintervened_block
    draws: torch.Generator
    chunk: int  # graphs scored per pass
    in_place: bool
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    loss: torch.Tensor | None = None  # the last distribution-fitting loss

    def feed(self, **inputs: torch.Tensor) -> None:
        """The next step's inputs, by name (``probs``, ``rows``, ``batch``, ``target``)."""
        for name, value in inputs.items():
            held = self.inputs.get(name)
            if self.in_place and held is not None:
                held.copy_(value)
            else:
                self.inputs[name] = value.clone() if self.in_place else value

    def model_step(self) -> None:
        """Distribution fitting (ENCO §3.2): one Adam step of the conditionals on
        ``rows``, each row masked by its own graph drawn from ``probs``."""
        rows = self.inputs["rows"]
        parents = _sample_graphs(self.inputs["probs"], len(rows), self.draws)
        self.model_opt.zero_grad()
        loss = self.nets.nll_per_sample_graph(rows, parents)
        loss.backward()
        self.model_opt.step()
        self.loss = loss.detach()  # kept without its autograd graph, which backward freed

    def graph_step(self) -> None:
        """Graph fitting (ENCO §3.3): γ and θ move along eqs. (6)-(7) on ``batch``,
        intervened on the variable whose one-hot vector is ``target``."""
        cfg, gamma, theta = self.cfg, self.gamma, self.theta_opt.param
        target = self.inputs["target"]
        probs = _edge_probs(gamma.detach(), theta)
        graphs = _sample_graphs(probs, cfg.graphs_per_step, self.draws)
        nll = self.nets.nll_per_graph(self.inputs["batch"], graphs, chunk=self.chunk)
        g_gamma, g_theta = edge_gradients(
            graphs, nll, gamma.detach(), theta, target, cfg.lambda_sparse, self.block
        )
        gamma.grad = g_gamma
        self.gamma_opt.step()
        self.theta_opt.step(g_theta, theta_update_mask(len(theta), target, self.block))
        if self.clamp is not None:
            self.clamp()


def _on(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A float32 tensor of ``array`` on ``device``."""
    return torch.as_tensor(array, dtype=torch.float32).to(device)


def _beliefs(gamma: torch.Tensor, theta: torch.Tensor) -> Beliefs:
    out = host_array(gamma, "gamma").astype(np.float64)
    np.fill_diagonal(out, NO_SELF_LOOP)
    return Beliefs(out, host_array(theta, "theta").astype(np.float64))


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
    """``n`` adjacency matrices with independent Bernoulli edges (zero diagonal), drawn
    on ``gen``'s device (that of ``probs``)."""
    draws = torch.rand((n, *probs.shape), generator=gen, device=gen.device)
    return (draws < probs).to(probs.dtype)


def _randperm(n: int, gen: torch.Generator) -> torch.Tensor:
    """A random permutation of ``range(n)``, drawn on ``gen``'s device."""
    return torch.randperm(n, generator=gen, device=gen.device)


def _batches(n: int, size: int, gen: torch.Generator) -> Iterator[torch.Tensor]:
    """Row indices of shuffled batches, epoch after epoch (the last short batch dropped),
    on ``gen``'s device."""
    if n <= size:
        while True:
            yield torch.arange(n, device=gen.device)
    while True:
        perm = _randperm(n, gen)
        for start in range(0, n - size + 1, size):
            yield perm[start : start + size]


def _cycle(items: list[int], gen: torch.Generator) -> Iterator[int]:
    """The items in a fresh random order each pass (ENCO's intervention schedule)."""
    while True:
        for i in torch.randperm(len(items), generator=gen).tolist():
            yield items[i]
