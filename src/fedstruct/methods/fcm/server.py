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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import knowledge_dag
from fedstruct.discovery.knowledge import Knowledge, load_knowledge
from fedstruct.errors import ProtocolError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics, gather_statistics
from fedstruct.fl.secagg.planes import directed_counts, recombine
from fedstruct.fl.summation import send_and_sum
from fedstruct.graphs.combine import StrengthVote, strength_vote, vote_from_sums
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.projection import project_to_dag
from fedstruct.methods.fcm.client import (
    CURVE,
    DESCRIBE,
    EFFECT,
    ENCODING,
    EVALUATE,
    FRAME,
    ORDER,
    STATISTICS,
    SUMS,
    TRAIN,
    VOTE,
    input_columns,
)
from fedstruct.methods.fcm.concept_metrics import causal_effect, intervention_auc
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fcm.interventions import level_order
from fedstruct.methods.fcm.model import ModelSpec, adapt

__all__ = ["FCMServer", "FCMState", "VoteSums", "aggregate_graphs", "module_wise_average"]

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
    #: Secure aggregation: the strength vote's sums (:class:`VoteSums`) over the
    #: clients counted so far (``graph_memory="all"``) or this round's.
    votes: VoteSums | None = None

    def encoder(self) -> FeatureEncoder | None:
        """The inputs' federated encoding (``None`` without the statistics step)."""
        if self.statistics is None:
            return None
        return FeatureEncoder.from_statistics(self.statistics, self.features)

    def encoding(self) -> dict[str, NDArray]:
        """The encoding's arrays a TRAIN or EVALUATE message carries (none without)."""
        encoder = self.encoder()
        return {} if encoder is None else encoder.to_arrays(ENCODING)


@dataclass
class VoteSums:
    """The strength vote's weighted sums (``forward``, ``absent``, ``observed`` of
    :class:`~fedstruct.graphs.combine.StrengthVote`) over a frame of ``names`` (the
    union of the clients' graph variables), and the clients whose terms are in them.
    A client's graph and row count do not change during a run, so each client is
    counted once (``graph_memory="all"``: :meth:`FCMServer._vote_securely`)."""

    names: tuple[str, ...] = ()
    forward: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    absent: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    observed: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    counted: tuple[str, ...] = ()

    def on(self, names: Sequence[str]) -> VoteSums:
        """The sums in the frame ``names`` (a superset of this frame's names or a subset
        of them: pairs outside this frame have no observer)."""
        names = tuple(names)
        here = [i for i, v in enumerate(names) if v in self.names]
        there = [self.names.index(names[i]) for i in here]
        moved = []
        for matrix in (self.forward, self.absent, self.observed):
            out = np.zeros((len(names), len(names)), dtype=np.int64)
            out[np.ix_(here, here)] = matrix[np.ix_(there, there)]
            moved.append(out)
        return VoteSums(names, *moved, counted=self.counted)


checkpoint.register(FCMState)
checkpoint.register(VoteSums)
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
    return _project(vote, nodes, knowledge)


