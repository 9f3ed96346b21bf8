"""The FED-CD server (Algorithm 2): broadcast the belief, collect, aggregate, prune.

Each round the server sends the aggregated ``(γ, θ)`` (nothing in round 1: clients
start from the uniform belief), receives every participating client's ``(γ, θ)``,
its intervention targets and row count, and aggregates them by voting or by
proximity (:mod:`.aggregate`). Proximity distances are measured on the previous
round's aggregated graph; in round 1, on the vote of the round's replies (there is
no earlier graph). The aggregated graph of every round is made acyclic by breaking
each cycle at its least-supported edge (§7, "two-step pruning").

A table with continuous columns starts round 1 with the bins' exchange
(:mod:`fedstruct.fl.binning`): every connected client sends its columns' counts, sums
and centred sums of squares; the server fixes one shared grid per column and sends
it; every client sends its counts per grid cell; the server cuts at the pooled
quantiles, keeps the cut points in its state (a resumed run does not ask again) and
sends them with every FIT message, with which each client codes its own rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fedstruct.discovery.knowledge import load_knowledge
from fedstruct.errors import ProtocolError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.binning import QuantileBinning, QuantileBins
from fedstruct.fl.features import gather_statistics
from fedstruct.fl.secagg import SumResult
from fedstruct.fl.secagg.planes import directed_counts
from fedstruct.fl.summation import send_and_sum
from fedstruct.graphs.graph import Graph
from fedstruct.methods.fedcd.aggregate import (
    aggregate_beliefs,
    beliefs_from_average,
    edge_entropy,
    edge_entropy_of_shares,
    proximity_scores,
    proximity_weights,
    vote_weights,
)
from fedstruct.methods.fedcd.client import (
    BIN_COUNTS,
    BIN_CUTS,
    BIN_GRID,
    BIN_SUMMARY,
    FIT,
    NAMES,
    REFERENCE,
    SUMS,
    WEIGH,
)
from fedstruct.methods.fedcd.config import FedCDConfig
from fedstruct.methods.fedcd.knowledge import FixedEdges
from fedstruct.methods.fedcd.learner import Beliefs, final_graph

__all__ = ["FedCDServer", "FedCDState"]


@dataclass
class FedCDState:
    """The aggregated belief, its graph, what every round produced and the continuous
    columns' bins (``None`` before the bins' exchange, and for categorical data)."""

    names: tuple[str, ...] = ()
    beliefs: Beliefs | None = None
    graph: Graph | None = None
    round_graphs: list[Graph | None] = field(default_factory=list)
    client_graphs: list[dict[str, Graph]] = field(default_factory=list)
    history: list[dict[str, float]] = field(default_factory=list)
    bins: QuantileBins | None = None


checkpoint.register(FedCDState)
checkpoint.register(Beliefs)


class FedCDServer(ServerAlgorithm[FedCDState]):
    """FED-CD (Abyaneh et al. 2023, Algorithm 2), server side.

    Parameters
    ----------
    config
        FED-CD's settings.
    binning
        The continuous columns and how they are binned (the module docstring's
        exchange); ``None``: every column is categorical or ordinal already.
    """

    def __init__(self, config: FedCDConfig, binning: QuantileBinning | None = None) -> None:
        self.config = config
        self.rounds = config.rounds
        self.binning = binning if binning is not None and binning.columns else None
        self.knowledge = load_knowledge(config.knowledge)

    def init_state(self) -> FedCDState:
        """No belief yet: round 1 starts every client from the uniform one."""
        return FedCDState()

    def run_round(self, grid: Grid, state: FedCDState, rnd: int) -> FedCDState:
        """One round of Algorithm 2; see the module docstring."""
        if self.binning is not None and state.bins is None:
            state = dataclasses.replace(state, bins=self._bins(grid, self.binning))
        arrays = {}
        if state.beliefs is not None:
            arrays = {"gamma": state.beliefs.gamma, "theta": state.beliefs.theta}
        if self.binning is not None and state.bins is not None:
            arrays[BIN_CUTS] = state.bins.to_array(self.binning.columns)
        asked = grid.node_ids()
        if grid.secure_aggregation is not None:
            return self._round_securely(grid, state, asked, arrays, rnd)
        replies = grid.send_and_receive(
            {n: Message(FIT, arrays=arrays, config={"round": rnd}) for n in asked}
        )
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            "clients_answered": len(replies),
        }
        if not replies:
            return _with_record(state, record)
        ordered = sorted(replies.items())
        names = self._names(state, ordered, grid)
        beliefs = [Beliefs(r.arrays["gamma"], r.arrays["theta"]) for _, r in ordered]
        targets = [r.arrays["targets"].astype(int).tolist() for _, r in ordered]
        shares = vote_weights([r.metrics["n"] for _, r in ordered])
        fixed = FixedEdges.from_knowledge(self.knowledge, names)
        voted = _fix(fixed, aggregate_beliefs(beliefs, shares, self.config.belief_space))
        if self.config.aggregation == "vote":
            merged = voted
        else:
            reference = state.graph if state.graph is not None else self._graph(names, voted)
            scores = proximity_scores(
                reference.directed(),
                targets,
                self.config.mass,
                self.config.discount,
                self.config.min_mass,
                self.config.distance,
            )
            weights = proximity_weights(scores, self.config.temperature, self.config.weighting)
            merged = _fix(fixed, aggregate_beliefs(beliefs, weights, self.config.belief_space))
        graph = self._graph(names, merged)
        locals_ = {
            grid.node_name(n): self._graph(names, b)
            for (n, _), b in zip(ordered, beliefs, strict=True)
        }
        record["edges"] = graph.n_edges
        record["edge_entropy"] = edge_entropy([g.directed() for g in locals_.values()])
        record["train_loss"] = float(np.mean([r.metrics["loss"] for _, r in ordered]))
        return FedCDState(
            names=names,
            beliefs=merged,
            graph=graph,
            round_graphs=[*state.round_graphs, graph],
            client_graphs=[*state.client_graphs, locals_],
            history=[*state.history, record],
            bins=state.bins,
        )

    def _round_securely(
        self, grid: Grid, state: FedCDState, asked: list[int], arrays: dict, rnd: int
    ) -> FedCDState:
        """One round from secure sums (docs/privacy.md): the vote is ``Σ n_k σ_k / Σ n_k``
        (§5.1); proximity, a second sum over the same clients, ``Σ f_k σ_k / Σ f_k``
        with each client's own factor of eq. (1) for the reference graph
        (:func:`~.aggregate.proximity_factor`: its targets never leave it); the edge
        entropy from the summed marks of the clients' graphs, the loss from its sum.
        The clients' own graphs are not known, so ``client_graphs`` stays empty."""
        names = state.names or self._ask_names(grid)
        config = {"round": rnd, SUMS: 1}
        total = send_and_sum(grid, {n: Message(FIT, arrays=arrays, config=config) for n in asked})
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            "clients_answered": len(total.nodes),
            **({"withheld_answers": total.withheld} if total.withheld else {}),
        }
        if not total.nodes:
            return _with_record(state, record)
        space = self.config.belief_space
        fixed = FixedEdges.from_knowledge(self.knowledge, names)
        n = float(total.metrics["n"])
        s = total.arrays
        voted = _fix(fixed, beliefs_from_average(s["gamma"] / n, s["theta"] / n, space))
        merged: Beliefs | None = voted
        if self.config.aggregation != "vote":
            reference = state.graph if state.graph is not None else self._graph(names, voted)
            merged = self._proximity(grid, total, reference.directed())
            if merged is None:  # withheld: fewer than min_clients weighed
                return _with_record(state, record)
            merged = _fix(fixed, merged)
        graph = self._graph(names, merged)
        clients = len(total.nodes)
        record["edges"] = graph.n_edges
        shares = directed_counts(s["graph"]) / clients
        record["edge_entropy"] = edge_entropy_of_shares(shares)
        record["train_loss"] = float(total.metrics["loss"]) / clients
        return FedCDState(
            names=names,
            beliefs=merged,
            graph=graph,
            round_graphs=[*state.round_graphs, graph],
            client_graphs=[*state.client_graphs, {}],
            history=[*state.history, record],
            bins=state.bins,
        )

    def _proximity(self, grid: Grid, fit: SumResult, reference: np.ndarray) -> Beliefs | None:
        """Eq. (1)-(2) as a ratio of two secure sums over the clients of ``fit``
        (``None`` if the sum is withheld)."""
        request = {n: Message(WEIGH, arrays={REFERENCE: reference}) for n in fit.nodes}
        total = send_and_sum(grid, request)
        if not total.nodes:
            return None
        s = total.arrays
        factor = s["factor"]
        with np.errstate(invalid="ignore", divide="ignore"):
            gamma, theta = s["gamma"] / factor, s["theta"] / factor
        if "plain_gamma" in s:  # normalize: equal weights where no reliability is > 0
            clients = len(total.nodes)
            gamma = np.where(factor > 0, gamma, s["plain_gamma"] / clients)
            theta = np.where(factor > 0, theta, s["plain_theta"] / clients)
        return beliefs_from_average(gamma, theta, self.config.belief_space)

    @staticmethod
    def _ask_names(grid: Grid) -> tuple[str, ...]:
        """The variables' names, asked of every connected client once (the FIT
        replies of a secure sum carry none).

        Raises
        ------
        ProtocolError
            If no client answers, or clients hold different variables.
        """
        replies = grid.exchange_outside_rounds({n: Message(NAMES) for n in grid.connected_ids()})
        if not replies:
            raise ProtocolError("no client answered FED-CD's names step")
        return FedCDServer._names(FedCDState(), sorted(replies.items()), grid)

    @staticmethod
    def _bins(grid: Grid, binning: QuantileBinning) -> QuantileBins:
        """The bins' exchange (module docstring) with every connected client, outside
        the participation model (like FedAvg's statistics step).

        Raises
        ------
        ProtocolError
            If no client answers a step.
        DataError
            If a column has no value at any client.
        """
        if grid.secure_aggregation is not None:
            return FedCDServer._bins_securely(grid, binning)
        nodes = grid.connected_ids()
        summaries = grid.exchange_outside_rounds({n: Message(BIN_SUMMARY) for n in nodes})
        if not summaries:
            raise ProtocolError("no client answered FED-CD's bins step (column summaries)")
        edges = binning.edges([summaries[n].arrays for n in sorted(summaries)])
        asked = {n: Message(BIN_COUNTS, arrays={BIN_GRID: edges}) for n in sorted(summaries)}
        counts = grid.exchange_outside_rounds(asked)
        return binning.cuts(edges, [counts[n].arrays["counts"] for n in sorted(counts)])

    @staticmethod
    def _bins_securely(grid: Grid, binning: QuantileBinning) -> QuantileBins:
        """The bins' exchange by secure sums: the columns' statistics as
        :func:`~fedstruct.fl.features.gather_statistics` pools them (two sums), then
        the sum of the sites' histograms.

        Raises
        ------
        ProtocolError
            If no client answers a step.
        """
        statistics = gather_statistics(grid, binning.features, BIN_SUMMARY, "FED-CD's bins")
        edges = binning.grids(statistics)
        nodes = grid.connected_ids()
        asked = {n: Message(BIN_COUNTS, arrays={BIN_GRID: edges}) for n in nodes}
        total = send_and_sum(grid, asked, outside_rounds=True)
        if not total.nodes:
            raise ProtocolError("no client answered FED-CD's bins step (histograms)")
        return binning.cuts(edges, [total.arrays["counts"]])

    def _graph(self, names: Sequence[str], beliefs: Beliefs) -> Graph:
        return final_graph(names, beliefs, self.config.acyclic)

    @staticmethod
    def _names(
        state: FedCDState, ordered: Sequence[tuple[int, Message]], grid: Grid
    ) -> tuple[str, ...]:
        names = state.names or tuple(ordered[0][1].config["names"])  # type: ignore[arg-type]
        for node, reply in ordered:
            theirs = tuple(reply.config["names"])  # type: ignore[arg-type]
            if theirs != names:
                raise ProtocolError(
                    f"client {grid.node_name(node)!r} has variables {list(theirs)}, others "
                    f"{list(names)}: FED-CD needs every client to hold the same variables, "
                    "in the same order"
                )
        return names

    def describe(self, state: FedCDState) -> str:
        """Edges of the aggregated graph, for the progress bar."""
        return f"{state.graph.n_edges} edges" if state.graph is not None else ""


def _fix(fixed: FixedEdges | None, beliefs: Beliefs) -> Beliefs:
    """``beliefs`` with the entries background knowledge fixes written (if any)."""
    return beliefs if fixed is None else fixed.apply(beliefs)


def _with_record(state: FedCDState, record: Mapping[str, float]) -> FedCDState:
    """The state after a round nobody answered: the belief stands, the round is logged."""
    return FedCDState(
        names=state.names,
        beliefs=state.beliefs,
        graph=state.graph,
        round_graphs=[*state.round_graphs, state.graph],
        client_graphs=[*state.client_graphs, {}],
        history=[*state.history, dict(record)],
        bins=state.bins,
    )
