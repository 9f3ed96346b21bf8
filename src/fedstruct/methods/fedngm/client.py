"""The FedNGM client: summarises its variables, recovers its graph, trains its NGM,
receives the released global model and personalises it (stitching, §2.4). With
``test_fraction`` it keeps a share of its rows out of all of this and scores the
released model against its own on them when the release arrives.

Nothing it sends is a row: variable names and kinds, per-variable aggregates (count,
mean, squared deviations; category codes and counts; ordinal levels), its numeric
columns' pairwise counts and sums of products of deviations (what a covariance matrix
is made of: :mod:`~fedstruct.methods.fedngm.moments`), a graph over the common
variables, and model weights with per-column residual deviations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.errors import ProtocolError, UnknownVariableError
from fedstruct.fl import Client, Message, handles, holdout_split
from fedstruct.fl.message import config_entries, from_json_bytes
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.metrics import global_own_ratio
from fedstruct.methods.fedngm.model import NGM, fit_ngm, stitch
from fedstruct.methods.fedngm.moments import NAMES, PAIRS, PRODUCTS, site_comoments
from fedstruct.methods.fedngm.schema import (
    KINDS,
    Schema,
    missing_as_nan,
    pool_summaries,
    summarise,
)
from fedstruct.methods.fedngm.structure import glasso_graph
from fedstruct.methods.fedngm.train import PREDICTION_BINS, QUANTILE_LEVELS

__all__ = ["DESCRIBE", "GRAPH", "RELEASE", "TRAIN", "FedNGMClient", "local_graph"]

DESCRIBE = "fedngm.describe"
GRAPH = "fedngm.graph"
TRAIN = "fedngm.train"
RELEASE = "fedngm.release"


def summary_arrays(summary: Mapping[str, Mapping]) -> tuple[dict, dict]:
    """A :func:`~fedstruct.methods.fedngm.schema.summarise` result as message arrays and
    config (names and kinds as lists; numbers as arrays)."""
    arrays: dict[str, np.ndarray] = {}
    for name, entry in summary.items():
        if "categories" in entry:
            arrays[f"categories:{name}"] = np.asarray(entry["categories"], dtype=np.int64)
            arrays[f"counts:{name}"] = np.asarray(entry["counts"], dtype=np.int64)
        else:
            arrays[f"moments:{name}"] = np.asarray(
                [entry["n"], entry["mean"], entry["m2"], entry["m3"], float(entry["nonneg"])],
                dtype=np.float64,
            )
            if entry["nonneg"]:
                arrays[f"log_moments:{name}"] = np.asarray(
                    [entry["log_mean"], entry["log_m2"], entry["log_m3"]], dtype=np.float64
                )
            if "levels" in entry:
                arrays[f"levels:{name}"] = np.asarray(entry["levels"], dtype=np.float64)
                arrays[f"level_counts:{name}"] = np.asarray(entry["level_counts"], dtype=np.int64)
    config = {"variables": list(summary), "kinds": [e["kind"] for e in summary.values()]}
    return arrays, config


def summary_from_message(msg: Message) -> dict[str, dict]:
    """Inverse of :func:`summary_arrays`."""
    out: dict[str, dict] = {}
    for name, kind in zip(msg.config["variables"], msg.config["kinds"], strict=True):
        if f"categories:{name}" in msg.arrays:
            out[name] = {
                "kind": kind,
                "categories": msg.arrays[f"categories:{name}"].tolist(),
                "counts": msg.arrays[f"counts:{name}"].tolist(),
            }
        else:
            n, mean, m2, m3, nonneg = msg.arrays[f"moments:{name}"].tolist()
            out[name] = {"kind": kind, "n": int(n), "mean": mean, "m2": m2, "m3": m3,
                         "nonneg": bool(nonneg)}  # fmt: skip
            if f"log_moments:{name}" in msg.arrays:
                log_mean, log_m2, log_m3 = msg.arrays[f"log_moments:{name}"].tolist()
                out[name].update(log_mean=log_mean, log_m2=log_m2, log_m3=log_m3)
            if f"levels:{name}" in msg.arrays:
                out[name]["levels"] = msg.arrays[f"levels:{name}"].tolist()
                out[name]["level_counts"] = msg.arrays[f"level_counts:{name}"].tolist()
    return out


def local_graph(frame: pd.DataFrame, schema: Schema, config: FedNGMConfig, seed: int) -> Graph:
    """A client's own graph over ``schema``'s variables (§2.1), by
    :data:`~fedstruct.methods.fedngm.config.GRAPH_METHODS` ``config.graph_method``."""
    if config.graph_method in ("glasso", "partial"):
        return glasso_graph(
            frame, schema, cv=config.glasso_cv, max_rows=config.graph_max_rows, seed=seed,
            edge_level=config.edge_level, sample_partials=config.graph_method == "partial",
            isolated=config.isolated_edges, isolated_level=config.isolated_level,
        )  # fmt: skip
    x = schema.encode(frame, missing=True)
    model, _ = fit_ngm(schema, [(x, 1.0)], None, config, seed)
    return model.graph


class FedNGMClient(Client):
    """One FedNGM participant.

    Parameters
    ----------
    data
        The client's rows (real/ordinal columns as numbers, binary/categorical as
        integer codes). With ``config.test_fraction`` a share of them is kept out
        (:attr:`held_out`) and everything else uses :attr:`train` only; the audit
        guards all of them.
    kinds
        Kind of every variable of the federation (:data:`~fedstruct.methods.fedngm.schema.KINDS`).
    config, seed
        Settings and the run's seed.

    Raises
    ------
    UnknownVariableError
        If one of the client's columns has no kind.
    """

    def __init__(
        self, data: ClientData, *, kinds: Mapping[str, str], config: FedNGMConfig, seed: int
    ) -> None:
        super().__init__(data, seed=seed)
        missing = [v for v in data.variables if v not in kinds]
        if missing:
            raise UnknownVariableError(
                f"client {data.name!r} has variables {missing} without a kind; give each one "
                f"of {list(KINDS)} in kinds"
            )
        self.config = config
        self.kinds = {v: kinds[v] for v in data.variables}
        if data.missing_values:
            data = dataclasses.replace(data, rows=missing_as_nan(data.rows, self.kinds))
        kept, held = holdout_split(data.n_rows, config.test_fraction, seed, data.name)
        if len(held):
            self.train = dataclasses.replace(data, rows=data.rows.iloc[kept])
        else:
            self.train = data
        held_rows = data.rows.iloc[held]
        #: Kept-out rows the released model is scored on: those with every variable
        #: observed (prediction needs all the other variables); the rest are counted.
        self.held_out = held_rows.dropna()
        self.held_out_incomplete = len(held_rows) - len(self.held_out)
        summary = summarise(self.train.rows, self.kinds)
        self._describe_arrays, self._describe_config = summary_arrays(summary)
        numeric, pairs, products = site_comoments(self.train.rows, self.kinds)
        if len(numeric) >= 2:  # the sites' pooled correlations (a check on queries)
            self._describe_arrays.update({PAIRS: pairs, PRODUCTS: products})
            self._describe_config[NAMES] = numeric
        self.describe_bound = (
            sum(a.size for a in self._describe_arrays.values())
            + sum(config_entries(v) for v in self._describe_config.values())
            + 1
        )
        self.own_schema = pool_summaries([summary], log_skew=config.log_skew)
        self.global_model: NGM | None = None
        self.global_graph: Graph | None = None

    def _schema(self, msg: Message) -> Schema:
        return Schema.from_json(from_json_bytes(msg.config["schema"]))

    # --------------------------------------------------------------- handlers
    @handles(DESCRIBE, max_entries=lambda c, m: c.describe_bound)
    def describe(self, msg: Message) -> Message:
        """Its variables, their kinds and aggregates, and its row count (§2, §2.5)."""
        return Message(
            DESCRIBE,
            arrays=self._describe_arrays,
            config=self._describe_config,
            metrics={"n": self.train.n_rows},
        )

    @handles(GRAPH, max_entries=lambda c, m: len(c.data.variables) ** 2, graph_arrays=("graph",))
    def graph(self, msg: Message) -> Message:
        """Its local graph over the common variables (§2.1): recovered over all of its
        own variables and restricted (``graph_scope="all"``, the paper's merge), or
        over the common ones only (``"common"``)."""
        common = self._schema(msg)
        if self.config.graph_scope == "all":
            private = [v for v in self.train.variables if v not in common]
            schema = common.extend(self.own_schema.restrict(private))
            graph = local_graph(self.train.rows, schema, self.config, self.seed)
            graph = graph.restrict(common.names)
        else:
            graph = local_graph(self.train.rows, common, self.config, self.seed)
        return Message(GRAPH, arrays={"graph": graph.marks})

    @handles(TRAIN, max_entries=lambda c, m: c.train_bound(m))
    def train(self, msg: Message) -> Message:
        """Its NGM on the common variables (eq. 1 with the broadcast graph), or its NGR
        (eq. 5, no graph)."""
        schema = self._schema(msg)
        adjacency = msg.arrays["adjacency"].astype(bool) if "adjacency" in msg.arrays else None
        x = schema.encode(self.train.rows, schema.names, missing=True)
        model, info = fit_ngm(schema, [(x, 1.0)], adjacency, self.config, self.seed)
        return Message(TRAIN, arrays=model.to_arrays(), metrics={"n": len(x), **info})

    def train_bound(self, msg: Message) -> int:
        """Weights of the broadcast architecture, the graph, residual scales and
        quantiles, and four metrics."""
        schema = Schema.from_json(from_json_bytes(msg.config["schema"]))
        d, v = schema.n_columns, len(schema)
        routed = "adjacency" in msg.arrays and self.config.constraint == "mask"
        h = v * self.config.units_per_variable if routed else self.config.hidden
        quantiles = (PREDICTION_BINS * (len(QUANTILE_LEVELS) + 1) - 1) * d  # and bin edges
        return (d * h + h) + (h * d + d) + v * v + d + quantiles + 5

    @handles(RELEASE, max_entries=3)
    def release(self, msg: Message) -> Message:
        """Keep the released global model and graph (§2.6) for personalisation.

        If the message also carries this client's own model (arrays ``own:*``, sent
        when ``test_fraction > 0``) and it kept rows out, answer with the global
        model's error relative to its own on them
        (:func:`~fedstruct.methods.fedngm.metrics.global_own_ratio`) and their count.
        """
        schema = self._schema(msg)
        glob = {k: v for k, v in msg.arrays.items() if not k.startswith("own:")}
        own = {k[4:]: v for k, v in msg.arrays.items() if k.startswith("own:")}
        self.global_model = NGM.from_arrays(schema, glob)
        self.global_graph = self.global_model.graph
        if not own or self.held_out.empty:
            return Message(RELEASE)
        ratio = global_own_ratio(self.global_model, NGM.from_arrays(schema, own), self.held_out)
        metrics = {"held_out": len(self.held_out)}
        if self.held_out_incomplete:
            metrics["held_out_incomplete"] = self.held_out_incomplete
        if ratio is not None:
            metrics["global_own_ratio"] = ratio
        return Message(RELEASE, metrics=metrics)

    # ---------------------------------------------------------- personalising
    def personalise(self, graph: Graph | None = None) -> NGM:
        """Stitch the client's own variables into the released global model (§2.4).

        The extended graph is the global graph plus the edges of the client's own
        graph (``graph``, default: recovered from its rows) that touch its own
        variables.

        Raises
        ------
        ProtocolError
            If no global model was released to this client or it has no variable the
            global model lacks.
        """
        if self.global_model is None:
            raise ProtocolError(
                f"client {self.name!r} has no released global model to personalise; run "
                "the federation first (and meet the release threshold)"
            )
        base = self.global_model.schema
        private = [v for v in self.train.variables if v not in base]
        if not private:
            raise ProtocolError(
                f"client {self.name!r} has no variable outside the global model; nothing to stitch"
            )
        extra = self.own_schema.restrict(private)
        schema = base.extend(extra)
        if graph is None:
            graph = local_graph(self.train.rows, schema, self.config, self.seed)
        own = graph.restrict(schema.names).adjacency()
        adjacency = np.zeros((len(schema), len(schema)), dtype=bool)
        v = len(base)
        adjacency[:v, :v] = self.global_model.adjacency
        adjacency[v:, :] = own[v:, :]
        adjacency[:, v:] = own[:, v:]
        x = schema.encode(self.train.rows, missing=True)
        model, _ = stitch(self.global_model, extra, x, adjacency, self.config, self.seed)
        return model
