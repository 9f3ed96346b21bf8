"""Training a neural view: regression loss plus the structure penalty (eq. 1, 2, 3, 5).

One trainer serves every objective of the paper:

* client NGM, eq. (1): ``‖X - f(X)‖² + λ ‖(Π|W_l|) ⊙ S̄‖₁`` on the client's rows;
* global NGM, eq. (2): the same on samples drawn from the client models, and eq. (3)
  adds ``γ ‖X_pub - f(X_pub)‖²`` on public data (several weighted sources);
* NGR, eq. (5): no graph; ``S̄`` is the identity (no self-dependence) and an L1 term
  on the symmetrised path matrix, scaled by ``1/V²`` (METHODS.md), makes it sparse;
* stitching, §2.4: the same loss with the global weights frozen
  (:meth:`NeuralView.freeze`).

Mixed data (NGM-generic): the squared error of a continuous column, the cross-entropy
of a one-hot group; each variable's mean loss counts once, averaged over variables.

Missing entries (a client's rows read with ``missing="keep"``): eq. (1)'s regression
``‖X - f(X)‖²`` is summed over the observed entries only, so each variable's loss is
its mean over the rows where it is observed (:func:`regression_loss` with
``observed``); the input of a missing entry is its variable's marginal mean, as for a
variable being predicted (0 after standardisation, the category frequencies of a
one-hot group: :meth:`Schema.initial`, :func:`fill_missing`). It is a constant, so no
gradient flows from it, and no loss is computed on it. Without missing entries this
is exactly the unmasked objective (the same code path runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.fl.device import resolve_device
from fedstruct.methods.fedngm.levels import level_base, level_scale
from fedstruct.methods.fedngm.network import NeuralView, group_matrix, variable_paths
from fedstruct.methods.fedngm.schema import Schema

__all__ = [
    "PREDICTION_BINS",
    "QUANTILE_LEVELS",
    "ROWS_PER_QUANTILE",
    "Objective",
    "Structure",
    "batch_rows",
    "conditional_targets",
    "fill_missing",
    "fit_view",
    "mask_variables",
    "neighbour_mask",
    "output_transform",
    "regression_loss",
    "residual_quantiles",
    "residual_std",
]

#: Probability levels of the residual quantiles an NGM keeps (:func:`residual_quantiles`):
#: the midpoints of 21 equal-probability bins, so their average is the residual mean
#: and the middle one its median; coarse enough to reveal no single residual.
QUANTILE_LEVELS = (np.arange(21) + 0.5) / 21
#: Bins of the prediction within which :func:`residual_quantiles` summarises residuals.
PREDICTION_BINS = 5
#: A bin's residual quantiles are kept only when each level summarises at least this
#: many residuals (105 rows for 21 levels); otherwise the column's overall quantiles.
ROWS_PER_QUANTILE = 5


@dataclass(frozen=True)
class Structure:
    """The structure term of an objective.

    Parameters
    ----------
    forbidden
        ``(V, V)`` weights ``S̄`` of variable-level paths to penalise: ``1 - A`` with a
        unit diagonal for an NGM (eq. 1), the identity for an NGR (eq. 4-5).
    penalty
        ``λ`` on ``‖P ⊙ S̄‖₁``.
    sparsity
        NGR's weight on ``‖sym(P)‖₁`` off the diagonal, scaled by ``1/V²`` (eq. 5).
    """

    forbidden: NDArray[np.float32]
    penalty: float
    sparsity: float = 0.0

    @classmethod
    def for_graph(
        cls, adjacency: NDArray[np.bool_], penalty: float, self_weight: float = 1.0
    ) -> Structure:
        """NGM: penalise every path between non-adjacent variables and to itself; a
        self-path weighs ``self_weight`` times more (``S̄``'s diagonal, eq. 1)."""
        a = np.asarray(adjacency, dtype=bool)
        sym = a | a.T
        forbidden = (~sym).astype(np.float32)
        np.fill_diagonal(forbidden, float(self_weight))
        return cls(forbidden, float(penalty))

    @classmethod
    def revealer(cls, n_variables: int, penalty: float, sparsity: float) -> Structure:
        """NGR: no self-dependence (eq. 4's diagonal constraint) plus path sparsity."""
        return cls(np.eye(n_variables, dtype=np.float32), float(penalty), float(sparsity))

    def value(self, paths: torch.Tensor) -> torch.Tensor:
        """The structure term for the variable-level path matrix ``paths``."""
        term = self.penalty * (paths * torch.from_numpy(self.forbidden).to(paths.device)).sum()
        if self.sparsity:
            v = paths.shape[0]
            sym = 0.5 * (paths + paths.T)
            off = sym.sum() - torch.diagonal(sym).sum()
            term = term + self.sparsity * off / (v * v)
        return term


@dataclass(frozen=True)
class Objective:
    """What :func:`fit_view` minimises: weighted regression sources plus a structure.

    A source is ``(x, weight)``, whose rows are both the inputs and the targets of the
    regression (eq. 1-3), or ``(x, weight, target)`` with separate targets of the same
    shape (soft targets for the distillation, :func:`conditional_targets`).
    """

    sources: Sequence[tuple]
    structure: Structure


class _Columns:
    """Index sets of a schema's encoded columns, for the losses."""

    def __init__(self, schema: Schema) -> None:
        self.continuous = torch.tensor(
            [g.start for s, g in zip(schema.variables, schema.groups, strict=True)
             if not s.is_categorical], dtype=torch.long,
        )  # fmt: skip
        self.categorical = [
            g for s, g in zip(schema.variables, schema.groups, strict=True) if s.is_categorical
        ]
        #: Variable indices in the order of ``regression_loss(..., per_variable=True)``.
        self.order = [i for i, s in enumerate(schema.variables) if not s.is_categorical] + [
            i for i, s in enumerate(schema.variables) if s.is_categorical
        ]


def output_transform(raw: torch.Tensor, schema: Schema) -> torch.Tensor:
    """Raw outputs to encoded values: continuous as they are, each one-hot group's
    logits to probabilities (softmax)."""
    out = raw.clone()
    for spec, g in zip(schema.variables, schema.groups, strict=True):
        if spec.is_categorical:
            out[:, g] = torch.softmax(raw[:, g], dim=1)
    return out


def fill_missing(x: NDArray, schema: Schema) -> tuple[NDArray[np.float32], NDArray | None]:
    """``x`` (encoded, NaN where missing) with every missing entry set to its
    variable's marginal mean (:meth:`Schema.initial`: 0 for a standardised continuous
    column, the category frequencies for a one-hot group), and the ``(n, n_columns)``
    boolean mask of observed entries; ``(x, None)`` when nothing is missing."""
    x = np.asarray(x, dtype=np.float32)
    gaps = np.isnan(x)
    if not gaps.any():
        return x, None
    return np.where(gaps, schema.initial(len(x)), x).astype(np.float32), ~gaps


def neighbour_mask(
    observed: NDArray[np.bool_], schema: Schema, adjacency: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """The ``"neighbours"`` loss mask (FedNGMConfig's ``missing_loss``): a variable's
    entries count on the rows where it and all its neighbours in ``adjacency`` are
    observed. Its NGM prediction depends on its neighbours only (eq. 1's graph), so
    these rows estimate its conditional from observed inputs: under MCAR an unbiased
    available-case estimate (Little & Rubin 2002, §3.2)."""
    starts = [g.start for g in schema.groups]
    present = observed[:, starts]
    adj = np.asarray(adjacency, dtype=bool)
    adj = adj | adj.T
    counts = np.zeros(present.shape, dtype=bool)
    for i in range(len(starts)):
        counts[:, i] = present[:, i] & present[:, adj[i]].all(axis=1)
    return counts[:, schema.column_owner()]


def _masked_mean(values: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """Per column, the mean of ``values`` over its observed rows (0 if none)."""
    weights = observed.to(values.dtype)
    return (values * weights).sum(dim=0) / weights.sum(dim=0).clamp(min=1.0)


def regression_loss(
    raw: torch.Tensor,
    target: torch.Tensor,
    cols: _Columns,
    per_variable: bool = False,
    observed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean over variables of each variable's loss (squared error or cross-entropy).

    With ``observed`` (an ``(n, n_columns)`` mask, module docstring), a variable's
    loss is its mean over the rows where it is observed: eq. (1)'s squared error
    summed over observed entries only, each variable weighted as without gaps.
    """
    losses = []
    if len(cols.continuous):
        diff = raw[:, cols.continuous] - target[:, cols.continuous]
        if observed is None:
            losses.append((diff**2).mean(dim=0))
        else:
            losses.append(_masked_mean(diff**2, observed[:, cols.continuous]))
    for g in cols.categorical:
        logp = torch.log_softmax(raw[:, g], dim=1)
        row_loss = -(target[:, g] * logp).sum(dim=1)
        if observed is None:
            losses.append(row_loss.mean().reshape(1))
        else:
            losses.append(_masked_mean(row_loss[:, None], observed[:, g.start : g.start + 1]))
    stacked = torch.cat(losses)
    return stacked if per_variable else stacked.mean()


def batch_rows(n_rows: int, batch_size: int, min_batches: int = 1) -> int:
    """Rows per mini-batch: ``batch_size``, or fewer when ``n_rows`` would fill fewer
    than ``min_batches`` batches of it, so that an epoch still makes ``min_batches``
    Adam steps (``ceil(n_rows / min_batches)`` rows each; at least 1).

    Training length is counted in epochs; without this, a small table's model takes
    one step per epoch (FedNGMConfig's ``min_batches``).
    """
    if n_rows <= 0 or -(-n_rows // batch_size) >= min_batches:
        return int(batch_size)
    return max(1, -(-n_rows // min_batches))


def fit_view(
    view: NeuralView,
    schema: Schema,
    objective: Objective,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    validation_fraction: float,
    seed: int,
    min_batches: int = 1,
    loss_mask: NDArray[np.bool_] | None = None,
    device: str = "cpu",
) -> dict[str, float]:
    """Train ``view`` in place with Adam on ``objective``; keep the best epoch.

    Each epoch visits every row of the first source once in shuffled mini-batches;
    other sources (eq. 3's public data) contribute a mini-batch of their own rows,
    drawn in step, weighted by their weight. Batches hold :func:`batch_rows` rows
    (``batch_size``, or fewer so that an epoch makes ``min_batches`` steps). A
    ``validation_fraction`` of every
    source is held out; the weights of the epoch with the lowest held-out objective
    are kept. Missing entries (NaN) of a source enter at their marginal means and
    count in no loss (:func:`fill_missing`, :func:`regression_loss`); ``loss_mask``
    (``(n, n_columns)``) replaces the first source's observed mask, to count fewer
    rows in a variable's loss (:func:`neighbour_mask`). ``device`` (a device setting,
    :func:`~fedstruct.fl.device.resolve_device`) is where the epochs run; the view is
    back on the CPU when this returns (sampling and inference run there).

    Returns
    -------
    dict
        ``loss`` (held-out regression loss of the first source at the kept epoch, or
        the training loss without a hold-out), ``structure`` (the structure term),
        ``epochs`` (epochs run) and ``best_epoch``.
    """
    where = resolve_device(device)
    view.to(where)
    gen = torch.Generator().manual_seed(int(seed))
    rng = np.random.default_rng([int(seed), 7])
    cols = _Columns(schema)
    groups = group_matrix(schema.widths).to(where)
    train_sets, held_sets, weights, masks = [], [], [], []
    for k, source in enumerate(objective.sources):
        filled, observed = fill_missing(source[0], schema)
        if k == 0 and observed is not None and loss_mask is not None:
            observed = np.asarray(loss_mask, dtype=bool)
        x = torch.as_tensor(filled, device=where)
        t = (
            x
            if len(source) < 3
            else torch.as_tensor(np.asarray(source[2], np.float32), device=where)
        )
        order = torch.from_numpy(rng.permutation(len(x))).to(where)
        n_val = round(validation_fraction * len(x))
        n_val = n_val if 0 < n_val < len(x) - 1 else 0
        held_sets.append((x[order[:n_val]], t[order[:n_val]]))
        train_sets.append((x[order[n_val:]], t[order[n_val:]]))
        weights.append(float(source[1]))
        m = None if observed is None else torch.from_numpy(observed).to(where)
        masks.append((None, None) if m is None else (m[order[:n_val]], m[order[n_val:]]))
    params = [p for p in view.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=learning_rate)
    main = train_sets[0][0]
    batch_size = batch_rows(len(main), batch_size, min_batches)
    n_batches = max(1, int(np.ceil(len(main) / batch_size)))

    def objective_value(
        sets: list[tuple[torch.Tensor, torch.Tensor]], side: int
    ) -> tuple[float, float]:
        with torch.no_grad():
            reg = [
                regression_loss(view(x), t, cols, observed=m[side])
                if len(x)
                else torch.zeros((), device=where)
                for (x, t), m in zip(sets, masks, strict=True)
            ]
            total = sum(w * r for w, r in zip(weights, reg, strict=True))
            struct = objective.structure.value(variable_paths(view, groups))
        return float(total + struct), float(reg[0])

    has_held = len(held_sets[0]) > 0
    best = (np.inf, None, 0, 0.0)
    epoch = 0
    for epoch in range(1, epochs + 1):
        perms = [torch.randperm(len(x), generator=gen).to(where) for x, _ in train_sets]
        for b in range(n_batches):
            opt.zero_grad()
            loss = torch.zeros((), device=where)
            for k, ((x, t), w) in enumerate(zip(train_sets, weights, strict=True)):
                if not len(x):
                    continue
                if k == 0:
                    idx = perms[0][b * batch_size : (b + 1) * batch_size]
                else:
                    start = (b * batch_size) % len(x)
                    idx = perms[k][start : start + batch_size]
                m = masks[k][1]
                observed = None if m is None else m[idx]
                loss = loss + w * regression_loss(view(x[idx]), t[idx], cols, observed=observed)
            loss = loss + objective.structure.value(variable_paths(view, groups))
            loss.backward()
            opt.step()
        score, reg = objective_value(*((held_sets, 0) if has_held else (train_sets, 1)))
        if score < best[0]:
            best = (score, {k: v.clone() for k, v in view.state_dict().items()}, epoch, reg)
    if best[1] is not None:
        view.load_state_dict(best[1])
    with torch.no_grad():
        struct = float(objective.structure.value(variable_paths(view, groups)))
    view.to("cpu")
    return {"loss": best[3], "structure": struct, "epochs": epoch, "best_epoch": best[2]}


def mask_variables(x: torch.Tensor, schema: Schema, variables: Sequence[int]) -> torch.Tensor:
    """``x`` with ``variables`` reset to their marginal means (:meth:`Schema.initial`):
    the input for predicting them from the other variables only."""
    out = x.clone()
    init = torch.from_numpy(schema.initial(1))[0]
    for i in variables:
        g = schema.groups[i]
        out[:, g] = init[g]
    return out


def conditional_targets(
    view: NeuralView, schema: Schema, x: NDArray[np.float32], classes: Sequence[Sequence[int]]
) -> NDArray[np.float32]:
    """Per row of ``x`` and variable, the model's conditional expectation given the
    other variables: a continuous variable's prediction, a categorical one's softmax
    probabilities (each class of ``classes`` predicted with its own inputs reset to
    their means, as the Gibbs sampler predicts it).

    As distillation targets for samples ``x`` of this model (``soft_targets``), they
    give the expected regression loss of eq. (2) over the model's conditional draw, up
    to a constant: squared error ``E(x_i - f)² = (E x_i - f)² + Var x_i``,
    cross-entropy ``E[-log f_{x_i}] = -Σ_c p_c log f_c``. The minimiser is the same,
    the gradient noise of the drawn values is gone (Rao-Blackwellisation; the
    soft targets of Hinton, Vinyals & Dean 2015).
    """
    out = np.array(x, dtype=np.float32, copy=True)
    xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
    with torch.no_grad():
        for cls in classes:
            pred = output_transform(view(mask_variables(xt, schema, cls)), schema).numpy()
            for i in cls:
                g = schema.groups[i]
                out[:, g] = pred[:, g]
    return out


def residual_std(
    view: NeuralView,
    schema: Schema,
    x: NDArray[np.float32],
    classes: Sequence[Sequence[int]],
    observed: NDArray[np.bool_] | None = None,
) -> NDArray:
    """Per encoded column, the noise scale of the Gibbs sampler (0 for one-hot
    columns): for a real variable the standard deviation of ``x - f(x)``, the
    residual noise the sampler adds; for an ordinal with levels the scale of its
    level distribution, calibrated so that its average variance is the mean squared
    residual (:func:`~fedstruct.methods.fedngm.levels.level_scale`).

    Each variable is predicted with the inputs of its class in ``classes`` (mutually
    non-adjacent variables, :func:`~fedstruct.methods.fedngm.sampling.colour_classes`)
    reset to their means, exactly as the sampler and inference predict it. With
    ``observed`` (``x`` filled by :func:`fill_missing`), a column's residuals are
    those of the rows where it is observed.
    """
    out = np.zeros(schema.n_columns, dtype=np.float32)
    xt = torch.as_tensor(x)
    with torch.no_grad():
        for cls in classes:
            pred = view(mask_variables(xt, schema, cls))
            for i in cls:
                spec, g = schema.variables[i], schema.groups[i]
                rows = slice(None) if observed is None else torch.from_numpy(observed[:, g.start])
                if spec.kind == "ordinal" and spec.levels:
                    out[g.start] = level_scale(
                        pred[rows, g.start].numpy(), xt[rows, g.start].numpy(),
                        spec.encoded_levels, level_base(spec),
                    )  # fmt: skip
                elif not spec.is_categorical:
                    diff = pred[rows, g.start] - xt[rows, g.start]
                    out[g.start] = float(diff.std(unbiased=False)) if len(diff) else 0.0
    return out


def residual_quantiles(
    view: NeuralView,
    schema: Schema,
    x: NDArray[np.float32],
    classes: Sequence[Sequence[int]],
    observed: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Each real column's residual ``x - f(x)`` (encoded scale) summarised by quantiles
    within bins of the prediction ``f``, predicted as :func:`conditional_targets`
    predicts.

    Returns
    -------
    bin_edges
        ``(PREDICTION_BINS - 1, n_columns)``: the prediction's quantiles that cut the
        rows into :data:`PREDICTION_BINS` equal-count bins.
    quantiles
        ``(PREDICTION_BINS, len(QUANTILE_LEVELS), n_columns)``: per bin, the residual
        quantiles at :data:`QUANTILE_LEVELS` (zero for one-hot columns; a bin with
        fewer than :data:`ROWS_PER_QUANTILE` rows per level, as when ``f`` is
        constant or the data small, gets the column's overall quantiles).

    They are the model's predictive distribution of a continuous variable: ``f + ε``
    with ``ε`` drawn from the residuals of training rows with a similar prediction, so
    a residual whose spread and skew grow with ``f`` (a count such as a number of
    diseases) is kept. :meth:`NGM.predict` takes its median for MAE and its mean for
    RMSE, on the data's scale (for a ``log1p`` variable the mean is Duan's 1983
    smearing estimate). Aggregates of residuals, no rows. With ``observed`` (``x``
    filled by :func:`fill_missing`), a column's residuals are those of the rows where
    it is observed.
    """
    pred = conditional_targets(view, schema, x, classes)
    d, q = schema.n_columns, len(QUANTILE_LEVELS)
    bin_edges = np.zeros((PREDICTION_BINS - 1, d), dtype=np.float32)
    out = np.zeros((PREDICTION_BINS, q, d), dtype=np.float32)
    for spec, g in zip(schema.variables, schema.groups, strict=True):
        if spec.is_categorical:
            continue
        f, r = pred[:, g.start], x[:, g.start] - pred[:, g.start]
        if observed is not None:
            f, r = f[observed[:, g.start]], r[observed[:, g.start]]
        if not len(f):
            continue
        bin_edges[:, g.start] = np.quantile(f, np.arange(1, PREDICTION_BINS) / PREDICTION_BINS)
        bins = np.searchsorted(bin_edges[:, g.start], f, side="right")
        overall = np.quantile(r, QUANTILE_LEVELS)
        for b in range(PREDICTION_BINS):
            inside = r[bins == b]
            enough = len(inside) >= ROWS_PER_QUANTILE * q
            out[b, :, g.start] = np.quantile(inside, QUANTILE_LEVELS) if enough else overall
    return bin_edges, out
