"""ENCO's edge parameters fixed by background knowledge (docs/fedcd.md, docs/knowledge.md).

ENCO learns a DAG over the observed variables (no latent confounder), so each
statement fixes some of ``γ`` (edge existence) and ``θ`` (orientation):

- ``i -> j`` impossible — ``i`` may not be an ancestor of ``j`` (a later tier into an
  earlier one, ``forbidden [i, j]``), ``forbidden_adjacent [i, j]`` (either way), or
  ``required [j, i]`` (a two-cycle) — fixes ``γ_ij`` at :data:`NO_EDGE`: the edge's
  probability ``σ(γ_ij) σ(θ_ij)`` is 0 and no sampled graph holds it.
- ``required [i, j]`` fixes ``γ_ij`` at :data:`SURE` and ``θ_ij = -θ_ji`` at
  :data:`SURE`: the edge ``i -> j`` has probability 1 and is in every sampled graph.
- a pair with exactly one direction impossible (``j -> i`` only) fixes its orientation
  too: ``θ_ji = -θ_ij`` at :data:`SURE`.

Everything else learns as before. The fixed entries are written at the start of
every fit and after every update, and on the server's aggregated beliefs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.knowledge import Knowledge, as_rules, load_knowledge
from fedstruct.methods.fedcd.learner import NO_SELF_LOOP, Beliefs

__all__ = ["NO_EDGE", "SURE", "FixedEdges"]

#: The logit of an impossible edge (as the diagonal's: σ = 0 to float precision).
NO_EDGE = NO_SELF_LOOP
#: The logit of a certain edge or orientation (σ = 1 to float precision).
SURE = -NO_SELF_LOOP


@dataclass(frozen=True, eq=False)
class FixedEdges:
    """Which entries of ``γ`` and ``θ`` the knowledge fixes, and at what values.

    Attributes
    ----------
    gamma_fixed, theta_fixed
        ``(d, d)`` booleans (``theta_fixed`` symmetric).
    gamma, theta
        ``(d, d)`` the fixed values (meaningful where fixed; ``theta`` antisymmetric).
    """

    gamma_fixed: NDArray[np.bool_]
    gamma: NDArray[np.float64]
    theta_fixed: NDArray[np.bool_]
    theta: NDArray[np.float64]

    @classmethod
    def from_knowledge(
        cls, knowledge: Knowledge | str | None, names: Sequence[str]
    ) -> FixedEdges | None:
        """The entries ``knowledge`` fixes over ``names`` (module docstring); ``None``
        without knowledge.

        Raises
        ------
        KnowledgeError, UnknownVariableError
            As :meth:`Knowledge.resolve`.
        """
        rules = as_rules(load_knowledge(knowledge), names)
        if rules is None:
            return None
        impossible = rules.not_ancestor | rules.apart | rules.required.T
        np.fill_diagonal(impossible, False)
        gamma = np.where(rules.required, SURE, NO_EDGE)
        oriented = rules.required | (impossible.T & ~impossible)  # i -> j is the only way
        theta = np.where(oriented, SURE, 0.0) - np.where(oriented.T, SURE, 0.0)
        return cls(impossible | rules.required, gamma, oriented | oriented.T, theta)

    def apply(self, beliefs: Beliefs) -> Beliefs:
        """``beliefs`` with the fixed entries written."""
        return Beliefs(
            np.where(self.gamma_fixed, self.gamma, beliefs.gamma),
            np.where(self.theta_fixed, self.theta, beliefs.theta),
        )

    def clamp(self, gamma: object, theta: object) -> None:
        """Write the fixed entries into ENCO's torch tensors ``γ``, ``θ``, in place."""
        self.clamper(gamma, theta)()

    def clamper(self, gamma: object, theta: object) -> Callable[[], None]:
        """A function that writes the fixed entries into ``γ``, ``θ`` in place.

        The masks and values are copied to the tensors' device once, and the write is
        a ``where`` (no boolean indexing, which would wait for the GPU each step).
        """
        import torch

        pairs = []
        for tensor, fixed, value in (
            (gamma, self.gamma_fixed, self.gamma),
            (theta, self.theta_fixed, self.theta),
        ):
            where = {"device": tensor.device}  # type: ignore[attr-defined]
            mask = torch.as_tensor(fixed, **where)
            values = torch.as_tensor(value, dtype=tensor.dtype, **where)  # type: ignore[attr-defined]
            pairs.append((tensor, mask, values))

        @torch.no_grad()
        def write() -> None:
            for tensor, mask, values in pairs:
                tensor.copy_(torch.where(mask, values, tensor))  # type: ignore[attr-defined]

        return write
