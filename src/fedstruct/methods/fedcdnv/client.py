"""The FedCDnv client: local FCI, then C-Update against G0 (Algorithms 1 and 2).

Round 1 (``fedcdnv.init``): learn ``Pag_0`` on the local data (FCI or RFCI, one
cached CI test for everything) and send it with ``n_k`` and the variable names.
Round 2 (``fedcdnv.update``): receive ``G0``, run C-Update, and send ``Pag_u``, the
scaled and negated p-values (eq. 2) and the separating sets of the non-adjacent
pairs (variable names; Condition 3.7 needs them). Nothing else leaves the client:
graphs, counts, names and scaled p-values.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.discovery import CITest, LocalResult, fci, make_ci_test, rfci
from fedstruct.errors import DataError
from fedstruct.fl import Client, Message, handles, json_bytes
from fedstruct.graphs import Graph
from fedstruct.methods.fedcdnv.config import FedCDnvConfig
from fedstruct.methods.fedcdnv.pvalues import independence_evidence, scale_pvalues
from fedstruct.methods.fedcdnv.update import c_update

__all__ = ["INIT", "UPDATE", "FedCDnvClient"]

INIT = "fedcdnv.init"
UPDATE = "fedcdnv.update"


def _init_bound(client: FedCDnvClient, _: Message) -> int:
    d = len(client.data.variables)
    return d * d + client.names_entries + 5


def _update_bound(client: FedCDnvClient, _: Message) -> int:
    # Pag_u and the p-values (d x d each), the separating sets as JSON: at most one
    # set of at most d names per pair, ~(name length + 3) bytes per name.
    d = len(client.data.variables)
    longest = max(len(v.encode()) for v in client.data.variables) + 3
    return 2 * d * d + math.ceil(d * d * d * longest / 16) + 8


class FedCDnvClient(Client):
    """One institution: its rows over its own variables ``O_k``.

    Parameters
    ----------
    data
        The client's discrete (G², χ²) or continuous (Fisher-z) data.
    config
        FedCDnv's hyper-parameters.
    seed
        The run's seed (FedCDnv's client side draws nothing at random).
    progress
        Show the local adjacency search's progress on stderr (and its cost first on
        a wide table).
    """

    def __init__(
        self, data: ClientData, *, config: FedCDnvConfig, seed: int = 0, progress: bool = False
    ) -> None:
        super().__init__(data, seed=seed)
        self.config = config
        self.progress = progress
        self._result: LocalResult | None = None
        self.names_entries = sum(max(1, math.ceil(len(v.encode()) / 8)) for v in data.variables)
        rows = data.rows
        constant = [v for v in data.variables if rows[v].nunique() <= 1]
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
            self._result = learner(self._ci_test(), **kwargs)
        return self._result

    def _ci_test(self) -> CITest:
        """A new cached CI test over this client's rows (the excluded columns left out)."""
        cfg = self.config
        rows = self.data.rows.drop(columns=list(self.excluded))
        return make_ci_test(rows, cfg.ci_test, small_sample=cfg.small_sample, dof=cfg.dof)

    @handles(INIT, max_entries=_init_bound, graph_arrays=("pag",))
    def init(self, msg: Message) -> Message:
        """Round 1: ``Pag_0``, ``n_k`` and the variable names."""
        result = self.learn()
        return Message(
            INIT,
            arrays={"pag": result.graph.marks},
            config={"names": list(result.names)},
            metrics={
                "n": self.data.n_rows,
                "tests": result.n_tests,
                "excluded": len(self.excluded),
            },
        )

    @handles(UPDATE, max_entries=_update_bound, graph_arrays=("pag",))
    def update(self, msg: Message) -> Message:
        """Round 2: C-Update against ``G0``; ``Pag_u``, scaled p-values, separating sets."""
        result = self.learn()
        cfg = self.config
        g0 = Graph(msg.config["names"], msg.arrays["g0"])  # type: ignore[arg-type]
        before = result.ci_test.n_tests
        pag_u = c_update(result.graph, g0, result.ci_test, cfg.alpha, cfg.update_depth)
        names = result.names
        sepsets = {
            f"{names[i]}|{names[j]}": [names[k] for k in z]
            for (i, j), z in result.sepsets.items()
            if not pag_u.is_adjacent(names[i], names[j])
        }
        evidence = independence_evidence(pag_u, result.ci_test, result.pvalues, cfg.stability_depth)
        scaled = scale_pvalues(evidence, cfg.alpha, cfg.theta1, cfg.theta2)
        np.fill_diagonal(scaled, 0.0)
        return Message(
            UPDATE,
            arrays={"pag": pag_u.marks, "pvalues": scaled},
            config={"sepsets": json_bytes(sepsets)},
            metrics={"n": self.data.n_rows, "tests": result.ci_test.n_tests - before},
        )

    def get_state(self) -> dict[str, Any]:
        """The local result for round 2: graph, separating sets, p-values and the CI
        test's cache (as arrays; the test itself, which holds the rows, is rebuilt
        from this client's data by :meth:`set_state`)."""
        if self._result is None:
            return {}
        fields = {f.name: getattr(self._result, f.name) for f in dataclasses.fields(LocalResult)}
        ci_test = fields.pop("ci_test")
        return {"result": fields, "ci_cache": ci_test.cache_arrays()}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state`."""
        if "result" not in state:
            self._result = None
            return
        ci_test = self._ci_test()
        ci_test.absorb_arrays(state["ci_cache"])
        self._result = LocalResult(**state["result"], ci_test=ci_test)
