"""ENCO's conditional distributions: one small network per variable, run as one batch.

Lippe et al. (2021), §3.2 and Appendix B: variable ``j``'s conditional
``p(x_j | x_pa(j))`` is an MLP whose input is the sum of a learned embedding per
(input variable, category), masked by the sampled parent set; hidden width 64,
LeakyReLU(0.1), two linear layers, a softmax over ``x_j``'s categories. The ``d``
networks are stacked along a leading axis and evaluated with batched matrix
products, so one call scores every variable under every sampled graph.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["ConditionalNetworks"]

_SLOPE = 0.1  # LeakyReLU slope of ENCO's networks


class ConditionalNetworks(nn.Module):
    """``d`` masked-input MLPs ``p(x_j | mask ⊙ x)``, evaluated in parallel.

    Parameters
    ----------
    cardinalities
        Categories of each variable; inputs and outputs use ``max(cardinalities)``
        slots, and the logits of a variable's unused slots are masked out.
    hidden
        Width of the embedding and of the hidden layer (ENCO: 64).
    generator
        Source of the initial weights (ENCO's initialisation: embeddings uniform with
        standard deviation ``2/sqrt(d)``, Kaiming-uniform linear layers with the fan-in
        of one network, zero biases).
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        hidden: int = 64,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        d, c = len(cardinalities), max(cardinalities)
        self.d, self.c, self.hidden = d, c, hidden
        # embed[j, i, k] is the embedding of "input i has category k" in network j.
        self.embed = nn.Parameter(
            torch.randn((d, d, c, hidden), generator=generator) * (2.0 / math.sqrt(d))
        )
        self.embed_bias = nn.Parameter(torch.zeros(d, 1, hidden))
        bound = math.sqrt(6.0 / hidden)  # Kaiming uniform, fan-in = hidden
        self.w1 = nn.Parameter(_uniform((d, hidden, hidden), bound, generator))
        self.b1 = nn.Parameter(torch.zeros(d, 1, hidden))
        self.w2 = nn.Parameter(_uniform((d, hidden, c), bound, generator))
        self.b2 = nn.Parameter(torch.zeros(d, 1, c))
        unused = torch.arange(c)[None, :] >= torch.tensor(list(cardinalities))[:, None]
        self._scratch: dict[str, torch.Tensor] = {}
        self.register_buffer("logit_mask", torch.where(unused, -torch.inf, 0.0)[:, None, :])

    def _head(self, h: torch.Tensor) -> torch.Tensor:
        """Embedding sums ``(d, n, hidden)`` -> masked logits ``(d, n, c)``."""
        h = F.leaky_relu(h + self.embed_bias, _SLOPE)
        h = F.leaky_relu(torch.baddbmm(self.b1, h, self.w1), _SLOPE)
        return torch.baddbmm(self.b2, h, self.w2) + self.logit_mask

    def nll_per_sample_graph(self, x: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood; each row ``b`` masked by its own graph.

        Distribution fitting (ENCO §3.2): ``parents[b, i, j] = 1`` keeps input ``i`` of
        network ``j`` for row ``b``. The masked embedding sum is one batched product of
        the masked one-hot inputs ``(d, n, d·c)`` with the embedding tables.

        Parameters
        ----------
        x
            ``(n, d)`` int64 codes.
        parents
            ``(n, d, d)`` float 0/1 adjacency samples (zero diagonal).
        """
        n = x.shape[0]
        onehot = F.one_hot(x, self.c).to(parents.dtype)  # (n, d_in, c)
        masked = parents.permute(2, 0, 1).contiguous()[..., None] * onehot  # (d_out, n, d_in, c)
        h = torch.bmm(masked.reshape(self.d, n, self.d * self.c), self._tables())
        logits = self._head(h)  # (d, n, c)
        return F.cross_entropy(logits.reshape(-1, self.c), x.T.reshape(-1))

    def _workspace(self, name: str, numel: int) -> torch.Tensor:
        """A flat float buffer of at least ``numel`` entries on the networks' device,
        kept between calls."""
        buf = self._scratch.get(name)
        if buf is None or buf.numel() < numel or buf.device != self.embed.device:
            buf = torch.empty(numel, device=self.embed.device)
            self._scratch[name] = buf
        return buf

    def _tables(self) -> torch.Tensor:
        """Embedding tables as ``(d_out, d_in·c, hidden)``."""
        return self.embed.reshape(self.d, self.d * self.c, self.hidden)

    @torch.no_grad()
    def nll_per_graph(
        self, x: torch.Tensor, graphs: torch.Tensor, chunk: int = 8, max_gather: int = 2**28
    ) -> torch.Tensor:
        """Each variable's mean negative log-likelihood under each sampled graph.

        Graph fitting (ENCO §3.3): every graph scores the same batch.

        Parameters
        ----------
        x
            ``(n, d)`` int64 codes.
        graphs
            ``(g, d, d)`` float 0/1 adjacency samples.
        chunk
            Graphs evaluated at once (memory: ``chunk · n · d · hidden`` floats).
        max_gather
            Most floats of the gathered input embeddings held at once (``d · n ·
            hidden`` per output variable): above it (large ``d``), the output
            variables are scored a block at a time. Not a result change.

        Returns
        -------
        torch.Tensor
            ``(g, d)``: entry ``[k, j]`` is ``-mean_b log p(x_bj | graph k)``.
        """
        per_output = self.d * x.shape[0] * self.hidden
        block = max(1, min(self.d, max_gather // max(1, per_output)))
        if block >= self.d:
            return self._nll_outputs(x, graphs, chunk, slice(0, self.d))
        parts = [
            self._nll_outputs(x, graphs, chunk, slice(j, min(j + block, self.d)))
            for j in range(0, self.d, block)
        ]
        return torch.cat(parts, dim=1)

    def _nll_outputs(
        self, x: torch.Tensor, graphs: torch.Tensor, chunk: int, outputs: slice
    ) -> torch.Tensor:
        """:meth:`nll_per_graph` for the output variables ``outputs``: ``(g, len)``."""
        n = x.shape[0]
        d_out = outputs.stop - outputs.start
        whole = d_out == self.d
        if whole:  # every output at once: the tensors themselves, no views
            outputs = slice(None)
        inputs = torch.arange(self.d, device=x.device)[:, None]
        # emb[j, i, (b, :)] = embedding of x_bi in network j
        emb = self.embed[outputs, inputs, x.T]  # (d_out, d_in, n, h)
        emb = emb.reshape(d_out, self.d, n * self.hidden)
        labels = x.T[outputs, None, :, None]  # (d_out, 1, n, 1)
        params = (self.embed_bias, self.b1, self.w1, self.b2, self.w2, self.logit_mask)
        if not whole:
            params = tuple(p[outputs] for p in params)
        embed_bias, b1, w1, b2, w2, logit_mask = params
        size = min(chunk, graphs.shape[0]) * n
        h_buf = self._workspace("hidden", d_out * size * self.hidden)
        h2_buf = self._workspace("hidden2", d_out * size * self.hidden)
        out = []
        for start in range(0, graphs.shape[0], chunk):
            part = graphs[start : start + chunk]  # (g, d_in, d_out)
            g = part.shape[0]
            rows = g * n
            # The layers of _head, in place and into reused buffers: this stage is
            # bound by memory traffic, and fresh 10+ MB tensors each step would be
            # mapped and zeroed by the OS every time.
            h = h_buf[: d_out * rows * self.hidden].view(d_out, g, n * self.hidden)
            per_output = part.permute(2, 0, 1)  # (d_out, g, d_in)
            torch.bmm(per_output if whole else per_output[outputs], emb, out=h)
            h = h.view(d_out, rows, self.hidden)
            h += embed_bias
            F.leaky_relu_(h, _SLOPE)
            h2 = h2_buf[: d_out * rows * self.hidden].view(d_out, rows, self.hidden)
            torch.baddbmm(b1, h, w1, out=h2)
            F.leaky_relu_(h2, _SLOPE)
            logits = torch.baddbmm(b2, h2, w2).view(d_out, g, n, self.c)
            logits += logit_mask[:, None]
            picked = logits.gather(-1, labels.expand(-1, g, -1, -1))[..., 0]
            nll = torch.logsumexp(logits, dim=-1) - picked  # (d_out, g, n)
            out.append(nll.mean(dim=-1).T)  # (g, d_out)
        return torch.cat(out)


def _uniform(
    shape: tuple[int, ...], bound: float, generator: torch.Generator | None
) -> torch.Tensor:
    return (torch.rand(shape, generator=generator) * 2.0 - 1.0) * bound
