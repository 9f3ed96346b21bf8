"""A Neural Graphical Model: schema, graph, neural view and residual noise, with
training, inference, sampling and stitching (NGM paper; FedNGM §2.2-2.5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, UnknownVariableError, unknown_choice_message
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.undirected import undirected
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.inference import infer
from fedstruct.methods.fedngm.network import (
    NeuralView,
    group_matrix,
    routing_masks,
    variable_paths,
)
from fedstruct.methods.fedngm.sampling import colour_classes, gibbs_sample, ordering_sample
from fedstruct.methods.fedngm.schema import Schema
from fedstruct.methods.fedngm.train import (
    Objective,
    Structure,
    fill_missing,
    fit_view,
    neighbour_mask,
    residual_quantiles,
    residual_std,
)

__all__ = ["NGM", "POINTS", "fit_ngm", "isolated_message", "revealed_graph", "stitch"]

#: Point predictions of a continuous variable (:meth:`NGM.predict`).
POINTS = ("mean", "median")


@dataclass
class NGM:
    """A trained NGM (or NGR).

    Attributes
    ----------
    schema
        Its variables and their encoding.
    view
        The neural view.
    adjacency
        ``(V, V)`` symmetric graph it follows (for an NGR, the graph it revealed).
    residual
        Per encoded column, the Gibbs sampler's noise scale from its training data
        (:func:`~fedstruct.methods.fedngm.train.residual_std`: a real column's
        residual standard deviation, an ordinal's level-distribution scale).
    bin_edges, quantiles
        Per real column, bins of the network's prediction and in each the quantiles
        of the training residuals (encoded scale;
        :func:`~fedstruct.methods.fedngm.train.residual_quantiles`): the predictive
        distribution :meth:`predict` summarises.
    n_rows
        Rows it was trained on.
    """

    schema: Schema
    view: NeuralView
    adjacency: NDArray[np.bool_]
    residual: NDArray[np.float32]
    bin_edges: NDArray[np.float32]
    quantiles: NDArray[np.float32]
    n_rows: int = 0

    # ----------------------------------------------------------------- views
    @property
    def names(self) -> tuple[str, ...]:
        """Its variables."""
        return self.schema.names

    @property
    def graph(self) -> Graph:
        """The undirected graph it follows."""
        a = np.asarray(self.adjacency, dtype=bool)
        return undirected(self.names, (a | a.T) & ~np.eye(len(a), dtype=bool))

    def neighbours(self, name: str) -> tuple[str, ...]:
        """The variables adjacent to ``name`` in the graph the model follows: the only
        ones its prediction of ``name`` reads (a routed view reads no other)."""
        i = self.schema.position(name)
        a = np.asarray(self.adjacency, dtype=bool)
        linked = (a[i] | a[:, i]) & (np.arange(len(a)) != i)
        return tuple(n for n, k in zip(self.names, linked, strict=True) if k)

    def path_strength(self) -> NDArray[np.float64]:
        """``(V, V)`` variable-level path matrix ``G Π|W_l| Gᵀ`` (eq. 1)."""
        import torch

        with torch.no_grad():
            return variable_paths(self.view, group_matrix(self.schema.widths)).numpy()

    # ------------------------------------------------------------- inference
    def _evidence(self, frame: pd.DataFrame, evidence: Sequence[str] | None) -> tuple:
        names = [c for c in frame.columns if c in self.schema] if evidence is None else evidence
        unknown = [c for c in names if c not in self.schema]
        if unknown:
            raise UnknownVariableError(
                f"evidence on {unknown}, which the model does not have; its variables are "
                f"{list(self.names)}"
            )
        x = self.schema.encode(frame, names)
        known = np.zeros(self.schema.n_columns, dtype=bool)
        for name in names:
            known[self.schema.groups[self.schema.position(name)]] = True
        return x, known

    def _evidence_names(
        self, frame: pd.DataFrame, target: str, evidence: Sequence[str] | None
    ) -> list[str]:
        """The evidence for predicting ``target``: the given names, or every column of
        ``frame`` the model has; never the target itself."""
        if evidence is None:
            return [c for c in frame.columns if c in self.schema and c != target]
        return [c for c in evidence if c != target]

    def complete(
        self,
        frame: pd.DataFrame,
        evidence: Sequence[str] | None = None,
        *,
        method: str = "message",
        steps: int = 20,
    ) -> NDArray[np.float32]:
        """Encoded rows completed from the evidence columns (default: every column of
        ``frame`` the model has); see :func:`~fedstruct.methods.fedngm.inference.infer`.

        Raises
        ------
        UnknownVariableError
            If an evidence variable is not in the model.
        DataError
            If an evidence value is a category never seen in training.
        """
        x, known = self._evidence(frame, evidence)
        return infer(self.view, self.schema, x, known, method=method, steps=steps)

    def predict(
        self,
        frame: pd.DataFrame,
        target: str,
        evidence: Sequence[str] | None = None,
        *,
        point: str = "mean",
        **kwargs,
    ) -> NDArray:
        """Predict ``target`` from the evidence (never the target itself): its most
        likely category for a categorical variable; for a continuous one, a summary on
        the data's scale of its predictive distribution ``f + ε`` (``f`` the network's
        prediction, ``ε`` the training residuals, :attr:`quantiles`).

        Parameters
        ----------
        point
            ``"mean"`` (default; minimises squared error: RMSE) or ``"median"``
            (minimises absolute error: MAE). On a ``log1p`` scale the mean is Duan's
            smearing estimate ``E[exp(f + ε)] - 1``; for a skewed residual the median
            is ``f + median(ε)`` (docs/fedngm.md, "Point predictions").
        **kwargs
            Inference options (:meth:`complete`).
        """
        if point not in POINTS:
            raise ConfigError(unknown_choice_message("point", point, POINTS))
        spec = self.schema.spec(target)
        filled = self.complete(frame, self._evidence_names(frame, target, evidence), **kwargs)
        g = self.schema.groups[self.schema.position(target)]
        if spec.is_categorical:
            return np.asarray(spec.categories)[filled[:, g].argmax(axis=1)]
        z = filled[:, g.start].astype(np.float64)
        bins = np.searchsorted(self.bin_edges[:, g.start], z, side="right")
        eps = self.quantiles[bins, :, g.start]  # (rows, quantile levels)
        if point == "median":  # the middle of an odd number of quantile levels
            return spec.unstandardise(z + eps[:, eps.shape[1] // 2])
        return spec.unstandardise(z[:, None] + eps).mean(axis=1)

    def predict_proba(
        self,
        frame: pd.DataFrame,
        target: str,
        evidence: Sequence[str] | None = None,
        **kwargs,
    ) -> NDArray[np.float64]:
        """Probabilities of ``target``'s categories (columns in ``categories`` order).

        Raises
        ------
        ConfigError
            If ``target`` is continuous.
        """
        spec = self.schema.spec(target)
        if not spec.is_categorical:
            raise ConfigError(f"{target!r} is continuous; use predict for its value")
        filled = self.complete(frame, self._evidence_names(frame, target, evidence), **kwargs)
        p = filled[:, self.schema.groups[self.schema.position(target)]].astype(np.float64)
        return p / p.sum(axis=1, keepdims=True)

    # -------------------------------------------------------------- sampling
    def sample_encoded(
        self, n: int, *, seed: int, sampler: str = "gibbs", burn_in: int = 30
    ) -> NDArray[np.float32]:
        """``n`` encoded samples (see :mod:`~fedstruct.methods.fedngm.sampling`)."""
        if sampler == "gibbs":
            return gibbs_sample(
                self.view, self.schema, self.adjacency, self.residual, n,
                burn_in=burn_in, seed=seed,
            )  # fmt: skip
        return ordering_sample(self.view, self.schema, self.adjacency, n, seed=seed)

    def sample(
        self, n: int, *, seed: int, sampler: str = "gibbs", burn_in: int = 30
    ) -> pd.DataFrame:
        """``n`` samples on the data's scale (categories as codes)."""
        x = self.sample_encoded(n, seed=seed, sampler=sampler, burn_in=burn_in)
        return self.schema.decode(x)

    # -------------------------------------------------------------- transfer
    def to_arrays(self) -> dict[str, NDArray]:
        """Weights, graph and residuals as named arrays (a message's payload)."""
        return {
            **self.view.to_arrays(),
            "adjacency": self.adjacency.astype(np.int8),
            "residual": self.residual.astype(np.float32),
            "bin_edges": self.bin_edges.astype(np.float32),
            "quantiles": self.quantiles.astype(np.float32),
        }

    @classmethod
    def from_arrays(cls, schema: Schema, arrays: Mapping[str, NDArray], n_rows: int = 0) -> NGM:
        """Inverse of :meth:`to_arrays`."""
        weights = {k: v for k, v in arrays.items() if k[0] in "wb" and k[1:].isdigit()}
        return cls(
            schema=schema,
            view=NeuralView.from_arrays(weights),
            adjacency=np.asarray(arrays["adjacency"]).astype(bool),
            residual=np.asarray(arrays["residual"], dtype=np.float32),
            bin_edges=np.asarray(arrays["bin_edges"], dtype=np.float32),
            quantiles=np.asarray(arrays["quantiles"], dtype=np.float32),
            n_rows=int(n_rows),
        )


