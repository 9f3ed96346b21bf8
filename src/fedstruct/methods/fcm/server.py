"""The F-CMs server (Algorithm 1): sample, aggregate concepts and graphs, adapt, train.

Each round:

1. **Client sampling.** ``clients_per_round`` of the available clients, drawn from
   the run's seed and the round.
2. **Concept set and graph** (§4.2.1). Sampled clients report their concept index
   set ``I^(k)``, whether they have task labels, their graph and row count.
   ``M_t = M_{t-1} ∪ ⋃_k I^(k)`` (the task is always a node). The graphs are
   aggregated by the three-way strength vote (:func:`fedstruct.graphs.strength_vote`,
   weights = row counts; only clients observing both nodes of a pair vote) and
   projected to a DAG by breaking each cycle at its least-supported edge. With
   background knowledge (``knowledge``), the projection also keeps to it
   (:func:`~fedstruct.discovery.background.knowledge_dag`): an edge the knowledge
   denies goes, every required edge between two nodes is in (never broken), and a
   directed path the knowledge forbids is broken at its least-supported edge.
   With
   ``graph_memory="all"`` the server votes over the latest graph of every client it
   has heard from (the monotone federation of §4.2.2); with ``"round"``, over the
   round's participants only.
3. **Architecture adaptation** (§4.2.2): :func:`~fedstruct.methods.fcm.model.adapt`.
   ``sfcm`` fixes the concept set, graph and architecture after round 1;
   ``sfcm-reinit`` adapts the architecture but re-initialises every parameter when
   it changes.
4. **Module-specific training and module-wise aggregation** (§4.2.3): each module's
   parameters are averaged, weighted by row counts, over the clients that trained
   it; untouched modules keep their values; the encoder is averaged over every
   participant (FedAvg).
5. **Global validation loss**: every available client reports eq. (2) on its
   held-out rows; the run stops after ``patience`` rounds without improvement and
   returns the best model. When the pool of clients or the concept set changes, the
   validation objective changes with it (other held-out rows; new concepts' losses
   enter eq. 2), so the best loss is reset to the current round's.

With ``input_scaling`` other than ``"none"``, the first round that learns the input
columns starts with the statistics step (as FedAvg's, :mod:`fedstruct.fl.features`):
every connected site sends its inputs' counts, sums and centred sums of squares
(outside the participation model), the server pools them (kept in the state: a
resumed run does not ask again), builds the encoder for the pooled statistics
(standardised inputs, mean imputation, missing indicators) and sends it with every
TRAIN and EVALUATE message; the model's input width is the encoder's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import knowledge_dag
from fedstruct.discovery.knowledge import Knowledge, load_knowledge
from fedstruct.errors import ProtocolError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics, gather_statistics
from fedstruct.graphs.combine import strength_vote
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.projection import project_to_dag
from fedstruct.methods.fcm.client import (
    DESCRIBE,
    ENCODING,
    EVALUATE,
    STATISTICS,
    TRAIN,
    input_columns,
)
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fcm.model import ModelSpec, adapt

__all__ = ["FCMServer", "FCMState", "aggregate_graphs", "module_wise_average"]

_SEED_SAMPLE, _SEED_INIT, _SEED_TIES = 11, 12, 13


@dataclass
class FCMState:
    """The shared model, the federation's concept set and graph, and the history."""

    spec: ModelSpec | None = None
    params: dict[str, NDArray[np.float32]] | None = None
    concepts: tuple[str, ...] = ()
    reports: dict[str, tuple[Graph | None, float]] = field(default_factory=dict)
    graph: Graph | None = None
    features: tuple[str, ...] = ()
    basis: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    best_loss: float = float("inf")
    best: tuple[ModelSpec, dict[str, NDArray[np.float32]], int] | None = None
    since_best: int = 0
    before_growth: dict[str, NDArray[np.float32]] | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    statistics: FeatureStatistics | None = None

    def encoder(self) -> FeatureEncoder | None:
        """The inputs' federated encoding (``None`` without the statistics step)."""
        if self.statistics is None:
            return None
        return FeatureEncoder.from_statistics(self.statistics, self.features)

    def encoding(self) -> dict[str, NDArray]:
        """The encoding's arrays a TRAIN or EVALUATE message carries (none without)."""
        encoder = self.encoder()
        return {} if encoder is None else encoder.to_arrays(ENCODING)


