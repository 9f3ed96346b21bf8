"""The shared concept model of F-CMs: an input encoder and one module per node.

F-CMs paper §4.1: ``w_t = (θ_t, φ_t, ψ_t)``, an encoder ``g_θ(x) = z``, one concept
module ``h_φ,j(ĉ_B_j, z)`` per concept of the federation's concept set ``M_t`` and a
task decoder ``f_ψ(ĉ_B_Y, z)``. Which predictions feed which module (``B_j``, ``B_Y``)
is the :class:`ModelSpec`; App. C gives the modules of each instantiation.

Every module reads its inputs through a :class:`BlockLinear`: one weight block per
input node. Architecture adaptation (§4.2.2, E1/E2) therefore only adds or removes
blocks; a block for a new input starts at zero, so the module computes what it did
before (the paper's warm start), and untouched modules keep their parameters exactly
(:func:`adapt`).

Concepts and the task are categorical (a binary concept is a 2-state one); every
module outputs logits over its node's states.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn
from torch.nn import functional as F

from fedstruct.errors import ConfigError, GraphError
from fedstruct.fl.device import host_array
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fcm.config import ARCHITECTURES, FCMConfig

__all__ = [
    "ENCODER",
    "BlockLinear",
    "ConceptModel",
    "ModelSpec",
    "adapt",
    "module_key",
    "node_of",
    "parameter_change",
]

#: Prefix of the encoder's parameters (aggregated by FedAvg over all participants).
ENCODER = "encoder."
_NODES = "nodes."
#: Input name of the encoding ``z`` in a module's :class:`BlockLinear`.
_Z = "·z"
_SLOPE = 0.01
#: Parameters that weight one input node of a module (zero when the input is new).
_INPUT_BLOCK = re.compile(r"\.(inputs|coefficients)\.(?!·z\.)")


def module_key(name: str) -> str:
    """A node name as a torch module key (torch forbids dots in keys)."""
    return name.replace(".", "·")


def node_of(parameter: str) -> str | None:
    """The node key a parameter name belongs to (``None`` for the encoder)."""
    if not parameter.startswith(_NODES):
        return None
    return parameter[len(_NODES) :].split(".", 1)[0]


@dataclass(frozen=True)
class ModelSpec:
    """Everything that fixes the shared model's architecture at a round.

    Parameters
    ----------
    architecture
        One of :data:`~fedstruct.methods.fcm.config.ARCHITECTURES`.
    task
        The task node ``Y``.
    concepts
        The federation's concept set ``M_t``, in order of first appearance.
    cardinalities
        Number of states of every node (concepts and task).
    parents
        ``B_j`` per node: the nodes whose predictions it reads.
    input_dim
        Width of the inputs ``x``.
    widths
        ``(encoder_hidden, module_width, embedding_size, task_hidden)``.
    """

    architecture: str
    task: str
    concepts: tuple[str, ...]
    cardinalities: Mapping[str, int] = field(repr=False)
    parents: Mapping[str, tuple[str, ...]]
    input_dim: int
    widths: tuple[int, int, int, int] = (64, 8, 8, 16)

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(f"unknown architecture {self.architecture!r}")
        object.__setattr__(self, "concepts", tuple(self.concepts))
        object.__setattr__(
            self, "cardinalities", {n: int(self.cardinalities[n]) for n in self.nodes}
        )
        object.__setattr__(self, "parents", {n: tuple(self.parents.get(n, ())) for n in self.nodes})
        for node, pa in self.parents.items():
            unknown = [p for p in pa if p not in self.cardinalities or p == node]
            if unknown:
                raise GraphError(f"node {node!r} reads {unknown}, which are not other model nodes")
        self.order  # noqa: B018  (raises on a cycle)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Concepts, then the task."""
        return (*self.concepts, self.task)

    @property
    def order(self) -> tuple[str, ...]:
        """The nodes in an order where every node follows the nodes it reads."""
        done: list[str] = []
        remaining = list(self.nodes)
        while remaining:
            ready = [n for n in remaining if all(p in done for p in self.parents[n])]
            if not ready:
                raise GraphError(f"the module inputs among {remaining} form a cycle")
            done.extend(ready)
            remaining = [n for n in remaining if n not in ready]
        return tuple(done)

    @classmethod
    def build(
        cls,
        config: FCMConfig,
        task: str,
        concepts: Sequence[str],
        cardinalities: Mapping[str, int],
        input_dim: int,
        graph: Graph | None = None,
    ) -> ModelSpec:
        """The architecture of ``config.model`` over ``concepts`` (§4.3).

        Bipartite models (CBM, CEM) feed every concept to the task; graph-based ones
        (CGM, C2BM) feed each node its parents in ``graph`` among the model's nodes
        (nodes the graph lacks are roots); the opaque model feeds nothing.
        """
        nodes = (*concepts, task)
        if config.model in ("cbm", "cem"):
            parents = {task: tuple(concepts)}
        elif config.graph_based:
            if graph is None:
                raise ConfigError(f"{config.model} needs a concept graph")
            inside = set(nodes)
            parents = {
                n: tuple(p for p in graph.parents(n) if p in inside)
                for n in nodes
                if n in graph.names
            }
        else:
            parents = {}
        widths = (config.encoder_hidden, config.module_width, config.embedding_size,
                  config.task_hidden)  # fmt: skip
        return cls(config.model, task, tuple(concepts), cardinalities, parents,
                   int(input_dim), widths)  # fmt: skip

    def to_json(self) -> str:
        """The spec as a JSON string (what a broadcast message carries)."""
        return json.dumps(
            {
                "architecture": self.architecture,
                "task": self.task,
                "concepts": list(self.concepts),
                "cardinalities": dict(self.cardinalities),
                "parents": {n: list(p) for n, p in self.parents.items()},
                "input_dim": self.input_dim,
                "widths": list(self.widths),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        """Inverse of :meth:`to_json`."""
        d = json.loads(text)
        return cls(
            d["architecture"],
            d["task"],
            tuple(d["concepts"]),
            d["cardinalities"],
            {n: tuple(p) for n, p in d["parents"].items()},
            int(d["input_dim"]),
            tuple(d["widths"]),  # type: ignore[arg-type]
        )


class BlockLinear(nn.Module):
    """``y = b + Σ_i W_i x_i`` with one weight block per named input.

    Adding an input adds a block; :func:`adapt` starts it at zero so the layer's
    output is unchanged (§4.2.2, warm start).
    """

    def __init__(self, inputs: Mapping[str, int], out_features: int) -> None:
        super().__init__()
        self.inputs = nn.ModuleDict(
            {module_key(n): nn.Linear(d, out_features, bias=False) for n, d in inputs.items()}
        )
        # The bias, as a linear map of a constant 1 (so DP-SGD's per-sample gradients
        # cover it like any linear layer).
        self.offset = nn.Linear(1, out_features, bias=False)
        nn.init.zeros_(self.offset.weight)

    def forward(self, parts: Mapping[str, torch.Tensor], like: torch.Tensor) -> torch.Tensor:
        """``parts``: input name (module key) -> tensor; ``like``: any ``(n, ...)`` tensor."""
        out = self.offset(like.new_ones(like.shape[0], 1))
        for name, block in self.inputs.items():
            out = out + block(parts[name])
        return out


def _leaky(x: torch.Tensor) -> torch.Tensor:
    return F.leaky_relu(x, _SLOPE)


class _Node(nn.Module):
    """One node's module. ``forward(z, parents) -> (logits, aux)`` maps the encoding
    and the parents' outputs (by module key) to logits over the node's ``k`` states;
    :meth:`represent` gives what its children read."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def represent(self, probs: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """What children read: the state probabilities (CBM, C2BM, opaque)."""
        return probs


class _Head(_Node):
    """A concept predicted from the encoding alone: ``z -> width -> k`` (CBM, OpaqNN)."""

    def __init__(self, hidden: int, width: int, k: int) -> None:
        super().__init__(k)
        self.hidden = nn.Linear(hidden, width)
        self.out = nn.Linear(width, k)

    def forward(self, z, parents):
        return self.out(_leaky(self.hidden(z))), None


class _Decoder(_Node):
    """The bipartite task decoder: an MLP over the concatenated concept outputs (App. C)."""

    def __init__(self, inputs: Mapping[str, int], width: int, k: int) -> None:
        super().__init__(k)
        self.mix = BlockLinear(inputs, width)
        self.out = nn.Linear(width, k)

    def forward(self, z, parents):
        return self.out(_leaky(self.mix(parents, z))), None


class _Embedded(_Node):
    """CEM's concept embeddings (Espinosa Zarlenga et al. 2022; App. C).

    One embedding per state, ``e_s = φ_s(z) ∈ R^r``; the state scores come from all
    of them; children read the mixture ``Σ_s p_s e_s``. For a binary concept this is
    CEM's ``(ĉ⁺, ĉ⁻)`` pair with ``p̂ = σ(W_s[ĉ⁺, ĉ⁻] + b_s)``; ``k > 2`` states
    generalise it with a softmax (our choice, docs/fcm.md).
    """

    def __init__(self, hidden: int, size: int, k: int) -> None:
        super().__init__(k)
        self.size = size
        self.states = nn.Linear(hidden, k * size)
        self.score = nn.Linear(k * size, k)

    def embeddings(self, z: torch.Tensor) -> torch.Tensor:
        return _leaky(self.states(z))

    def forward(self, z, parents):
        e = self.embeddings(z)
        return self.score(e), e

    def represent(self, probs, aux):
        e = aux.view(-1, self.k, self.size)  # type: ignore[union-attr]
        return torch.einsum("ns,nsr->nr", probs, e)


class _GraphNode(_Node):
    """A CGM node (Dominici et al. 2024; App. C): ``ĉ_j = h_j(c̃_PA(j), z)``.

    Its logits come from an MLP over ``z`` and the parents' mixed embeddings. A node
    that other nodes read also has CEM-style state embeddings from ``z``, and its
    children read their mixture under its predicted (or intervened) states; a node
    nobody reads has none (they would never receive a gradient).
    """

    def __init__(
        self, hidden: int, size: int, width: int, parents: Sequence[str], k: int, read: bool
    ) -> None:
        super().__init__(k)
        self.size = size
        self.mix = BlockLinear({_Z: hidden, **dict.fromkeys(parents, size)}, width)
        self.out = nn.Linear(width, k)
        self.states = nn.Linear(hidden, k * size) if read else None

    def forward(self, z, parents):
        logits = self.out(_leaky(self.mix({module_key(_Z): z, **parents}, z)))
        return logits, (_leaky(self.states(z)) if self.states is not None else None)

    def represent(self, probs, aux):
        if aux is None:
            return probs
        return torch.einsum("ns,nsr->nr", probs, aux.view(-1, self.k, self.size))


class _Mechanism(_Node):
    """A C2BM node (De Felice et al. 2025; App. C).

    An exogenous embedding ``u_V = LeakyReLU(W z)`` gives the root logits ``b(u_V)``;
    a hypernetwork block per parent gives per-sample coefficients ``θ_V,p(u_V)``
    (``k_V × k_p``), and ``logits = b(u_V) + Σ_p θ_V,p(u_V) p̂_p``: linear in the
    parents' predictions, then a softmax. A root is the case with no parents.
    """

    def __init__(self, hidden: int, width: int, parents: Mapping[str, int], k: int) -> None:
        super().__init__(k)
        self.exogenous = nn.Linear(hidden, width)
        self.root = nn.Linear(width, k)
        self.coefficients = nn.ModuleDict(
            {module_key(p): nn.Linear(width, k * kp) for p, kp in parents.items()}
        )
        self.parent_states = {module_key(p): kp for p, kp in parents.items()}

    def forward(self, z, parents):
        u = _leaky(self.exogenous(z))
        logits = self.root(u)
        for name, block in self.coefficients.items():
            theta = block(u).view(-1, self.k, self.parent_states[name])
            logits = logits + torch.bmm(theta, parents[name].unsqueeze(-1)).squeeze(-1)
        return logits, None


class ConceptModel(nn.Module):
    """The shared concept model for a :class:`ModelSpec` (§4.1, App. C).

    Parameters
    ----------
    spec
        The architecture.
    seed
        Seed of the initial parameters (drawn without touching torch's global RNG).
    """

    def __init__(self, spec: ModelSpec, seed: int = 0) -> None:
        super().__init__()
        self.spec = spec
        hidden = spec.widths[0]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.encoder = nn.Sequential(
                nn.Linear(spec.input_dim, hidden), nn.LeakyReLU(_SLOPE),
                nn.Linear(hidden, hidden), nn.LeakyReLU(_SLOPE),
            )  # fmt: skip
            self.nodes = nn.ModuleDict({module_key(n): self._node(n) for n in spec.nodes})

    def _node(self, name: str) -> _Node:
        spec = self.spec
        hidden, width, size, task_width = spec.widths
        k = spec.cardinalities[name]
        parents = spec.parents[name]
        arch = spec.architecture
        if arch == "opaque" or (arch in ("cbm", "cem") and name != spec.task):
            return _Embedded(hidden, size, k) if arch == "cem" else _Head(hidden, width, k)
        if arch == "cbm":
            return _Decoder({p: spec.cardinalities[p] for p in parents}, task_width, k)
        if arch == "cem":
            return _Decoder(dict.fromkeys(parents, size), task_width, k)
        if arch == "cgm":
            read = any(name in spec.parents[m] for m in spec.nodes)
            return _GraphNode(hidden, size, width, parents, k, read)
        return _Mechanism(hidden, width, {p: spec.cardinalities[p] for p in parents}, k)

    def forward(
        self,
        x: torch.Tensor,
        truth: torch.Tensor | None = None,
        intervene: torch.Tensor | None = None,
    ) -> list[torch.Tensor]:
        """Logits of every node (in ``spec.nodes`` order).

        Parameters
        ----------
        x
            ``(n, input_dim)`` inputs.
        truth, intervene
            Optional ``(n, len(spec.nodes))`` label codes and a boolean mask: where
            the mask is set (and the label known, ``>= 0``), the node's predicted
            state probabilities are replaced by its label for the nodes that read it
            (a concept intervention, §5.2). The node's own logits are unchanged.
        """
        logits, _ = self._propagate(x, truth, intervene)
        return [logits[n] for n in self.spec.nodes]

    def representations(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """What each node passes to the modules that read it, without interventions:
        its state probabilities (CBM, C2BM, the opaque model's side outputs, a CGM
        node that nobody reads) or the mixture of its state embeddings under them
        (CEM, a CGM node that is read). The concept representations of CAS, OIS and
        NIS (:mod:`~fedstruct.methods.fcm.concept_metrics`)."""
        return self._propagate(x, None, None)[1]

    def _propagate(
        self, x: torch.Tensor, truth: torch.Tensor | None, intervene: torch.Tensor | None
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """Every node's logits and what its readers read, in the spec's order."""
        spec = self.spec
        z = self.encoder(x)
        column = {n: i for i, n in enumerate(spec.nodes)}
        reads: dict[str, torch.Tensor] = {}
        logits: dict[str, torch.Tensor] = {}
        for name in spec.order:
            key = module_key(name)
            node = self.nodes[key]
            out, aux = node(z, {module_key(p): reads[p] for p in spec.parents[name]})
            logits[name] = out
            probs = torch.softmax(out, dim=-1)
            if truth is not None and intervene is not None:
                c = column[name]
                hit = intervene[:, c] & (truth[:, c] >= 0)
                if bool(hit.any()):
                    onehot = F.one_hot(truth[:, c].clamp(min=0), node.k).to(probs.dtype)
                    probs = torch.where(hit[:, None], onehot, probs)
            reads[name] = node.represent(probs, aux)
        return logits, reads

    def node_parameters(self, name: str) -> list[nn.Parameter]:
        """The parameters of ``name``'s module."""
        return list(self.nodes[module_key(name)].parameters())

    def state_arrays(self) -> dict[str, NDArray[np.float32]]:
        """Every parameter as a numpy array, by name."""
        return {k: host_array(v, f"parameter {k!r}") for k, v in self.state_dict().items()}

    def load_arrays(self, arrays: Mapping[str, NDArray]) -> None:
        """Set the parameters named in ``arrays`` (others keep their values)."""
        state = self.state_dict()
        unknown = [k for k in arrays if k not in state]
        if unknown:
            raise ConfigError(f"parameters {unknown[:3]} do not belong to this architecture")
        with torch.no_grad():
            for k, v in arrays.items():
                state[k].copy_(torch.as_tensor(np.asarray(v), dtype=state[k].dtype))


def adapt(
    old: Mapping[str, NDArray], old_spec: ModelSpec | None, spec: ModelSpec, seed: int
) -> dict[str, NDArray[np.float32]]:
    """The parameters of ``spec``'s model, warm-started from ``old`` (§4.2.2).

    * (E1) a node new to the model gets a freshly initialised module (drawn once,
      here, from ``seed``: the server creates it and broadcasts it);
    * (E2) a module whose inputs changed keeps every parameter it had; the weight
      block of a new input starts at zero, so the module computes what it computed
      before; the block of a removed input is dropped (a CGM node that gains its
      first reader also gains state embeddings, freshly drawn: nothing read them
      before, so no prediction changes);
    * every other module, and the encoder, keeps its parameters exactly.
    """
    fresh = ConceptModel(spec, seed).state_arrays()
    if old_spec is None:
        return fresh
    out: dict[str, NDArray[np.float32]] = {}
    for name, value in fresh.items():
        if name in old:
            out[name] = np.array(old[name], dtype=np.float32, copy=True)
        elif _INPUT_BLOCK.search(name):
            out[name] = np.zeros_like(value)
        else:
            out[name] = value
    return out


def parameter_change(
    before: Mapping[str, NDArray], after: Mapping[str, NDArray]
) -> dict[str, float]:
    """How much of the model a stretch of training changed (§5.3, App. E.3).

    Returns
    -------
    dict
        ``params_growth``: parameters added, as a share of the final count (what the
        reference code reports as "fraction changed"); ``params_changed_fraction``:
        share of the final parameter values that differ from ``before`` (new ones
        count as changed).
    """
    total = sum(int(np.size(v)) for v in after.values())
    if total == 0:
        return {"params_growth": 0.0, "params_changed_fraction": 0.0}
    added = sum(int(np.size(v)) for k, v in after.items() if k not in before)
    changed = added + sum(
        int(np.count_nonzero(np.asarray(v) != np.asarray(before[k])))
        for k, v in after.items()
        if k in before
    )
    return {"params_growth": added / total, "params_changed_fraction": changed / total}
