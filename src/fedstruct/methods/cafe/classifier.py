"""CAFE's causal classifier: a multi-head cosine classifier with drift removal.

The reconstruction of METHODS.md § CAFE (the paper's §V-C to §V-E, eqs. 31-37; the
operators are those of Tang, Huang & Zhang 2020, §3-4):

* the feature vector ``x`` (length ``D``) and every class weight ``w_i`` are cut into
  ``K`` heads of length ``D/K``;
* logits ``z_i = (τ/K) Σ_k ⟨x̂^k, w̃_i^k⟩`` with ``x̂^k = x^k/‖x^k‖`` and, with
  Parameter Calibration, ``w̃_i^k = w_i^k / (‖w_i^k‖ + γ)`` (else ``w̃ = w``); no bias;
* drift removal: given per-head orthonormal drift directions ``u_1..u_m`` and
  strengths ``s_j``, ``x̂^k ← x̂^k - Σ_j s_j ⟨x̂^k, u_j^k⟩ u_j^k``. Feature Calibration
  (training, eq. 34) removes the global and local directions ``{d_g, d_l}`` with
  ``(λ_g, λ_l)``; drift-free inference (eq. 37) removes ``d_g`` alone with ``α``,
  i.e. ``x̂^k - α cos(x^k, d_g^k) d̂_g^k``. One operator serves both.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from fedstruct.errors import ConfigError

__all__ = ["cosine_logits", "drift_basis", "remove_drift", "split_heads", "unit"]

_EPS = 1e-12


def split_heads(x: Tensor, heads: int) -> Tensor:
    """``(..., D)`` -> ``(..., K, D/K)``."""
    return x.reshape(*x.shape[:-1], heads, x.shape[-1] // heads)


def unit(x: Tensor) -> Tensor:
    """``x`` divided by its norm over the last axis (a zero vector stays zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(_EPS)


def drift_basis(directions: Sequence[Tensor], heads: int, tol: float = 1e-6) -> Tensor:
    """Per head, Gram-Schmidt over ``directions`` (each of shape ``(D,)``).

    Returns a ``(K, m, D/K)`` tensor whose rows in each head are orthonormal or zero:
    a direction that is zero in a head, or lies in the span of the earlier ones
    there, contributes a zero row (removing nothing). Order matters: the first
    direction is kept whole (METHODS.md: ``d_g`` first, then ``d_l``).
    """
    rows: list[Tensor] = []
    for d in directions:
        v = split_heads(d.detach().to(torch.float32), heads)  # (K, d)
        for u in rows:
            v = v - (v * u).sum(-1, keepdim=True) * u
        norm = v.norm(dim=-1, keepdim=True)
        rows.append(torch.where(norm > tol, v / norm.clamp_min(_EPS), torch.zeros_like(v)))
    if not rows:
        raise ConfigError("drift_basis needs at least one drift direction; give a list of vectors")
    return torch.stack(rows, dim=1)


def remove_drift(x_unit: Tensor, basis: Tensor, strengths: Sequence[float]) -> Tensor:
    """``x̂^k - Σ_j s_j ⟨x̂^k, u_j^k⟩ u_j^k`` for features ``(N, K, d)`` and a basis
    ``(K, m, d)`` from :func:`drift_basis` (module docstring)."""
    s = torch.as_tensor(list(strengths), dtype=x_unit.dtype, device=x_unit.device)
    coef = torch.einsum("nkd,kmd->nkm", x_unit, basis) * s
    return x_unit - torch.einsum("nkm,kmd->nkd", coef, basis)


def cosine_logits(
    features: Tensor,
    weight: Tensor,
    *,
    heads: int,
    tau: float,
    gamma: float | None,
    basis: Tensor | None = None,
    strengths: Sequence[float] = (),
) -> Tensor:
    """``z_i = (τ/K) Σ_k ⟨x̂^k, w̃_i^k⟩`` (METHODS.md § CAFE; paper eq. 32).

    Parameters
    ----------
    features
        ``(N, D)`` feature vectors.
    weight
        ``(C, D)`` class weights.
    heads
        ``K``.
    tau
        ``τ``.
    gamma
        ``γ`` of Parameter Calibration ``w / (‖w‖ + γ)`` per head; ``None`` uses the
        raw weights (the ablation without PC).
    basis, strengths
        Drift directions to remove from the unit features first
        (:func:`remove_drift`); ``None`` removes nothing.
    """
    x = unit(split_heads(features, heads))
    if basis is not None:
        x = remove_drift(x, basis, strengths)
    w = split_heads(weight, heads)
    if gamma is not None:
        w = w / (w.norm(dim=-1, keepdim=True) + gamma)
    return (tau / heads) * torch.einsum("nkd,ckd->nc", x, w)
