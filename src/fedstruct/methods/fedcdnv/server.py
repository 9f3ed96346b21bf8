"""The FedCDnv server (Algorithm 1): integrate, judge definiteness, aggregate.

Round 1: collect every client's ``Pag_0``, ``n_k`` and variables; integrate the
adjacencies and arrowheads into ``G0`` over ``O`` (the union of the variables) and
build the status matrix on it (Theorem 3.1, Lemmas 3.2-3.3). FCI-base stops here and
aggregates the ``Pag_0`` (its ``"largest"`` rule).
Round 2: broadcast ``G0``; collect ``Pag_u``, the scaled p-values and the separating
sets; aggregate with TPSS (or the vote) into FedG (Algorithm 3). FeddG keeps FedG's
relationships that the status matrix of G0 calls definite (Algorithm 1, line 17:
"according to obtained stat"; ``definite_from="g0"``), or, with
``definite_from="fedg"``, those that a status matrix rebuilt on FedG calls definite.
Both rounds also record, per client, the CI test it ran and the rows behind its
tests (:attr:`FedCDnvState.site_tests`; not part of the algorithm).
With background knowledge (``knowledge``), G0 and FedG are made to respect it
(:func:`~fedstruct.discovery.background.respect_knowledge`: no ``forbidden_adjacent``
edge, no required adjacency a client found lost, the knowledge's marks) before a
status matrix is built on them; FeddG, a part of FedG, follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from fedstruct.discovery.background import respect_knowledge
from fedstruct.discovery.knowledge import as_rules, load_knowledge
from fedstruct.errors import DataError
from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint, from_json_bytes
from fedstruct.fl.secagg.planes import recombine
from fedstruct.fl.summation import send_and_sum
from fedstruct.graphs import ARROW, CIRCLE, NONE, Graph, union, union_names
from fedstruct.methods.fedcdnv.aggregate import Aggregation, ClientReport, aggregate, pair_key
from fedstruct.methods.fedcdnv.client import FRAME, INIT, MARKS, NAMES, UPDATE, VOTE
from fedstruct.methods.fedcdnv.config import FedCDnvConfig
from fedstruct.methods.fedcdnv.theory import definite_relations, observed_together, status_matrix

__all__ = ["FedCDnvServer", "FedCDnvState", "check_overlap", "definite_graph", "feddg_status"]


def check_overlap(variable_sets: dict[str, Sequence[str]]) -> None:
    """Assumption 2.3: every client shares at least one variable with another client.

    Raises
    ------
    DataError
        Naming the clients that share no variable with any other client.
    """
    if len(variable_sets) < 2:
        return
    lonely = [
        name
        for name, own in variable_sets.items()
        if not any(set(own) & set(other) for o, other in variable_sets.items() if o != name)
    ]
    if lonely:
        raise DataError(
            f"client(s) {lonely} share no variable with any other client (FedCDnv's "
            "Assumption 2.3); give them a variable that another client also observes"
        )


def _record_tests(state: FedCDnvState, grid: Grid, replies: dict[int, Message]) -> None:
    """Keep each replying client's test name and rows per test (its ``tests_*``
    metrics) in ``state.site_tests``."""
    for node, reply in sorted(replies.items()):
        entry: dict[str, float | str] = {
            key.removeprefix("tests_"): float(value)
            for key, value in reply.metrics.items()
            if key.startswith("tests_")
        }
        if "ci_test" in reply.config:
            entry["ci_test"] = str(reply.config["ci_test"])
        state.site_tests[grid.node_name(node)] = entry


def definite_graph(fed: Graph, stat: NDArray[np.int8]) -> Graph:
    """FeddG: FedG's edges whose relationship is definite causal (``stat = 2``:
    :func:`~fedstruct.methods.fedcdnv.theory.definite_relations`)."""
    causal, _ = definite_relations(fed, stat)
    return fed.with_marks(np.where(causal, fed.marks, NONE).astype(np.int8))


def feddg_status(
    definite_from: str, stat0: NDArray[np.int8], fed: Graph, together: NDArray[np.bool_]
) -> NDArray[np.int8]:
    """The status matrix FeddG is read from: G0's ``stat0`` (``"g0"``, Algorithm 1,
    line 17) or one rebuilt on FedG (``"fedg"``)."""
    if definite_from == "g0":
        return stat0.copy()
    return status_matrix(fed, together)


@dataclass
class FedCDnvState:
    """What the server holds between and after the rounds."""

    names: tuple[str, ...] = ()
    reports: dict[int, ClientReport] = field(default_factory=dict)
    g0: Graph | None = None
    stat0: NDArray[np.int8] | None = None
    aggregation: Aggregation | None = None
    #: The status matrix FeddG is read from (:func:`feddg_status`).
    stat: NDArray[np.int8] | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    #: Client name -> the CI test it ran (``ci_test``) and the rows behind its tests
    #: (``rows_min``, ``rows_median``) and the tests it skipped (``skipped``), as of
    #: its last reply (test-wise deletion of missing values: docs/fedcdnv.md).
    site_tests: dict[str, dict[str, float | str]] = field(default_factory=dict)
    #: Secure aggregation (FedCDnv-vote): node -> its variables, in place of
    #: ``reports`` (the server never holds a client's PAG).
    variables: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def graph(self) -> Graph | None:
        """FedG, once aggregated."""
        return None if self.aggregation is None else self.aggregation.graph


checkpoint.register(FedCDnvState)
checkpoint.register(ClientReport)
checkpoint.register(Aggregation)


class FedCDnvServer(ServerAlgorithm[FedCDnvState]):
    """Algorithm 1 on any grid (rounds: 2, or 1 for FCI-base)."""

    def __init__(self, config: FedCDnvConfig) -> None:
        self.config = config
        self.rounds = config.n_rounds
        self.knowledge = load_knowledge(config.knowledge)

    def init_state(self) -> FedCDnvState:
        """Nothing known before round 1."""
        return FedCDnvState()

    def run_round(self, grid: Grid, state: FedCDnvState, rnd: int) -> FedCDnvState:
        """Round 1: integrate ``Pag_0`` into ``G0``; round 2: C-Update and aggregation."""
        if grid.secure_aggregation is not None:  # FedCDnv-vote (the estimator checks)
            return self._integrate_securely(grid, state) if rnd == 1 else self._vote(grid, state)
        if rnd == 1:
            return self._integrate(grid, state)
        return self._aggregate(grid, state)

    def _integrate_securely(self, grid: Grid, state: FedCDnvState) -> FedCDnvState:
        """Round 1 by a secure sum: the variable names in the clear (schema: Assumption
        2.3 and the status matrix need who observes what), then ``G0`` from the sums of
        the clients' ``Pag_0`` adjacencies and arrowheads (a pair is adjacent, or has
        an arrowhead, where the sum is positive: :func:`~fedstruct.graphs.union`)."""
        named = grid.send_and_receive({n: Message(NAMES) for n in grid.node_ids()})
        variables = {n: tuple(r.config["names"]) for n, r in sorted(named.items())}  # type: ignore[arg-type]
        check_overlap({grid.node_name(n): v for n, v in variables.items()})
        names: list[str] = []
        for theirs in variables.values():
            names.extend(v for v in theirs if v not in names)
        request = {n: Message(MARKS, config={FRAME: names}) for n in variables}
        total = send_and_sum(grid, request)
        if not total.nodes:
            raise DataError(
                "no secure sum of round 1: fewer clients answered than secure aggregation "
                "needs (min_clients); FedCDnv-vote needs their PAGs' union"
            )
        g0 = self._respect(_union(names, total.arrays), None)
        kept = {n: variables[n] for n in total.nodes}
        stat0 = status_matrix(g0, observed_together(names, list(kept.values())))
        state = FedCDnvState(tuple(names), {}, g0, stat0, history=state.history, variables=kept)
        state.history.append(
            {
                "round": 1,
                "clients": len(kept),
                "variables": len(names),
                "g0_edges": g0.n_edges,
                "tests": float(total.metrics["tests"]),
                "excluded_constant": float(total.metrics["excluded"]),
            }
        )
        return state

    def _vote(self, grid: Grid, state: FedCDnvState) -> FedCDnvState:
        """Round 2 of FedCDnv-vote by a secure sum: per pair observed together, how
        many observers hold it adjacent and how many observe it; where they disagree,
        ``val = Σ n_k obs (±1) / Σ n_k obs`` (eq. 1 with every ``w_k = ±1``), kept iff
        positive; the marks from the summed arrowheads of ``Pag_u``
        (:func:`~fedstruct.methods.fedcdnv.aggregate.aggregate` with ``"vote"``)."""
        assert state.g0 is not None
        asked = [n for n in grid.node_ids() if n in state.variables]
        config = {"names": list(state.names), FRAME: list(state.names)}
        message = Message(VOTE, arrays={"g0": state.g0.marks}, config=config)
        total = send_and_sum(grid, {n: message for n in asked})
        if not total.nodes:
            raise DataError("no secure sum of round 2: FedCDnv-vote cannot aggregate")
        sums = total.arrays
        names = state.names
        found = _union(names, sums)
        held, weight = recombine(sums, "held"), recombine(sums, "weight")
        adjacent = np.zeros((len(names), len(names)), dtype=bool)
        decisions: dict[tuple[str, str], str | float] = {}
        for i, j in zip(*np.triu_indices(len(names), 1), strict=True):
            observers, holding = int(sums["observed"][i, j]), int(sums["adjacent"][i, j])
            if not observers:
                continue
            if holding in (0, observers):
                adjacent[i, j] = holding == observers
                continue
            val = float((2 * held[i, j] - weight[i, j]) / weight[i, j])
            decisions[(names[i], names[j])] = val
            adjacent[i, j] = val > 0
        adjacent |= adjacent.T
        voted = Graph(names, np.where(adjacent, found.marks, NONE).astype(np.int8))
        fed = self._respect(voted, found, state.g0)
        state.aggregation = Aggregation(fed, decisions)
        together = observed_together(names, [state.variables[n] for n in total.nodes])
        state.stat = status_matrix(fed, together)
        state.history.append(
            {
                "round": 2,
                "clients": len(total.nodes),
                "fed_edges": fed.n_edges,
                "level_one": 0,
                "level_two": len(decisions),
                "tests": float(total.metrics["tests"]),
            }
        )
        return state

    def _integrate(self, grid: Grid, state: FedCDnvState) -> FedCDnvState:
        replies = grid.send_and_receive({n: Message(INIT) for n in grid.node_ids()})
        if not replies:
            raise DataError("no client answered round 1; FedCDnv needs at least one PAG")
        reports = {}
        for node, reply in sorted(replies.items()):
            pag = Graph(reply.config["names"], reply.arrays["pag"])  # type: ignore[arg-type]
            reports[node] = ClientReport(grid.node_name(node), pag, int(reply.metrics["n"]))
        check_overlap({r.name: r.pag.names for r in reports.values()})
        names = tuple(union_names([r.pag for r in reports.values()]))
        g0 = self._respect(union([r.pag for r in reports.values()], names), None)
        together = observed_together(names, [r.pag.names for r in reports.values()])
        stat0 = status_matrix(g0, together)
        state = FedCDnvState(
            names, reports, g0, stat0, history=state.history, site_tests=state.site_tests
        )
        _record_tests(state, grid, replies)
        record = {
            "round": 1,
            "clients": len(reports),
            "variables": len(names),
            "g0_edges": g0.n_edges,
            "tests": float(sum(r.metrics["tests"] for r in replies.values())),
            "excluded_constant": float(sum(r.metrics["excluded"] for r in replies.values())),
        }
        if self.config.strategy == "largest":
            self._finish(state, list(reports.values()), together)
            record["fed_edges"] = state.graph.n_edges  # type: ignore[union-attr]
        state.history.append(record)
        return state

    def _aggregate(self, grid: Grid, state: FedCDnvState) -> FedCDnvState:
        assert state.g0 is not None and state.stat0 is not None
        asked = [n for n in grid.node_ids() if n in state.reports]
        g0 = Message(UPDATE, arrays={"g0": state.g0.marks}, config={"names": list(state.names)})
        replies = grid.send_and_receive({n: g0 for n in asked})
        reports = []
        for node, reply in sorted(replies.items()):
            first = state.reports[node]
            raw = from_json_bytes(reply.config["sepsets"])  # type: ignore[arg-type]
            sepsets = {pair_key(*key.split("|")): tuple(z) for key, z in raw.items()}
            pag = Graph(first.pag.names, reply.arrays["pag"])
            reports.append(ClientReport(first.name, pag, first.n, reply.arrays["pvalues"], sepsets))
        if not reports:
            raise DataError("no client answered round 2; FedCDnv cannot aggregate")
        _record_tests(state, grid, replies)
        together = observed_together(state.names, [r.pag.names for r in reports])
        self._finish(state, reports, together)
        state.history.append(
            {
                "round": 2,
                "clients": len(reports),
                "fed_edges": state.graph.n_edges,  # type: ignore[union-attr]
                "level_one": sum(v == "level 1" for v in state.aggregation.decisions.values()),  # type: ignore[union-attr]
                "level_two": sum(v != "level 1" for v in state.aggregation.decisions.values()),  # type: ignore[union-attr]
                "tests": float(sum(r.metrics["tests"] for r in replies.values())),
            }
        )
        return state

    def _finish(
        self, state: FedCDnvState, reports: list[ClientReport], together: NDArray[np.bool_]
    ) -> None:
        state.aggregation = aggregate(
            reports,
            state.names,
            self.config.strategy,
            stat=state.stat0,
            weight_count=self.config.weight_count,
        )
        found = union([r.pag for r in reports], state.names)
        fed = self._respect(state.aggregation.graph, found, state.g0)
        state.aggregation = Aggregation(fed, state.aggregation.decisions)
        assert state.stat0 is not None
        state.stat = feddg_status(self.config.definite_from, state.stat0, fed, together)

    def _respect(self, graph: Graph, *found: Graph | None) -> Graph:
        """``graph`` made to respect the knowledge (unchanged without one); ``found``:
        graphs over its variables whose adjacencies a required pair keeps (``None``:
        ``graph`` itself)."""
        rules = as_rules(self.knowledge, graph.names)
        if rules is None:
            return graph
        held = graph.adjacency()
        for other in found:
            if other is not None:
                held = held | other.adjacency()
        return graph.with_marks(respect_knowledge(graph.marks, rules, held))

    def describe(self, state: FedCDnvState) -> str:
        """Edges of G0 and FedG so far."""
        if state.g0 is None:
            return ""
        fed = state.graph
        return f"G0 {state.g0.n_edges} edges" + (f", FedG {fed.n_edges}" if fed else "")


def _union(names: Sequence[str], sums: Mapping[str, NDArray]) -> Graph:
    """:func:`~fedstruct.graphs.union` from the summed indicators of the graphs'
    adjacencies (``adjacent``) and adjacencies plus arrowheads (``marks``) over
    ``names``."""
    adjacent = np.asarray(sums["adjacent"])
    arrows = np.asarray(sums["marks"]) - adjacent
    marks = np.where(adjacent > 0, np.where(arrows > 0, ARROW, CIRCLE), NONE)
    return Graph(tuple(names), marks.astype(np.int8))