def _loss_mask(
    observed: NDArray[np.bool_] | None,
    schema: Schema,
    adjacency: NDArray[np.bool_] | None,
    config: FedNGMConfig,
) -> NDArray[np.bool_] | None:
    """The rows of each variable's loss under ``config.missing_loss`` (``None``: the
    observed entries, as :func:`~fedstruct.methods.fedngm.train.fit_view` finds them)."""
    if observed is None or adjacency is None or config.missing_loss != "neighbours":
        return None
    return neighbour_mask(observed, schema, adjacency)


def fit_ngm(
    schema: Schema,
    sources: Sequence[tuple],
    adjacency: NDArray[np.bool_] | None,
    config: FedNGMConfig,
    seed: int,
    calibration: NDArray[np.float32] | None = None,
) -> tuple[NGM, dict[str, float]]:
    """Train an NGM on encoded ``sources`` (eq. 1-3) or, with ``adjacency=None``, an
    NGR that reveals its graph (eq. 5, then :func:`revealed_graph`).

    An NGM follows its graph by ``config.constraint``: ``"mask"`` routes hidden units
    by neighbourhood (:func:`~fedstruct.methods.fedngm.network.routing_masks`,
    ``units_per_variable`` each), ``"penalty"`` trains a dense view of ``hidden``
    units under eq. (1)'s path penalty.

    ``sources[0]`` is the main data (client rows, or the samples of eq. 2, optionally
    with separate soft targets: ``(x, weight, target)``, see
    :class:`~fedstruct.methods.fedngm.train.Objective`); further sources are weighted
    extra terms (eq. 3's public data). The sampler's noise scales come from the main
    data's inputs; the residual quantiles of :meth:`NGM.predict` from ``calibration``
    rows (encoded; default the main data): the master passes its public rows, real
    data, as the samples carry the sampler's symmetric noise, not the data's skew.
    """
    v = len(schema)
    routed = adjacency is not None and config.constraint == "mask"
    if adjacency is None:
        structure = Structure.revealer(v, config.penalty, config.sparsity)
    elif routed:
        structure = Structure.for_graph(adjacency, 0.0)
    else:
        structure = Structure.for_graph(adjacency, config.penalty, config.self_weight)
    if routed:
        view = NeuralView(schema.n_columns, [v * config.units_per_variable], seed)
        view.route(routing_masks(schema.widths, adjacency, config.units_per_variable))
    else:
        view = NeuralView(schema.n_columns, [config.hidden], seed)
    main, observed = fill_missing(sources[0][0], schema)
    info = fit_view(
        view, schema, Objective(sources, structure),
        epochs=config.epochs, batch_size=config.batch_size,
        min_batches=config.min_batches, learning_rate=config.learning_rate,
        validation_fraction=config.validation_fraction, seed=seed,
        loss_mask=_loss_mask(observed, schema, adjacency, config), device=config.device,
    )  # fmt: skip
    model = NGM(
        schema=schema,
        view=view,
        adjacency=np.zeros((v, v), dtype=bool) if adjacency is None else np.asarray(adjacency),
        residual=np.zeros(schema.n_columns, dtype=np.float32),
        bin_edges=np.zeros((0, schema.n_columns), dtype=np.float32),
        quantiles=np.zeros((1, 1, schema.n_columns), dtype=np.float32),
        n_rows=len(main),
    )
    if adjacency is None:
        model.adjacency = revealed_graph(model.path_strength(), config.ngr_threshold)
    classes = colour_classes(model.adjacency)
    model.residual = residual_std(view, schema, main, classes, observed)
    rows, rows_observed = (
        (main, observed) if calibration is None else (fill_missing(calibration, schema))
    )
    model.bin_edges, model.quantiles = residual_quantiles(
        view, schema, rows, classes, rows_observed
    )
    return model, info