checkpoint.register(FCMState)
checkpoint.register(ModelSpec)


def aggregate_graphs(
    reports: Mapping[str, tuple[Graph | None, float]],
    nodes: Sequence[str],
    seed: int,
    knowledge: Knowledge | None = None,
) -> Graph:
    """§4.2.1: three-way strength vote over the clients' graphs, projected to a DAG.

    With ``knowledge``, its statements between two of ``nodes``
    (:meth:`~fedstruct.discovery.knowledge.Knowledge.within`) shape the projection
    (:func:`~fedstruct.discovery.background.knowledge_dag`: denied edges out, required
    edges in, cycles and forbidden directed paths broken at their least-supported
    edge). Without any client graph the graph stays empty, knowledge or not: there is
    nothing learned to correct (``client_graphs = flat``).

    Parameters
    ----------
    reports
        Client name -> (its graph or ``None``, its row count ``α_k``).
    nodes
        The aggregated graph's nodes (the model's concepts and the task).
    seed
        Seed of the random tie-breaks.
    knowledge
        Background knowledge the graph must respect (``None``: none).
    """
    names = sorted(n for n, (g, _) in reports.items() if g is not None)
    inside = set(nodes)
    sources = []
    for n in names:
        g = reports[n][0]
        sources.append(g.restrict([v for v in g.names if v in inside]))  # type: ignore[union-attr]
    if not sources:
        return Graph.empty(nodes)
    vote = strength_vote(sources, [reports[n][1] for n in names], names=nodes, seed=seed)
    inner = None if knowledge is None else knowledge.within(nodes)
    if inner is None or inner.is_empty:
        return project_to_dag(vote.graph, vote.strength)
    adj = knowledge_dag(vote.graph.directed(), vote.strength, inner.resolve(tuple(nodes)))
    return Graph.from_dag_matrix(tuple(nodes), adj)


def module_wise_average(
    current: Mapping[str, NDArray], replies: Sequence[tuple[float, Mapping[str, NDArray]]]
) -> dict[str, NDArray[np.float32]]:
    """§4.2.3: each parameter averaged over the clients that sent it, weighted by
    ``n^(k)``; parameters nobody sent keep their value.

    ``φ_{t+1,j} = Σ_{k ∈ U_j} n^(k) / Σ_{r ∈ U_j} n^(r) · φ^(k)_{t+1,j}``.
    """
    out: dict[str, NDArray[np.float32]] = {}
    for name, value in current.items():
        sent = [(n, arrays[name]) for n, arrays in replies if name in arrays]
        total = sum(n for n, _ in sent)
        if not sent or total <= 0:
            out[name] = np.array(value, copy=True)
            continue
        acc = np.zeros(np.shape(value), dtype=np.float64)
        for n, arr in sent:
            acc += (n / total) * np.asarray(arr, dtype=np.float64)
        out[name] = acc.astype(np.float32)
    return out


