"""The pooled-discovery estimator, :class:`FedFCI` (docs/fedfci.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.discovery.kinds import CG_MIN_ROWS
from fedstruct.discovery.pds import AUTO
from fedstruct.errors import DataError
from fedstruct.estimators.graph_learner import GraphLearner
from fedstruct.graphs.graph import NONE, Graph
from fedstruct.graphs.io import from_graph_json, to_graph_json
from fedstruct.methods.fedfci.client import FedFCIClient
from fedstruct.methods.fedfci.config import FedFCIConfig
from fedstruct.methods.fedfci.server import FedFCIServer, FedFCIState
from fedstruct.privacy.audit import ANONYMITY

if TYPE_CHECKING:
    from fedstruct.discovery.knowledge import Knowledge
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["FedFCI"]


class FedFCI(
    GraphLearner,
    method="fedfci",
    config=FedFCIConfig,
    client=FedFCIClient,
    server=FedFCIServer,
):
    """Pooled federated discovery, scikit-learn style: PC, FCI or RFCI whose every CI
    test is computed from the sites' sufficient statistics summed together, so that
    the graph is the one the same search gives on the sites' rows pooled.

    Parameters
    ----------
    kinds
        Variable -> kind (``"categorical"``, ``"ordinal"``, ``"continuous"``): the
        federation schema's on a user's files; the others get their dtype's kind.
    levels
        Variable -> its number of levels, public (the federation schema's, a network's
        states): what a run with ``dp_epsilon`` reads instead of the sites' counts.
    seed
        The run's seed (participation draws; the search is deterministic).
    participation
        Who takes part (every site must answer every exchange).
    bootstrap, subsample, correct_duplicates, jobs
        The site-resampled replicates of :class:`~fedstruct.estimators.GraphLearner`.
    secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s.
    algorithm, ci_test, alpha, ...
        Every other parameter is a field of :class:`FedFCIConfig`, documented there
        with its default (``fit`` builds ``config_`` from them and checks them
        together).

    Attributes
    ----------
    graph_ : Graph
        The PAG (FCI, RFCI) or CPDAG (PC) over the federation's variables; the
        undecided pairs are not in it.
    undecided_ : list of tuple
        Pairs of variables no ``min_sites`` sites measure together: never tested, so
        neither adjacent nor separated.
    sepsets_ : dict
        Non-adjacent pair -> its separating set (names).
    pvalues_ : pandas.DataFrame
        Per pair, the p-value of its separating test (non-adjacent) or the largest over
        its tests (adjacent); NaN where none was performed.
    ci_test_ : str
        The test the run chose (``ci_test="auto"``) or was given.
    excluded_ : tuple
        Variables left out as constant over the pooled rows.
    n_tests_, exchanges_ : int
        CI tests computed, exchanges of statistics taken.
    dp_epsilon_spent_ : float or None
        With ``dp_epsilon``: each site's ε after the run's releases.
    """

    secure_aggregation_refusal = ""

    def __init__(
        self,
        *,
        kinds: Mapping[str, str] | None = None,
        levels: Mapping[str, int] | None = None,
        seed: int = 0,
        participation: Participation | None = None,
        bootstrap: int | None = None,
        subsample: float | None = None,
        correct_duplicates: bool = True,
        jobs: int | None = None,
        algorithm: str = "fci",
        ci_test: str = "auto",
        cg_min_rows: int = CG_MIN_ROWS,
        alpha: float = 0.05,
        depth: int | None = None,
        pds_depth: int | str | None = AUTO,
        small_sample: str = "toolbox",
        dof: str = "adjusted",
        min_sites: int = 2,
        min_contribution_rows: int = ANONYMITY,
        constant_columns: str = "error",
        knowledge: str | Knowledge | None = None,
        pair_window: int | str | None = AUTO,
        batch_megabytes: int = 512,
        max_exchanges: int = 200,
        dp_epsilon: float | None = None,
        dp_delta: float = 1e-5,
        dp_releases: int = 12,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed,
            participation=participation,
            bootstrap=bootstrap,
            subsample=subsample,
            correct_duplicates=correct_duplicates,
            jobs=jobs,
            secure_aggregation=secure_aggregation,
        )
        self.kinds = kinds
        self.levels = levels
        self.algorithm = algorithm
        self.ci_test = ci_test
        self.cg_min_rows = cg_min_rows
        self.alpha = alpha
        self.depth = depth
        self.pds_depth = pds_depth
        self.small_sample = small_sample
        self.dof = dof
        self.min_sites = min_sites
        self.min_contribution_rows = min_contribution_rows
        self.constant_columns = constant_columns
        self.knowledge = knowledge
        self.pair_window = pair_window
        self.batch_megabytes = batch_megabytes
        self.max_exchanges = max_exchanges
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_releases = dp_releases

    def make_server(self) -> FedFCIServer:
        """The server, with the public levels a DP run reads."""
        return FedFCIServer(self.config_, self.levels)

    def make_client(self, data: ClientData) -> FedFCIClient:
        """The site holding ``data``."""
        return FedFCIClient(data, config=self.config_, seed=self.seed, kinds=self.kinds)

    def check_clients(self, clients: Sequence[ClientData] | Sequence[str]) -> None:
        """At least ``min_sites`` sites.

        Raises
        ------
        DataError
            With fewer sites than ``min_sites``.
        """
        if len(clients) < self.config_.min_sites:
            raise DataError(
                f"fedfci pools statistics over at least min_sites = {self.config_.min_sites} "
                f"sites; {len(clients)} given"
            )

    def learn(self, state: FedFCIState) -> None:
        """The graph and what the search recorded (``graph_`` is ``None`` for a run
        stopped before the search completed)."""
        self.excluded_ = tuple(state.excluded)
        self.ci_test_ = state.test
        self.exchanges_ = int(state.exchanges)
        self.dp_epsilon_spent_ = self.make_server().epsilon_spent(state)
        result = state.result
        if result is None:
            self.graph_ = None  # type: ignore[assignment]
            return
        names = result.graph.names
        marks = result.graph.marks.copy()
        for a, b in result.undecided:
            marks[a, b] = marks[b, a] = NONE
        self.graph_ = Graph(names, marks)
        self.undecided_ = [(names[a], names[b]) for a, b in result.undecided]
        self.sepsets_ = {
            (names[a], names[b]): tuple(names[k] for k in z) for (a, b), z in result.sepsets.items()
        }
        self.pvalues_ = pd.DataFrame(result.pvalues, index=names, columns=names)
        self.n_tests_ = int(result.n_tests)
        self.rows_ = dict(result.rows)

    def learned_graphs(self) -> dict[str, tuple[Any, Any]]:
        """The learned graph (``graph``) and, after a bootstrap, the consensus."""
        return self.with_consensus({"graph": (self.graph_, None)})

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """``undecided``: the pairs never tested; and the bootstrap's tables."""
        tables = super().learned_tables()
        if self.undecided_:
            tables["undecided"] = pd.DataFrame(self.undecided_, columns=["from", "to"]).set_index(
                ["from", "to"]
            )
        return tables

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The p-values as an array; the graph, undecided pairs, separating sets and
        the run's test as JSON."""
        return {"pvalues": self.pvalues_.to_numpy(dtype=np.float64)}, {
            "graph": to_graph_json(self.graph_),
            "undecided": [list(p) for p in self.undecided_],
            "sepsets": [[a, b, list(z)] for (a, b), z in self.sepsets_.items()],
            "ci_test": self.ci_test_,
            "excluded": list(self.excluded_),
            "n_tests": self.n_tests_,
            "exchanges": self.exchanges_,
            "dp_epsilon_spent": self.dp_epsilon_spent_,
            **self.bootstrap_state(),
        }

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        self.graph_ = from_graph_json(meta["graph"]).graph
        names = list(self.graph_.names)
        self.pvalues_ = pd.DataFrame(
            np.asarray(arrays["pvalues"], dtype=np.float64), index=names, columns=names
        )
        self.undecided_ = [(str(a), str(b)) for a, b in meta["undecided"]]
        self.sepsets_ = {(str(a), str(b)): tuple(z) for a, b, z in meta["sepsets"]}
        self.ci_test_ = str(meta["ci_test"])
        self.excluded_ = tuple(meta["excluded"])
        self.n_tests_ = int(meta["n_tests"])
        self.exchanges_ = int(meta["exchanges"])
        self.dp_epsilon_spent_ = meta.get("dp_epsilon_spent")
        self.rows_ = {}
        self.restore_bootstrap(meta)
