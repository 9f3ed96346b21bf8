"""Drawing samples from an NGM (the master's only window on a client model, §2.3).

Two samplers:

* ``"gibbs"`` (default): a Gibbs-style sampler. Chains start from the marginals;
  each sweep redraws every variable from the model's conditional given all others:
  a real variable as its prediction plus Gaussian noise with the variable's
  training residual standard deviation, an ordinal from the distribution over its
  levels whose mean is the prediction (its marginal level frequencies tilted,
  :mod:`~fedstruct.methods.fedngm.levels`, with the model's calibrated scale), a
  categorical one from the softmax of its logits. The variables being redrawn
  enter the network at their marginal means, so a residual self-path (the penalty
  makes it small, not zero) cannot feed a variable's old value into its new one.
  Variables the graph leaves
  non-adjacent are conditionally independent given the rest, so a colour class of
  a greedy graph colouring is redrawn at once (chromatic Gibbs, Gonzalez et al.
  2011). METHODS.md: this reproduces the data covariance within a few percent.
* ``"ordering"``: the NGM paper's sampler (Shrivastava & Chajewska 2023, §3.3): pick
  a random start variable and draw it uniformly from its range, visit the others in
  breadth-first order over the graph, and set each to the model's inference given
  the variables drawn so far, with small multiplicative noise (1-5 %). Kept as an
  option; it distorts variances (METHODS.md measured 0.14x to 4.6x).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.methods.fedngm.inference import infer
from fedstruct.methods.fedngm.levels import draw_levels, level_base
from fedstruct.methods.fedngm.network import NeuralView
from fedstruct.methods.fedngm.schema import Schema, snap
from fedstruct.methods.fedngm.train import mask_variables

__all__ = ["colour_classes", "gibbs_sample", "ordering_sample"]


def colour_classes(adjacency: NDArray[np.bool_]) -> list[list[int]]:
    """Variables grouped so that no two in a group are adjacent (greedy colouring,
    largest degree first; networkx)."""
    import networkx as nx  # here: a client that never samples does not load it

    a = np.asarray(adjacency, dtype=bool)
    graph = nx.from_numpy_array((a | a.T).astype(int))
    colours = nx.greedy_color(graph, strategy="largest_first")
    classes: dict[int, list[int]] = {}
    for node, colour in sorted(colours.items()):
        classes.setdefault(colour, []).append(int(node))
    return [classes[c] for c in sorted(classes)]


def _draw_marginal(schema: Schema, n: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """Encoded rows drawn independently from each variable's marginal (standard normal
    on the standardised scale for real variables)."""
    x = np.zeros((n, schema.n_columns), dtype=np.float32)
    for spec, g in zip(schema.variables, schema.groups, strict=True):
        if spec.is_categorical:
            k = rng.choice(len(spec.categories), size=n, p=np.asarray(spec.frequencies))
            x[np.arange(n), g.start + k] = 1.0
        elif spec.kind == "ordinal" and len(spec.frequencies) == len(spec.levels) > 0:
            p = np.asarray(spec.frequencies) / np.sum(spec.frequencies)
            x[:, g.start] = spec.encoded_levels[rng.choice(len(p), size=n, p=p)]
        else:
            x[:, g.start] = _snap_std(rng.standard_normal(n), spec)
    return x


def _snap_std(values: NDArray, spec) -> NDArray:
    """Standardised values snapped to an ordinal's levels (others unchanged)."""
    if spec.kind != "ordinal" or not spec.levels:
        return values
    return snap(values, spec.encoded_levels)


