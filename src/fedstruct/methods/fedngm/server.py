"""The FedNGM master (§2.1-2.6), one phase per round.

NGM variant (Fig. 2-3): 1 ``describe`` — variable lists and aggregates give the
common variables and the shared encoding; 2 ``graph`` — local graphs merged (nodes:
intersection, edges: union); 3 ``train`` — every client trains its NGM under the
merged graph; the master samples from each client model and trains the global NGM on
the samples (eq. 2), plus public data if it has any (eq. 3); 4 ``release`` — the
global model goes to the clients (with ``test_fraction``, each client also gets its
own model back and answers with its held-out score of the global model against it:
``site_scores``). With background knowledge (``knowledge``) the merged graph also
holds every required pair among the common variables (:func:`merge_graphs`).
The describe round also pools the clients' co-moments of their numeric columns into
correlations (:mod:`~fedstruct.methods.fedngm.moments`), saved with the model as a
check on its queries. NGR variant (§2.5): no graph round; clients and
master train NGRs (eq. 5). Release threshold (§2.6): the merged graph and the global
model are released only when built from at least ``T`` clients; otherwise the run
ends without a global model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedstruct.discovery.knowledge import load_knowledge
from fedstruct.errors import ConfigError, ProtocolError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.message import json_bytes
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fedngm.client import (
    DESCRIBE,
    GRAPH,
    RELEASE,
    TRAIN,
    summary_from_message,
)
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.model import NGM, fit_ngm
from fedstruct.methods.fedngm.moments import (
    NAMES,
    PAIRS,
    PRODUCTS,
    PooledCorrelation,
    pool_comoments,
)
from fedstruct.methods.fedngm.sampling import colour_classes
from fedstruct.methods.fedngm.schema import (
    CONTINUOUS_KINDS,
    Schema,
    VariableSpec,
    pool_summaries,
)
from fedstruct.methods.fedngm.structure import merge_graphs
from fedstruct.methods.fedngm.train import conditional_targets
from fedstruct.privacy.release import ReleaseThreshold

__all__ = [
    "FedNGMServer",
    "FedNGMState",
    "common_variables",
    "distillation_total",
    "sample_counts",
]


@dataclass
class FedNGMState:
    """What the master knows after each phase."""

    phase: str = "describe"
    schema: Schema | None = None
    graph: Graph | None = None
    client_models: dict[str, NGM] = field(default_factory=dict)
    global_model: NGM | None = None
    released: bool = False
    refused: str = ""
    site_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    correlation: PooledCorrelation | None = None


checkpoint.register(FedNGMState)
checkpoint.register(PooledCorrelation)
checkpoint.register(Schema)
checkpoint.register(VariableSpec)
checkpoint.register(
    NGM,
    to_fields=lambda ngm: {"schema": ngm.schema, "arrays": ngm.to_arrays(), "n_rows": ngm.n_rows},
    from_fields=lambda f: NGM.from_arrays(f["schema"], f["arrays"], f["n_rows"]),
)


def common_variables(variables: dict[str, list[str]]) -> list[str]:
    """The variables every client has, in the order of the first client (by id).

    Raises
    ------
    ProtocolError
        If a client shares no variable with the others (naming it), or fewer than two
        variables are common.
    """
    names = sorted(variables)
    if len(names) > 1:
        for name in names:
            others = set().union(*(set(variables[o]) for o in names if o != name))
            if not others & set(variables[name]):
                raise ProtocolError(
                    f"client {name!r} shares no variable with the other clients; a FedNGM "
                    "federation needs common variables (leave it out or add shared columns)"
                )
    common = [v for v in variables[names[0]] if all(v in variables[n] for n in names)]
    if len(common) < 2:
        raise ProtocolError(
            f"the clients have {len(common)} variable(s) in common ({common}); the global "
            "model needs at least two"
        )
    return common


def sample_counts(rows: dict[str, int], total: int, allocation: str) -> dict[str, int]:
    """Samples to draw from each client model: ``total`` split equally (§2.3) or in
    proportion to the clients' row counts ``n_k`` (§2.5), largest remainders rounding
    so that the counts add up to ``total``."""
    names = sorted(rows)
    if allocation == "equal":
        share = np.full(len(names), 1.0 / len(names))
    else:
        n = np.asarray([rows[k] for k in names], dtype=np.float64)
        share = n / n.sum()
    raw = share * total
    counts = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - counts), kind="stable")[: total - counts.sum()]:
        counts[i] += 1
    return {k: int(c) for k, c in zip(names, counts, strict=True)}


def distillation_total(rows: dict[str, int], config: FedNGMConfig) -> int:
    """How many samples the master draws from the client models in all:
    ``distillation_samples`` when set, otherwise the clients' rows together but at
    least ``min_distillation_samples`` per client (§3.2 draws 100,000 per client;
    docs/fedngm.md, "Small sites")."""
    if config.distillation_samples is not None:
        return config.distillation_samples
    return max(sum(rows.values()), config.min_distillation_samples * len(rows))


class FedNGMServer(ServerAlgorithm[FedNGMState]):
    """The master.

    Parameters
    ----------
    config
        Settings.
    seed
        The run's seed (sampling and the global model's initialisation).
    public
        Public data the master may use in eq. (3) (``config.public_weight > 0``).
    graph
        An undirected graph given instead of the merged local graphs: no graph round;
        its restriction to the common variables constrains every NGM.
    """

    def __init__(
        self,
        config: FedNGMConfig,
        seed: int,
        public: pd.DataFrame | None = None,
        graph: Graph | None = None,
    ) -> None:
        self.config = config
        self.seed = int(seed)
        self.public = public
        self.graph = graph
        self.threshold = ReleaseThreshold(config.release_threshold)
        self.knowledge = load_knowledge(config.knowledge)
        self.rounds = 4 if config.variant == "ngm" and graph is None else 3

    def init_state(self) -> FedNGMState:
        """Nothing known yet."""
        return FedNGMState()

    def is_done(self, state: FedNGMState, rnd: int) -> bool:
        """Done after the release (or a refusal)."""
        return state.phase in ("done", "refused") or rnd >= self.rounds

    def describe(self, state: FedNGMState) -> str:
        """The phase reached."""
        return state.phase

    def run_round(self, grid: Grid, state: FedNGMState, rnd: int) -> FedNGMState:
        """Run the next phase (see the module docstring)."""
        step = {"describe": self._describe, "graph": self._graph, "train": self._train,
                "release": self._release}[state.phase]  # fmt: skip
        return step(grid, state, rnd)

    def _schema_config(self, state: FedNGMState, rnd: int) -> dict:
        assert state.schema is not None
        return {"round": rnd, "schema": json_bytes(state.schema.to_json())}

    def _describe(self, grid: Grid, state: FedNGMState, rnd: int) -> FedNGMState:
        replies = grid.send_and_receive(
            {n: Message(DESCRIBE, config={"round": rnd}) for n in grid.node_ids()}
        )
        if not replies:
            raise ProtocolError("no client answered the describe request")
        summaries = {grid.node_name(k): summary_from_message(r) for k, r in replies.items()}
        common = common_variables({k: list(s) for k, s in summaries.items()})
        schema = pool_summaries(
            [summaries[k] for k in sorted(summaries)], common, log_skew=self.config.log_skew
        )
        state.schema = schema
        state.correlation = pool_comoments(
            [
                (summaries[grid.node_name(k)], r.config.get(NAMES, ()), r.arrays.get(PAIRS),
                 r.arrays.get(PRODUCTS))
                for k, r in sorted(replies.items())
            ],
            [v for v in common if schema.spec(v).kind in CONTINUOUS_KINDS],
        )  # fmt: skip
        state.history.append({"round": rnd, "phase": "describe", "clients": len(replies),
                              "common": len(common)})  # fmt: skip
        state.phase = "graph" if self.config.variant == "ngm" else "train"
        if self.graph is not None:
            state.graph, state.phase = self._given_graph(common), "train"
        return state

    def _given_graph(self, common: list[str]) -> Graph:
        """The given graph over the common variables.

        Raises
        ------
        ConfigError
            If it lacks common variables (named).
        """
        assert self.graph is not None
        missing = [v for v in common if v not in self.graph.names]
        if missing:
            raise ConfigError(
                f"the given graph lacks the common variables {missing}; give a graph over "
                "every variable the clients share (e.g. one learned on the same columns)"
            )
        return self.graph.restrict(common)

    def _graph(self, grid: Grid, state: FedNGMState, rnd: int) -> FedNGMState:
        config = self._schema_config(state, rnd)
        replies = grid.send_and_receive({n: Message(GRAPH, config=config) for n in grid.node_ids()})
        assert state.schema is not None
        graphs = [Graph(state.schema.names, replies[k].arrays["graph"]) for k in sorted(replies)]
        state.history.append({"round": rnd, "phase": "graph", "clients": len(replies)})
        refusal = self.threshold.refusal("the merged graph", len(graphs))
        if refusal:
            state.phase, state.refused = "refused", refusal
            return state
        required = () if self.knowledge is None else self.knowledge.required
        state.graph = merge_graphs(graphs, required)
        state.phase = "train"
        return state

    def _train(self, grid: Grid, state: FedNGMState, rnd: int) -> FedNGMState:
        assert state.schema is not None
        arrays = {}
        if state.graph is not None:
            arrays["adjacency"] = state.graph.adjacency().astype(np.int8)
        config = self._schema_config(state, rnd)
        replies = grid.send_and_receive(
            {n: Message(TRAIN, arrays=arrays, config=config) for n in grid.node_ids()}
        )
        models = {
            grid.node_name(k): NGM.from_arrays(state.schema, r.arrays, int(r.metrics["n"]))
            for k, r in sorted(replies.items())
        }
        state.client_models = models
        record = {"round": rnd, "phase": "train", "clients": len(models)}
        refusal = self.threshold.refusal("the global model", len(models))
        if refusal:
            state.phase, state.refused = "refused", refusal
            state.history.append(record)
            return state
        state.global_model, info = self.distil(state.schema, models, state.graph)
        record.update({f"global_{k}": float(v) for k, v in info.items()})
        state.history.append(record)
        state.phase = "release"
        return state

    def distil(
        self, schema: Schema, models: dict[str, NGM], graph: Graph | None
    ) -> tuple[NGM, dict[str, float]]:
        """The global model from samples of the client models (Fig. 3, eq. 2-3); with
        ``soft_targets``, each sample's targets are its client model's conditional
        expectations (:func:`~fedstruct.methods.fedngm.train.conditional_targets`)."""
        rows = {k: m.n_rows for k, m in models.items()}
        total = distillation_total(rows, self.config)
        counts = sample_counts(rows, total, self.config.allocation)
        parts, targets = [], []
        for i, k in enumerate(sorted(models)):
            if counts[k] == 0:
                continue
            m = models[k]
            x = m.sample_encoded(
                counts[k], seed=self.seed * 7919 + i, sampler=self.config.sampler,
                burn_in=self.config.burn_in,
            )  # fmt: skip
            parts.append(x)
            if self.config.soft_targets:
                targets.append(conditional_targets(m.view, schema, x, colour_classes(m.adjacency)))
        samples = np.concatenate(parts)
        sources: list[tuple] = [(samples, 1.0)]
        if targets:
            sources = [(samples, 1.0, np.concatenate(targets))]
        public = None
        if self.public is not None and self.config.public_weight > 0:
            public = schema.encode(self.public, schema.names)
            sources.append((public, self.config.public_weight))
        adjacency = graph.adjacency() if graph is not None else None
        model, info = fit_ngm(schema, sources, adjacency, self.config, self.seed,
                              calibration=public)  # fmt: skip
        return model, {**info, "samples": float(total)}

    def _release(self, grid: Grid, state: FedNGMState, rnd: int) -> FedNGMState:
        assert state.global_model is not None
        config = self._schema_config(state, rnd)
        arrays = state.global_model.to_arrays()
        messages = {}
        for n in grid.node_ids():
            own = state.client_models.get(grid.node_name(n))
            scored = self.config.test_fraction > 0 and own is not None
            extra = {f"own:{k}": v for k, v in own.to_arrays().items()} if scored else {}
            messages[n] = Message(RELEASE, arrays={**arrays, **extra}, config=config)
        replies = grid.send_and_receive(messages)
        state.site_scores = {
            grid.node_name(k): dict(r.metrics) for k, r in sorted(replies.items()) if r.metrics
        }
        state.released = True
        state.history.append({"round": rnd, "phase": "release", "clients": len(replies)})
        state.phase = "done"
        return state