def isolated_message(model: NGM, target: str) -> str | None:
    """A one-line warning when ``target`` has no neighbour in ``model``'s graph, else
    ``None``: the model then predicts it from no other variable, so every row (and
    every query) gets the same answer, its marginal."""
    if model.neighbours(target):
        return None
    return (
        f"{target!r} has no neighbour in the model's graph: it is predicted from no other "
        "variable (the same answer, its marginal, for every row and every evidence); give "
        "a graph linking it (--graph FILE, e.g. a FedCDnv run on the same files), or, if "
        "a weak link is expected, a more lenient test of the sites' graph step (--set "
        "isolated_level=... or edge_level=...; docs/fedngm.md, 'Real tables')"
    )


def revealed_graph(paths: NDArray, threshold: float) -> NDArray[np.bool_]:
    """An NGR's graph (§2.5): ``sym(P)`` normalised by its largest off-diagonal
    entry, kept where it exceeds ``threshold``."""
    sym = 0.5 * (np.asarray(paths) + np.asarray(paths).T)
    np.fill_diagonal(sym, 0.0)
    top = sym.max()
    if top <= 0:
        return np.zeros_like(sym, dtype=bool)
    return sym / top > threshold


def stitch(
    global_model: NGM,
    extra: Schema,
    x: NDArray[np.float32],
    adjacency: NDArray[np.bool_],
    config: FedNGMConfig,
    seed: int,
) -> tuple[NGM, dict[str, float]]:
    """Personalise ``global_model`` with a client's own variables (§2.4, Fig. 4).

    The view grows by the new variables' columns (inputs and outputs) and by new
    hidden units. Weights into new units start small and random (``± stitch_init``),
    weights from new units into old ones at zero, so the stitched model starts as the
    global one (and zero on both sides would never train, METHODS.md). The global
    weights stay frozen; training minimises eq. (1) on the client's rows.

    How new units connect follows ``config.constraint``:

    * ``"penalty"`` — the paper's Fig. 4: ``stitch_hidden`` new units per hidden
      layer, every old unit connected to every new one and back, eq. (1)'s penalty
      with the extended graph (it moves only the new weights);
    * ``"mask"`` — the routed view grown the same way it was built: each new variable
      owns ``units_per_variable`` new units fed by its neighbours' inputs, and a new
      input reaches the old units of its old neighbours; the extended graph holds by
      construction.

    Parameters
    ----------
    global_model
        The released global NGM.
    extra
        Schema of the client-only variables.
    x
        The client's rows encoded with ``global_model.schema.extend(extra)``.
    adjacency
        The extended graph over old + new variables (the global graph plus the
        client's edges touching its own variables).
    """
    old = global_model.view
    schema = global_model.schema.extend(extra)
    adj = np.asarray(adjacency, dtype=bool)
    widths_old = old.widths
    units = config.units_per_variable
    routed = config.constraint == "mask" and widths_old[1:-1] == [len(global_model.schema) * units]
    if routed:
        hidden_new = [len(schema) * units]
        masks = routing_masks(schema.widths, adj, units)
        structure = Structure.for_graph(adj, 0.0)
    else:
        hidden_new = [h + config.stitch_hidden for h in widths_old[1:-1]]
        structure = Structure.for_graph(adj, config.penalty, config.self_weight)
    view = NeuralView(schema.n_columns, hidden_new, seed)
    widths_new = view.widths
    rng = np.random.default_rng([int(seed), 17])
    old_arrays = old.to_arrays()
    arrays, trainable = {}, []
    for i in range(len(view.layers)):
        out_old, in_old = widths_old[i + 1], widths_old[i]
        out_new, in_new = widths_new[i + 1], widths_new[i]
        w = np.zeros((out_new, in_new), dtype=np.float32)
        size = (out_new - out_old, in_new)
        w[out_old:, :] = rng.uniform(-config.stitch_init, config.stitch_init, size=size)
        w[:out_old, :in_old] = old_arrays[f"w{i}"]
        b = np.zeros(out_new, dtype=np.float32)
        b[:out_old] = old_arrays[f"b{i}"]
        wm = np.ones_like(w) if not routed else masks[i].copy()
        wm[:out_old, :in_old] = 0.0
        bm = np.ones_like(b)
        bm[:out_old] = 0.0
        arrays[f"w{i}"], arrays[f"b{i}"] = w, b
        trainable.append((wm, bm))
    view.load_arrays(arrays)
    if routed:
        view.route(masks)
    view.freeze(trainable)
    _, observed = fill_missing(x, schema)
    info = fit_view(
        view,
        schema,
        Objective([(x, 1.0)], structure),
        epochs=config.epochs,
        batch_size=config.batch_size,
        min_batches=config.min_batches,
        learning_rate=config.learning_rate,
        validation_fraction=config.validation_fraction,
        seed=seed,
        loss_mask=_loss_mask(observed, schema, adj, config),
        device=config.device,
    )
    classes = colour_classes(adj)
    x, observed = fill_missing(x, schema)
    model = NGM(schema, view, adj, residual_std(view, schema, x, classes, observed),
                *residual_quantiles(view, schema, x, classes, observed), len(x))  # fmt: skip
    return model, info