def _project(vote: StrengthVote, nodes: Sequence[str], knowledge: Knowledge | None) -> Graph:
    """The vote's DAG: cycles broken at their least-supported edge, shaped by the
    knowledge's statements among ``nodes`` when there are any (:func:`aggregate_graphs`)."""
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
    monitor
        Called after each round's validation with the round, the spec and the
        parameters; what it returns joins the round's record (the run's
        representation metrics on the test rows the server holds, when it holds
        some: :func:`fedstruct.methods.fcm.run.run_fcm`).
    """

    def __init__(
        self,
        config: FCMConfig,
        task: str,
        cardinalities: Mapping[str, int],
        seed: int,
        graph: Graph | None = None,
        monitor: Callable[[int, ModelSpec, Mapping[str, NDArray]], Mapping[str, float]]
        | None = None,
    ) -> None:
        self.config = config
        self.task = task
        self.cardinalities = dict(cardinalities)
        self.seed = int(seed)
        self.graph = graph
        self.monitor = monitor
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
        secure = grid.secure_aggregation is not None
        config = {"round": rnd, **({SUMS: 1} if secure else {})}
        replies = grid.send_and_receive({n: Message(DESCRIBE, config=config) for n in sampled})
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
            if secure:
                continue
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
        if self.graph is None and secure:
            votes = self._vote_securely(grid, state.votes, replies)
            state = replace(state, votes=votes)
            graph = _vote(votes.on(nodes), self.seed * 1000 + rnd, self.knowledge)
        elif self.graph is None:
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

    def _vote_securely(
        self, grid: Grid, votes: VoteSums | None, replies: Mapping[int, Message]
    ) -> VoteSums:
        """The strength vote's sums by secure aggregation (§4.2.1): the frame is the
        union of the clients' graph variables (names, sent in the clear like the
        concept names); the clients with a graph that are not yet counted (with
        ``graph_memory="all"``; every one this round's with ``"round"``) send their
        terms (:meth:`~fedstruct.methods.fcm.client.FCMClient.vote`), whose sum is
        added. A sum that is withheld (fewer than ``min_clients`` new clients) leaves
        them uncounted, to be asked again in a later round."""
        keep = votes is not None and self.config.graph_memory == "all"
        votes = votes if keep and votes is not None else VoteSums()
        names = list(votes.names)
        asked = []
        for node, reply in sorted(replies.items()):
            theirs = [str(v) for v in reply.config.get("graph_names", [])]  # type: ignore[union-attr]
            names.extend(v for v in theirs if v not in names)
            if theirs and grid.node_name(node) not in votes.counted:
                asked.append(node)
        votes = votes.on(names)
        if not asked:
            return votes
        request = {n: Message(VOTE, config={FRAME: names}) for n in asked}
        total = send_and_sum(grid, request)
        if not total.nodes:
            return votes
        counted = (*votes.counted, *(grid.node_name(n) for n in total.nodes))
        sums = [votes.forward, votes.absent, votes.observed]
        added = [
            directed_counts(recombine(total.arrays, "marks")),
            recombine(total.arrays, "absent"),
            recombine(total.arrays, "observed"),
        ]
        return VoteSums(tuple(names), *(a + b for a, b in zip(sums, added, strict=True)), counted)

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
        if grid.secure_aggregation is not None:
            return self._train_securely(grid, state, message, record)
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

    def _train_securely(
        self, grid: Grid, state: FCMState, message: dict[int, Message], record: dict
    ) -> FCMState:
        """§4.2.3 by one secure sum: ``φ_j = Σ_{k ∈ U_j} n_k φ_j^(k) / Σ_{k ∈ U_j} n_k``
        from every client's ``n_k φ_j^(k)`` and ``n_k`` (zeros for the modules it did
        not train, :func:`~fedstruct.methods.fcm.client._module_summands`); the mean
        loss over the clients that trained; with DP the clients' mean ε (the largest
        is not a sum) and how many were out of budget."""
        request = {
            n: Message(m.kind, m.arrays, {**m.config, SUMS: 1}, m.metrics)
            for n, m in message.items()
        }
        total = send_and_sum(grid, request)
        record["clients_answered"] = len(total.nodes)
        if total.withheld:
            record["withheld_answers"] = total.withheld
        if not total.nodes:
            return state
        assert state.params is not None
        params = {}
        for name, value in state.params.items():
            count = total.metrics.get(f"count:{name}", 0)
            held = count > 0 and name in total.arrays
            params[name] = (
                (total.arrays[name] / count).astype(np.float32) if held else np.array(value)
            )
        trained = total.metrics["trained"]
        record["train_loss"] = total.metrics["loss"] / trained if trained else float("nan")
        if "epsilon" in total.metrics:
            record["epsilon_mean"] = total.metrics["epsilon"] / len(total.nodes)
            record["clients_out_of_budget"] = total.metrics["out_of_budget"]
        return replace(state, params=params)

    # ----------------------------------------------------------- validation
    def _validate(self, grid: Grid, state: FCMState, rnd: int, record: dict) -> FCMState:
        spec, params = state.spec, state.params
        if spec is None or params is None:
            return state
        available = grid.available_ids()
        basis = (tuple(sorted(grid.node_name(n) for n in available)), spec.nodes)
        graph = state.graph if state.graph is not None else Graph.empty(spec.nodes)
        order = level_order(graph, spec.task, spec.concepts)
        config = {"round": rnd, "spec": spec.to_json(), ORDER: order}
        request = {
            n: Message(EVALUATE, arrays={**params, **state.encoding()}, config=config)
            for n in available
        }
        if grid.secure_aggregation is not None:  # the replies are sums already
            summed = send_and_sum(grid, request)
            replies = {0: Message(EVALUATE, metrics=summed.metrics)} if summed.nodes else {}
        else:
            replies = grid.send_and_receive(request)
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
                **_concept_sums(spec, replies, n, n_task),
            }
        )
        if self.monitor is not None:
            record.update(self.monitor(rnd, spec, params))
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


def _vote(votes: VoteSums, seed: int, knowledge: Knowledge | None) -> Graph:
    """:func:`aggregate_graphs` from the vote's sums (the same graph: the sums of
    integer terms are exact)."""
    if not votes.observed.any():
        return Graph.empty(votes.names)
    vote = vote_from_sums(votes.names, votes.forward, votes.absent, votes.observed, seed=seed)
    return _project(vote, votes.names, knowledge)


def _concept_sums(
    spec: ModelSpec, replies: Mapping[int, Message], n: float, n_task: float
) -> dict[str, float]:
    """The round's ``val_intervention_auc`` (the mean task accuracy of the summed
    intervention curve) and ``val_cace_mean`` (the mean CaCE over the concepts, from
    the summed ``E[p(Y | do(C = s))]``) over the clients' held-out rows; none for
    the opaque model or without rows."""
    metrics = [r.metrics for r in replies.values()]
    if spec.architecture == "opaque" or not spec.concepts or not metrics or not n:
        return {}
    out = {}
    points = len(spec.concepts) + 1
    if n_task:
        curve = [sum(m.get(f"{CURVE}{t}", 0.0) for m in metrics) / n_task for t in range(points)]
        out["val_intervention_auc"] = intervention_auc(curve)
    k_task = spec.cardinalities[spec.task]
    effects = []
    for j, c in enumerate(spec.concepts):
        means = {
            s: np.array(
                [sum(m.get(f"{EFFECT}{j}:{s}:{y}", 0.0) for m in metrics) for y in range(k_task)]
            )
            / n
            for s in range(spec.cardinalities[c])
        }
        effects.append(causal_effect(means))
    out["val_cace_mean"] = float(np.mean(effects))
    return out
