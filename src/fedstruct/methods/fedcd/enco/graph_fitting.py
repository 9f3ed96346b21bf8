"""ENCO's graph-fitting step: low-variance gradients for γ and θ, and θ's masked Adam.

Lippe et al. (2021), §3.3 (eqs. 5-7) and Appendix B: with ``K`` adjacency matrices
sampled from ``σ(γ) σ(θ)`` and each variable's negative log-likelihood ``L_j`` on a
batch intervened on variable ``I``,

* ``∂/∂γ_ij = σ'(γ_ij) σ(θ_ij) (E[L_j | i→j] - E[L_j | i↛j] + λ)`` for ``j ≠ I``
  (the intervened variable's parents are cut, so its column is not updated);
* ``∂/∂θ_ij = σ'(θ_ij) σ(γ_ij) (E[L_j | i→j] - E[L_j | i↛j])`` on row ``I`` only,
  applied antisymmetrically (``θ_ji = -θ_ij``);

where the conditional expectations are Monte-Carlo means over the sampled graphs that
have (or lack) the edge. Pairs of variables without interventions also learn their
orientation from other variables' interventional batches, at a tenth of the rate
(ENCO's "partial interventions", Appendix D.3).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["ThetaAdam", "edge_gradients", "theta_update_mask", "unintervened_block"]

#: Learning-rate multiplier of θ between two variables without interventions.
UNINTERVENED_RATE = 0.1


def edge_gradients(
    graphs: torch.Tensor,
    nll: torch.Tensor,
    gamma: torch.Tensor,
    theta: torch.Tensor,
    target: int | torch.Tensor,
    lambda_sparse: float,
    unintervened: Sequence[int] | torch.Tensor = (),
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradient estimates of ENCO eqs. (6)-(7) for one intervened batch.

    Parameters
    ----------
    graphs
        ``(K, d, d)`` sampled adjacency matrices (0/1 floats).
    nll
        ``(K, d)`` mean negative log-likelihood of each variable under each graph.
    gamma, theta
        Current parameters ``(d, d)``.
    target
        The intervened variable ``I``, or its one-hot ``(d,)`` vector on the
        parameters' device (a step that takes it so stays the same at every target,
        as a CUDA graph must: :mod:`fedstruct.fl.cuda_graphs`).
    lambda_sparse
        The sparsity regulariser λ (ENCO: 0.004).
    unintervened
        Variables this learner has no interventions on; θ between two of them is
        updated too (see the module docstring). Or their :func:`unintervened_block`,
        computed once per fit, so that a step builds nothing on the host.

    Returns
    -------
    tuple of torch.Tensor
        ``(grad_gamma, grad_theta)``, ``grad_theta`` antisymmetric. Entries whose edge
        was present in all or in none of the ``K`` graphs get no gradient.
    """
    k = graphs.shape[0]
    present = graphs.sum(dim=0)
    absent = k - present
    informative = ((present > 0) & (absent > 0)).to(nll.dtype)
    weighted = nll[:, None, :]  # L_j broadcast over parents i
    with_edge = (graphs * weighted).sum(dim=0) / present.clamp(min=1.0)
    without_edge = ((1.0 - graphs) * weighted).sum(dim=0) / absent.clamp(min=1.0)
    diff = with_edge - without_edge
    is_target = _one_hot(target, gamma)
    sg, st = torch.sigmoid(gamma), torch.sigmoid(theta)
    grad_gamma = informative * sg * (1.0 - sg) * st * (diff + lambda_sparse)
    grad_gamma *= 1.0 - is_target  # the target's column (its parents are cut)
    grad_gamma.fill_diagonal_(0.0)
    grad_theta = informative * st * (1.0 - st) * sg * diff
    block = _block_of(unintervened, len(gamma), gamma.device)
    rows = torch.maximum(block, is_target[:, None])
    grad_theta = grad_theta * rows
    return grad_gamma, grad_theta - grad_theta.T


def unintervened_block(
    d: int, unintervened: Sequence[int], device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``(d, d)`` 0/1: the pairs of two variables without interventions, on ``device``."""
    block = torch.zeros(d, d, device=device)
    if len(unintervened):
        idx = torch.as_tensor(list(unintervened), device=device)
        block[idx[:, None], idx[None, :]] = 1.0
    return block


def _one_hot(target: int | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``target`` as a one-hot ``(d,)`` vector beside ``like`` (``(d, d)``); a tensor
    is taken to be that vector already."""
    if isinstance(target, torch.Tensor):
        return target
    vector = torch.zeros(like.shape[0], dtype=like.dtype, device=like.device)
    vector[target] = 1.0
    return vector


def _block_of(
    unintervened: Sequence[int] | torch.Tensor, d: int, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """The block of :func:`unintervened_block`, given or built on ``device``."""
    if isinstance(unintervened, torch.Tensor):
        return unintervened
    return unintervened_block(d, unintervened, device)


def theta_update_mask(
    d: int, target: int | torch.Tensor, unintervened: Sequence[int] | torch.Tensor = ()
) -> torch.Tensor:
    """Which θ entries move in this step, and at what relative rate (ENCO Appendix B).

    ``target``: the intervened variable, or its one-hot ``(d,)`` vector (see
    :func:`edge_gradients`). ``unintervened``: the variables without interventions, or
    their :func:`unintervened_block` (the mask is then built on the block's device).
    """
    block = _block_of(unintervened, d)
    is_target = _one_hot(target, block)
    on_target = torch.maximum(is_target[:, None], is_target[None, :])  # its row and column
    mask = torch.maximum(block * UNINTERVENED_RATE, on_target)
    return mask.fill_diagonal_(0.0)


class ThetaAdam:
    """Adam in which only the masked entries (and their moments) advance each step.

    θ is updated only where the current intervention informs it, so each entry keeps
    its own step count for the bias correction (ENCO's ``AdamTheta``).
    """

    def __init__(
        self,
        param: torch.Tensor,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.param, self.lr, self.betas, self.eps = param, lr, betas, eps
        self.steps = torch.zeros_like(param)
        self.m = torch.zeros_like(param)
        self.v = torch.zeros_like(param)

    @torch.no_grad()
    def step(self, grad: torch.Tensor, mask: torch.Tensor) -> None:
        """Advance the entries with ``mask > 0`` by ``mask ·`` Adam's step."""
        b1, b2 = self.betas
        active = mask > 0
        # In place: a step recorded as a CUDA graph must find its state where it was.
        self.steps += active.to(self.steps.dtype)
        self.m.copy_(torch.where(active, b1 * self.m + (1 - b1) * grad, self.m))
        self.v.copy_(torch.where(active, b2 * self.v + (1 - b2) * grad * grad, self.v))
        c1 = (1 - b1**self.steps).masked_fill(self.steps == 0, 1.0)
        c2 = (1 - b2**self.steps).masked_fill(self.steps == 0, 1.0)
        update = (self.m / c1) / (torch.sqrt(self.v / c2) + self.eps)
        self.param -= self.lr * mask * update
