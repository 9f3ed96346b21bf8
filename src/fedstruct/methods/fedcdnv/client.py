"""The FedCDnv client: local FCI, then C-Update against G0 (Algorithms 1 and 2).

Round 1 (``fedcdnv.init``): learn ``Pag_0`` on the local data (FCI or RFCI, one
cached CI test for everything) and send it with ``n_k`` and the variable names.
Round 2 (``fedcdnv.update``): receive ``G0``, run C-Update, and send ``Pag_u``, the
scaled and negated p-values (eq. 2) and the separating sets of the non-adjacent
pairs (variable names; Condition 3.7 needs them). Nothing else leaves the client:
graphs, counts, names and scaled p-values, and, with the replies of both rounds, the
CI test it ran (its name) and how many rows its tests used (fewest, median) and
skipped (the test-wise deletion of missing values).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.discovery import CITest, LocalResult, fci, make_ci_test, rfci
from fedstruct.discovery.knowledge import load_knowledge
from fedstruct.errors import DataError
from fedstruct.fl import Client, Message, handles, json_bytes
from fedstruct.fl.secagg.planes import PLANES, plane_names, planes
from fedstruct.graphs import ARROW, NONE, Graph
from fedstruct.methods.fedcdnv.config import FedCDnvConfig
from fedstruct.methods.fedcdnv.pvalues import independence_evidence, scale_pvalues
from fedstruct.methods.fedcdnv.update import c_update

__all__ = ["FRAME", "INIT", "MARKS", "NAMES", "UPDATE", "VOTE", "FedCDnvClient"]

INIT = "fedcdnv.init"
UPDATE = "fedcdnv.update"
#: FedCDnv-vote with secure aggregation: round 1 asks the variable names in the clear
#: (:data:`NAMES`), then the sums of the clients' ``Pag_0`` adjacencies and arrowheads
#: over the union of the names (:data:`MARKS`, config :data:`FRAME`); round 2 the sums
#: of the vote over ``Pag_u`` (:data:`VOTE`).
NAMES = "fedcdnv.names"
MARKS = "fedcdnv.marks"
VOTE = "fedcdnv.vote"
FRAME = "frame"


def _init_bound(client: FedCDnvClient, _: Message) -> int:
    d = len(client.data.variables)
    return d * d + client.names_entries + 9


def _update_bound(client: FedCDnvClient, _: Message) -> int:
    # Pag_u and the p-values (d x d each), the separating sets as JSON: at most one
    # set of at most d names per pair, ~(name length + 3) bytes per name.
    d = len(client.data.variables)
    longest = max(len(v.encode()) for v in client.data.variables) + 3
    return 2 * d * d + math.ceil(d * d * d * longest / 16) + 12


class FedCDnvClient(Client):
    """One institution: its rows over its own variables ``O_k``.

    Parameters
    ----------
    data
        The client's data: categorical codes, numbers or both (``config.ci_test``;
        ``"auto"`` picks the test from the kinds and, on mixed columns, these rows:
        ``config.cg_min_rows``); missing values (``-1`` codes, NaN)
        are deleted test-wise.
    config
        FedCDnv's hyper-parameters.
    seed
        The run's seed (FedCDnv's client side draws nothing at random).
    progress
        Show the local adjacency search's progress on stderr (and its cost first on
        a wide table).
    kinds
        Variable -> kind (``"categorical"``, ``"ordinal"``, ``"continuous"``): the
        federation schema's on a user's files; the others get their dtype's kind.
    """

    def __init__(
        self,
        data: ClientData,
        *,
        config: FedCDnvConfig,
        seed: int = 0,
        progress: bool = False,
        kinds: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(data, seed=seed)
        self.config = config
        self.progress = progress
        self.kinds = {v: k for v, k in (kinds or {}).items() if v in data.rows.columns}
        self._result: LocalResult | None = None
        #: Round 1's search: the rows behind its tests and how many it computed.
        self._searched: dict[str, float] = {}
        self.names_entries = sum(max(1, math.ceil(len(v.encode()) / 8)) for v in data.variables)
        rows = data.rows
        constant = [v for v in data.variables if _observed(rows[v]).nunique() <= 1]
        #: Variables left out because they are constant here (``constant_columns="exclude"``).
        self.excluded: tuple[str, ...] = ()
        if constant and config.constant_columns == "exclude":
            self.excluded = tuple(constant)
        elif constant:
            raise DataError(
                f"client {data.name!r}: variable {constant[0]!r} is constant in its data, so "
                "no test can relate it to anything; drop the column or set "
                "constant_columns='exclude' to leave it out of this client's graph"
            )

    def learn(self) -> LocalResult:
        """``Pag_0`` and its evidence (learned once, kept for round 2)."""
        if self._result is None:
            cfg = self.config
            learner = fci if cfg.learner == "fci" else rfci
            kwargs: dict[str, Any] = {"alpha": cfg.alpha, "depth": cfg.depth}
            if self.progress:
                kwargs["progress"] = f"{self.data.name}: {cfg.learner.upper()} adjacency search"
            if cfg.learner == "fci":
                kwargs.update(pds_depth=cfg.pds_depth, workers=cfg.workers)
            ci_test = self._ci_test()
            if cfg.knowledge is not None:
                kwargs["knowledge"] = load_knowledge(cfg.knowledge).restrict(ci_test.names)  # type: ignore[union-attr]
            self._result = learner(ci_test, **kwargs)
            self._searched = {**ci_test.rows_summary(), "total": float(ci_test.n_tests)}
            # Round 2 computes again the few tests it shares with the search, as a
            # resumed run does (set_state): the search's cache, millions of tests on
            # hundreds of variables, is not held by every site until then.
            ci_test.forget()
        return self._result

    def _ci_test(self) -> CITest:
        """A new cached CI test over this client's rows (the excluded columns left out)."""
        cfg = self.config
        rows = self.data.rows.drop(columns=list(self.excluded))
        kinds = {v: k for v, k in self.kinds.items() if v not in self.excluded}
        return make_ci_test(
            rows,
            cfg.ci_test,
            kinds=kinds,
            small_sample=cfg.small_sample,
            dof=cfg.dof,
            missing="testwise",
            cg_min_rows=cfg.cg_min_rows,
            evidence=self.data.evidence,
            device=cfg.device,
        )

    def _test_report(self, ci_test: CITest) -> tuple[dict[str, str], dict[str, float]]:
        """The test's name (a config entry) and the rows behind the local search's tests
        (metrics: ``tests_rows_min``, ``tests_rows_median``, ``tests_skipped``,
        ``tests_total``), as of round 1's search."""
        self.learn()
        return {"ci_test": ci_test.kind}, {f"tests_{k}": v for k, v in self._searched.items()}

    @handles(INIT, max_entries=_init_bound, graph_arrays=("pag",))
    def init(self, msg: Message) -> Message:
        """Round 1: ``Pag_0``, ``n_k`` and the variable names."""
        result = self.learn()
        test, rows = self._test_report(result.ci_test)
        return Message(
            INIT,
            arrays={"pag": result.graph.marks},
            config={"names": list(result.names), **test},
            metrics={
                "n": self.data.n_rows,
                "tests": result.n_tests,
                "excluded": len(self.excluded),
                **rows,
            },
        )

    @handles(NAMES, max_entries=lambda c, m: c.names_entries)
    def names(self, msg: Message) -> Message:
        """Its variables' names (schema, not data), learning ``Pag_0`` first (a
        constant column it leaves out is not among them)."""
        return Message(NAMES, config={"names": list(self.learn().names)})

    @handles(
        MARKS,
        max_entries=lambda c, m: 2 * len(m.config[FRAME]) ** 2 + 2,  # type: ignore[arg-type]
        graph_arrays=("adjacent", "marks"),
        summable=True,
    )
    def marks(self, msg: Message) -> Message:
        """Round 1 of a secure sum: over the request's frame, ``Pag_0``'s adjacencies
        (0/1) and its adjacencies plus arrowheads (:func:`_indicators`; the sums'
        positive entries give ``G0``, the union of :func:`~fedstruct.graphs.union`),
        the tests it ran and the columns it left out."""
        result = self.learn()
        frame = [str(v) for v in msg.config[FRAME]]  # type: ignore[union-attr]
        adjacent, marks = _indicators(_in_frame(result.graph, frame))
        return Message(
            MARKS,
            arrays={"adjacent": adjacent, "marks": marks},
            metrics={"tests": result.n_tests, "excluded": len(self.excluded)},
        )

    @handles(
        VOTE,
        max_entries=lambda c, m: (3 + 2 * PLANES) * len(m.config[FRAME]) ** 2 + 1,  # type: ignore[arg-type]
        graph_arrays=(
            "adjacent",
            "marks",
            "observed",
            *plane_names("held"),
            *plane_names("weight"),
        ),
        summable=True,
    )
    def vote(self, msg: Message) -> Message:
        """Round 2 of FedCDnv-vote as a secure sum: C-Update against ``G0``, then over
        the frame ``Pag_u``'s indicators (:func:`_indicators`), the pairs it observes,
        and ``n_k`` times the pairs it holds adjacent and times those it observes, as
        0/1 planes (:mod:`fedstruct.fl.secagg.planes`): the vote's ``val`` of eq. 1
        with every ``w_k = ±1`` is ``(2 held - weight) / weight`` of their sums."""
        pag_u, tests = self._updated(msg)
        frame = [str(v) for v in msg.config[FRAME]]  # type: ignore[union-attr]
        adjacent, marks = _indicators(_in_frame(pag_u, frame))
        inside = np.zeros(len(frame), dtype=bool)
        inside[[frame.index(v) for v in pag_u.names]] = True
        observed = np.outer(inside, inside).astype(np.int64)
        np.fill_diagonal(observed, 0)
        n = self.data.n_rows
        arrays = {"adjacent": adjacent, "marks": marks, "observed": observed}
        arrays.update(planes("held", n, adjacent))
        arrays.update(planes("weight", n, observed))
        return Message(VOTE, arrays=arrays, metrics={"tests": tests})

    def _updated(self, msg: Message) -> tuple[Graph, int]:
        """C-Update against the message's ``G0``: ``Pag_u`` and the tests it ran."""
        result = self.learn()
        cfg = self.config
        g0 = Graph(msg.config["names"], msg.arrays["g0"])  # type: ignore[arg-type]
        before = _asked(result.ci_test)
        pag_u = c_update(result.graph, g0, result.ci_test, cfg.alpha, cfg.update_depth)
        return pag_u, _asked(result.ci_test) - before

    @handles(UPDATE, max_entries=_update_bound, graph_arrays=("pag",))
    def update(self, msg: Message) -> Message:
        """Round 2: C-Update against ``G0``; ``Pag_u``, scaled p-values, separating sets."""
        result = self.learn()
        cfg = self.config
        before = _asked(result.ci_test)
        pag_u, _ = self._updated(msg)
        names = result.names
        sepsets = {
            f"{names[i]}|{names[j]}": [names[k] for k in z]
            for (i, j), z in result.sepsets.items()
            if not pag_u.is_adjacent(names[i], names[j])
        }
        evidence = independence_evidence(pag_u, result.ci_test, result.pvalues, cfg.stability_depth)
        scaled = scale_pvalues(evidence, cfg.alpha, cfg.theta1, cfg.theta2)
        np.fill_diagonal(scaled, 0.0)
        test, rows = self._test_report(result.ci_test)
        asked = _asked(result.ci_test) - before
        result.ci_test.forget()  # the client's last tests: nothing asks them again
        return Message(
            UPDATE,
            arrays={"pag": pag_u.marks, "pvalues": scaled},
            config={"sepsets": json_bytes(sepsets), **test},
            metrics={"n": self.data.n_rows, "tests": asked, **rows},
        )

    def get_state(self) -> dict[str, Any]:
        """The local result for round 2: graph, separating sets and p-values, and the
        rows behind the round's tests (the CI test itself, which holds the rows, is
        rebuilt from this client's data by :meth:`set_state`). Not its cache of
        p-values: round 2 computes again the few tests it needs (the same p-values), and
        a checkpoint of every cached test grew to gigabytes on hundreds of variables
        (pigs: 1.3 GB for 4 sites)."""
        if self._result is None:
            return {}
        fields = {f.name: getattr(self._result, f.name) for f in dataclasses.fields(LocalResult)}
        fields.pop("ci_test")
        return {"result": fields, "searched": dict(self._searched)}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state`."""
        if "result" not in state:
            self._result = None
            return
        self._result = LocalResult(**state["result"], ci_test=self._ci_test())
        self._searched = dict(state["searched"])


def _asked(ci_test: CITest) -> int:
    """The tests asked of ``ci_test`` so far, computed or recalled from its cache: what
    round 2 counts (a resumed run's test, rebuilt without round 1's cache, computes what
    the uninterrupted run recalls; both ask the same)."""
    return ci_test.n_tests + ci_test.n_cache_hits


def _in_frame(graph: Graph, frame: list[str]) -> np.ndarray:
    """``graph``'s endpoint marks placed in the ``frame`` of names (zeros elsewhere)."""
    position = [frame.index(v) for v in graph.names]
    out = np.zeros((len(frame), len(frame)), dtype=np.int64)
    out[np.ix_(position, position)] = graph.marks
    return out


def _indicators(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A PAG's adjacency (0/1) and its adjacency plus arrowheads (1 at a tail or
    circle, 2 at an arrowhead): both endpoint-mark matrices, which the audit checks as
    graphs; the arrowheads' sum is the second's sum minus the first's."""
    adjacent = (m != NONE).astype(np.int64)
    return adjacent, adjacent + (m == ARROW).astype(np.int64)


def _observed(column: Any) -> Any:
    """A column's observed values: without NaN (``nunique`` drops it) or the code
    ``-1`` of a missing level."""
    if column.dtype.kind in "iu":
        return column[column != -1]
    return column