def _put_categories(x: NDArray[np.float32], g: slice, p: NDArray, rng: np.random.Generator) -> None:
    """Set one-hot group ``g`` of ``x`` to a category drawn per row from ``p``."""
    n = len(x)
    u = rng.random((n, 1))
    k = np.minimum((p.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1)
    x[:, g] = 0.0
    x[np.arange(n), g.start + k] = 1.0


def _redraw(
    x: NDArray[np.float32],
    raw: NDArray[np.float32],
    variables: list[int],
    schema: Schema,
    noise: NDArray[np.float32],
    rng: np.random.Generator,
) -> None:
    """Redraw ``variables`` of ``x`` in place from the model's raw outputs."""
    groups = schema.groups
    n = len(x)
    for i in variables:
        spec, g = schema.variables[i], groups[i]
        if spec.is_categorical:
            logits = raw[:, g].astype(np.float64)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            _put_categories(x, g, p / p.sum(axis=1, keepdims=True), rng)
        elif spec.kind == "ordinal" and spec.levels:
            x[:, g.start] = draw_levels(
                raw[:, g.start], spec.encoded_levels, noise[g.start], rng, level_base(spec)
            )
        else:
            x[:, g.start] = raw[:, g.start] + noise[g.start] * rng.standard_normal(n)


def gibbs_sample(
    view: NeuralView,
    schema: Schema,
    adjacency: NDArray[np.bool_],
    residual: NDArray[np.float32],
    n: int,
    *,
    burn_in: int,
    seed: int,
    chromatic: bool = True,
) -> NDArray[np.float32]:
    """``n`` encoded samples: ``n`` independent chains run for ``burn_in`` sweeps.

    Parameters
    ----------
    view, schema, adjacency
        The model and the graph it follows.
    residual
        Per encoded column, the sampler's noise scale
        (:func:`~fedstruct.methods.fedngm.train.residual_std`): a real column's
        residual standard deviation, an ordinal's level-distribution scale.
    n, burn_in, seed
        Number of samples (chains), sweeps per chain, seed.
    chromatic
        Redraw each colour class at once (default) or one variable at a time.
    """
    rng = np.random.default_rng([int(seed), 11])
    x = _draw_marginal(schema, n, rng)
    classes = colour_classes(adjacency) if chromatic else [[i] for i in range(len(schema))]
    with torch.no_grad():
        for _ in range(burn_in):
            for cls in classes:
                raw = view(mask_variables(torch.from_numpy(x), schema, cls)).numpy()
                _redraw(x, raw, cls, schema, residual, rng)
    return x


def _bfs_order(adjacency: NDArray[np.bool_], start: int) -> list[int]:
    """Breadth-first order from ``start``; unreached variables follow in index order."""
    a = np.asarray(adjacency, dtype=bool)
    a = a | a.T
    seen = [start]
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in np.flatnonzero(a[v]):
            if int(w) not in seen:
                seen.append(int(w))
                queue.append(int(w))
    return seen + [v for v in range(len(a)) if v not in seen]


def ordering_sample(
    view: NeuralView,
    schema: Schema,
    adjacency: NDArray[np.bool_],
    n: int,
    *,
    seed: int,
    steps: int = 5,
    noise: tuple[float, float] = (0.01, 0.05),
) -> NDArray[np.float32]:
    """``n`` encoded samples by the NGM paper's ordering sampler (module docstring).

    Samples are drawn in batches that share a start variable; the multiplicative
    noise ``1 ± u`` has ``u`` uniform in ``noise`` with a random sign.
    """
    rng = np.random.default_rng([int(seed), 12])
    v = len(schema)
    starts = rng.integers(v, size=n)
    out = np.zeros((n, schema.n_columns), dtype=np.float32)
    groups = schema.groups
    for s in range(v):
        rows = np.flatnonzero(starts == s)
        if not len(rows):
            continue
        order = _bfs_order(adjacency, s)
        x = schema.initial(len(rows))
        known = np.zeros(schema.n_columns, dtype=bool)
        first = schema.variables[s]
        g = groups[s]
        if first.is_categorical:
            k = rng.integers(len(first.categories), size=len(rows))
            x[:, g] = 0.0
            x[np.arange(len(rows)), g.start + k] = 1.0
        else:
            lo, hi = first.encoded_levels[[0, -1]] if first.levels else (-2.0, 2.0)
            x[:, g.start] = _snap_std(rng.uniform(lo, hi, size=len(rows)), first)
        known[g] = True
        for i in order[1:]:
            x = infer(view, schema, x, known, steps=steps)
            spec, g = schema.variables[i], groups[i]
            if spec.is_categorical:
                p = x[:, g].astype(np.float64)
                _put_categories(x, g, p / p.sum(axis=1, keepdims=True), rng)
            else:
                u = rng.uniform(*noise, size=len(rows)) * rng.choice([-1.0, 1.0], size=len(rows))
                value = spec.unstandardise(x[:, g.start]) * (1.0 + u)
                if spec.transform == "log1p":
                    value = np.maximum(value, 0.0)
                x[:, g.start] = _snap_std(spec.standardise(value), spec)
            known[g] = True
        out[rows] = x
    return out