class FCMServer(ServerAlgorithm[FCMState]):
    """F-CMs (Fenoglio et al., Algorithm 1), server side.

    Parameters
    ----------
    config
        The hyper-parameters.
    task
        The task variable.
    cardinalities
        Number of states of every concept and the task.
    seed
        The run's seed (client sampling, new modules, tie-breaks).
    graph
        A DAG given instead of the strength vote over the clients' graphs: each
        round's graph is its restriction to the concept set and the task.
    """

    def __init__(
        self,
        config: FCMConfig,
        task: str,
        cardinalities: Mapping[str, int],
        seed: int,
        graph: Graph | None = None,
    ) -> None:
        self.config = config
        self.task = task
        self.cardinalities = dict(cardinalities)
        self.seed = int(seed)
        self.graph = graph
        self.rounds = config.rounds
        self.knowledge = load_knowledge(config.knowledge)

    def init_state(self) -> FCMState:
        """No concepts and no model before the first clients describe themselves."""
        return FCMState()

    def is_done(self, state: FCMState, rnd: int) -> bool:
        """After ``rounds`` rounds, or ``patience`` rounds without a better validation loss."""
        return rnd >= self.rounds or state.since_best >= self.config.patience

    def _rng(self, rnd: int, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, rnd, salt])

    def run_round(self, grid: Grid, state: FCMState, rnd: int) -> FCMState:
        """One round of Algorithm 1; see the module docstring."""
        pool = grid.node_ids()
        k = min(self.config.clients_per_round, len(pool))
        sampled = sorted(
            int(pool[i]) for i in self._rng(rnd, _SEED_SAMPLE).permutation(len(pool))[:k]
        )
        record: dict[str, float] = {"round": rnd, "pool": len(pool), "sampled": len(sampled)}
        frozen = self.config.regime == "sfcm" and state.spec is not None
        if not frozen:
            state = self._update_structure(grid, state, sampled, rnd)
        if state.spec is None or state.params is None:
            return replace(state, history=[*state.history, record])
        state = self._train(grid, state, sampled, rnd, record)
        return self._validate(grid, state, rnd, record)

    # ------------------------------------------------------------ structure
    def _update_structure(
        self, grid: Grid, state: FCMState, sampled: Sequence[int], rnd: int
    ) -> FCMState:
        replies = grid.send_and_receive(
            {n: Message(DESCRIBE, config={"round": rnd}) for n in sampled}
        )
        reports = dict(state.reports) if self.config.graph_memory == "all" else {}
        concepts = list(state.concepts)
        features = state.features
        for node, reply in sorted(replies.items()):
            name = grid.node_name(node)
            theirs = tuple(reply.config["features"])  # type: ignore[arg-type]
            if features and theirs != features:
                raise ProtocolError(
                    f"client {name!r} has input features {list(theirs)[:5]}..., others "
                    f"{list(features)[:5]}...: every client needs the same feature columns"
                )
            features = theirs
            for c in reply.config["concepts"]:  # type: ignore[union-attr]
                if c not in concepts:
                    concepts.append(str(c))
            graph = None
            if "graph" in reply.arrays:
                graph = Graph(tuple(reply.config["graph_names"]), reply.arrays["graph"])  # type: ignore[arg-type]
            reports[name] = (graph, float(reply.metrics["n"]))
        if not features:
            return state
        statistics = self._statistics(grid, state.statistics, features)
        state = replace(state, statistics=statistics)
        width = len(features) if statistics is None else state_width(statistics, features)
        nodes = (*concepts, self.task)
        if self.graph is None:
            graph = aggregate_graphs(reports, nodes, self.seed * 1000 + rnd, self.knowledge)
        else:
            graph = self.graph.restrict([v for v in nodes if v in self.graph]).expand(nodes)
        spec = ModelSpec.build(self.config, self.task, concepts, self.cardinalities, width, graph)
        params = state.params
        before_growth = state.before_growth
        if spec != state.spec:
            init_seed = int(self._rng(rnd, _SEED_INIT).integers(2**31))
            if (
                state.spec is not None
                and before_growth is None
                and len(concepts) > len(state.concepts)
            ):
                before_growth = state.params
            if self.config.regime == "sfcm-reinit" or params is None:
                params = adapt({}, None, spec, init_seed)
            else:
                params = adapt(params, state.spec, spec, init_seed)
        return replace(
            state,
            spec=spec,
            params=params,
            concepts=tuple(concepts),
            reports=reports,
            graph=graph,
            features=features,
            before_growth=before_growth,
        )

    def _statistics(
        self, grid: Grid, known: FeatureStatistics | None, features: tuple[str, ...]
    ) -> FeatureStatistics | None:
        """The inputs' pooled statistics (module docstring): those known when they
        cover ``features``, else asked of every connected site; ``None`` with
        ``input_scaling="none"``.

        Raises
        ------
        ProtocolError
            If no site answers.
        """
        if not self.config.scales_inputs:
            return None
        columns = input_columns(features)
        if known is not None and known.columns == columns:
            return known
        return gather_statistics(grid, columns, STATISTICS, "F-CMs")

    # ------------------------------------------------------------- training
    def _train(
        self, grid: Grid, state: FCMState, sampled: Sequence[int], rnd: int, record: dict
    ) -> FCMState:
        spec_json = state.spec.to_json()  # type: ignore[union-attr]
        arrays = {**state.params, **state.encoding()}  # type: ignore[dict-item]
        message = {
            n: Message(TRAIN, arrays=arrays, config={"round": rnd, "spec": spec_json})
            for n in sampled
        }
        replies = grid.send_and_receive(message)
        record["clients_answered"] = len(replies)
        if not replies:
            return state
        ordered = [replies[n] for n in sorted(replies)]
        params = module_wise_average(
            state.params,  # type: ignore[arg-type]
            [(float(r.metrics["n"]), r.arrays) for r in ordered],
        )
        losses = [r.metrics["loss"] for r in ordered if r.metrics["n"] > 0]
        record["train_loss"] = float(np.mean(losses)) if losses else float("nan")
        spent = [r.metrics["epsilon"] for r in ordered if "epsilon" in r.metrics]
        if spent:
            record["epsilon_max"] = float(max(spent))
            record["clients_out_of_budget"] = sum(r.metrics["n"] == 0 for r in ordered)
        return replace(state, params=params)

    # ----------------------------------------------------------- validation
    def _validate(self, grid: Grid, state: FCMState, rnd: int, record: dict) -> FCMState:
        spec, params = state.spec, state.params
        if spec is None or params is None:
            return state
        available = grid.available_ids()
        basis = (tuple(sorted(grid.node_name(n) for n in available)), spec.nodes)
        config = {"round": rnd, "spec": spec.to_json()}
        replies = grid.send_and_receive(
            {
                n: Message(EVALUATE, arrays={**params, **state.encoding()}, config=config)
                for n in available
            }
        )
        n = sum(r.metrics["n"] for r in replies.values())
        n_task = sum(r.metrics["n_task"] for r in replies.values())
        loss = sum(r.metrics["loss_sum"] for r in replies.values()) / n if n else float("nan")
        task_loss = (
            sum(r.metrics["task_loss_sum"] for r in replies.values()) / n_task
            if n_task
            else float("nan")
        )
        n_concept = sum(r.metrics["n_concept"] for r in replies.values())
        record.update(
            {
                "val_loss": loss,
                "val_task_loss": task_loss,
                "val_task_accuracy": _share(replies, "task_correct", n_task),
                "val_concept_accuracy": _share(replies, "concept_correct", n_concept),
                "concepts": len(state.concepts),
                "edges": state.graph.n_edges if state.graph is not None else 0,
                "params": int(sum(np.size(v) for v in params.values())),
            }
        )
        best_loss, best, since = state.best_loss, state.best, state.since_best
        if basis != state.basis:
            best_loss, since = float("inf"), 0
        if np.isfinite(loss) and loss < best_loss:
            best_loss, best, since = loss, (spec, dict(params), rnd), 0
        else:
            since += 1
        return replace(
            state,
            basis=basis,
            best_loss=best_loss,
            best=best,
            since_best=since,
            history=[*state.history, record],
        )

    def describe(self, state: FCMState) -> str:
        """Concepts and validation loss, for the progress bar."""
        if not state.history or "val_loss" not in state.history[-1]:
            return ""
        return f"{len(state.concepts)} concepts, val loss {state.history[-1]['val_loss']:.3f}"


def state_width(statistics: FeatureStatistics, features: Sequence[str]) -> int:
    """The model's input width under the federated encoding of ``features``."""
    return FeatureEncoder.from_statistics(statistics, features).width


def _share(replies: Mapping[int, Message], key: str, total: float) -> float:
    """``sum(reply.metrics[key]) / total`` over the replies; NaN when ``total`` is 0."""
    return sum(r.metrics[key] for r in replies.values()) / total if total else float("nan")
