"""Hyper-parameters of FedCDnv (defaults: the paper's §4.1 and Table 4)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import AnyOf, Interval, OneOf, check_fields
from fedstruct.discovery import CI_TESTS, DOF_CONVENTIONS, SMALL_SAMPLE_RULES
from fedstruct.discovery.kinds import CG_MIN_ROWS
from fedstruct.discovery.knowledge import Knowledge, KnowledgeSetting
from fedstruct.discovery.pds import AUTO
from fedstruct.fl.device import DeviceName
from fedstruct.methods.fedcdnv.aggregate import STRATEGIES, WEIGHT_COUNTS
from fedstruct.methods.fedcdnv.pvalues import check_interval

__all__ = ["DEFINITE_FROM", "LEARNERS", "SECURE_REFUSALS", "FedCDnvConfig"]

LEARNERS = ("fci", "rfci")
#: Where FeddG's status comes from: G0's status matrix (Algorithm 1) or FedG's.
DEFINITE_FROM = ("g0", "fedg")


#: Why a strategy refuses secure aggregation (FedCDnv-vote, ``"vote"``, takes it: its
#: vote and the unions of marks are sums).
SECURE_REFUSALS = {
    "tpss": (
        "its server needs each client's reply, not their sum (TPSS reads every client's "
        "PAG and p-values); strategy=vote (FedCDnv-vote) takes it"
    ),
    "largest": (
        "FCI-base's server needs each client's PAG and sample size (the largest observer "
        "decides: a maximum, not a sum); strategy=vote (FedCDnv-vote) takes it"
    ),
}


@dataclass(frozen=True)
class FedCDnvConfig:
    """Every hyper-parameter of FedCDnv and its baselines.

    Parameters
    ----------
    strategy
        ``"tpss"`` (FedCDnv), ``"vote"`` (FedCDnv-vote) or ``"largest"`` (FCI-base);
        see :mod:`fedstruct.methods.fedcdnv.aggregate`.
    learner
        Local learner: ``"fci"`` or ``"rfci"`` (§3.3.1).
    ci_test
        ``"auto"`` (default: chosen from each client's columns' kinds, the federation
        schema's on a user's files, else the dtypes (integer codes categorical, floats
        continuous): G² when all are categorical or ordinal, as the paper, so its
        results are unchanged; Fisher-z when none is categorical; else, each client on
        its own rows, ``"cg"`` when the median rows per variable pair reach
        ``cg_min_rows`` and ``"dg"`` below; see
        :func:`~fedstruct.discovery.choose_ci_test`), ``"g2"`` (the paper's test),
        ``"chi2"``, ``"fisherz"`` (continuous data), ``"cg"`` (the conditional-Gaussian
        test) or ``"dg"`` (the degenerate-Gaussian test), both for mixed data. Missing
        values are deleted test-wise (each test on the rows complete on its variables;
        docs/fedcdnv.md).
    cg_min_rows
        ``ci_test="auto"`` on a client's mixed columns: the conditional-Gaussian test
        from this median of rows observed per variable pair (1,500, the crossover
        measured in docs/benchmarks.md), the degenerate-Gaussian test below.
    alpha
        Significance level of the CI tests (0.05).
    theta1
        Lower width of the interval ``[alpha - theta1, alpha + theta2]`` of
        non-stable p-values (default [0.001, 0.5], Table 4).
    theta2
        Upper width of the interval ``[alpha - theta1, alpha + theta2]`` of
        non-stable p-values (default [0.001, 0.5], Table 4).
    depth
        Largest conditioning set of the adjacency search (``None``: unbounded).
    pds_depth
        Largest conditioning set in FCI's possible-D-SEP phase: ``"auto"`` (default:
        the size covering 99 % of the adjacency search's separating sets, see
        :func:`~fedstruct.discovery.pds.auto_pds_depth`), an integer, or
        ``None`` (unbounded: FCI's complete search, exponential on large data).
    workers
        Processes for FCI's possible-D-SEP phase at a client; ``None``: the cores the
        client may use (only for a large phase; the result is the same for every value).
    device
        Where a client's G²/χ² tests compute their batched counts: ``None`` (default)
        numpy on the CPU, or a torch device (``"cuda"``, ``"cuda:N"``, ``"cpu"``,
        ``"auto"``; :mod:`~fedstruct.discovery.device_counts`): the same p-values and
        graphs; a GPU pays on wide tables (hundreds of variables).
    small_sample
        The G²/χ² small-sample rule: ``"toolbox"``, ``"pcalg"`` or ``"none"`` (see
        docs/local_learners.md).
    dof
        The G²/χ² degrees-of-freedom convention: ``"adjusted"`` or ``"plain"``.
    update_depth
        Largest set ``Z`` searched by C-Update (Algorithm 2, line 10, enumerates every
        subset of a neighbourhood: exponential in the degree). Default 3; ``None``
        searches every subset.
    stability_depth
        Largest ``Z`` searched for a non-adjacent pair's independence evidence
        (Definition 3.5: "there exists Z with p > alpha + theta2"); ``None``: every
        subset of the client's other variables.
    weight_count
        The count in eq. (3)'s numerator: ``"non_stable"`` (default: the text after
        eq. (3), the clients that identify the relationship as non-stable) or
        ``"observers"`` (every client observing the pair; the earlier default, see the
        changelog in docs/fedcdnv.md).
    definite_from
        The status matrix FeddG and the definite pairs are read from: ``"g0"``
        (default: Algorithm 1, line 17, "according to obtained stat", the one built on
        G0 at line 9; a pair is definite causal where G0's status is 2 and FedG keeps
        the edge, definite non-causal where it is -2) or ``"fedg"`` (the status matrix
        rebuilt on FedG, the earlier default: a pair TPSS removed from G0 then counts
        as definite non-causal).
    constant_columns
        A variable constant in a client's data: ``"error"`` (name it and stop) or
        ``"exclude"`` (the client leaves it out of its variables, as if unobserved, and
        reports it: no test can relate a constant to anything).
    knowledge
        Background knowledge (docs/knowledge.md): a ``Knowledge`` or a file (JSON or
        YAML) every client reads and gives its local FCI/RFCI, restricted to its own
        variables (without the ``forbidden_adjacent`` pairs), and the server applies
        to G0 and FedG (:func:`~fedstruct.discovery.background.respect_knowledge`);
        ``None`` (default): none. The same file at every client and the server.
    """

    strategy: str = "tpss"
    learner: str = "fci"
    ci_test: str = "auto"
    cg_min_rows: int = CG_MIN_ROWS
    alpha: float = 0.05
    theta1: float = 0.049
    theta2: float = 0.45
    depth: int | None = None
    pds_depth: int | str | None = AUTO
    workers: int | None = None
    device: str | None = None
    small_sample: str = "toolbox"
    dof: str = "adjusted"
    update_depth: int | None = 3
    stability_depth: int | None = 2
    weight_count: str = "non_stable"
    definite_from: str = "g0"
    constant_columns: str = "error"
    knowledge: str | Knowledge | None = None

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fedcdnv")
        check_interval(self.alpha, self.theta1, self.theta2)

    @property
    def n_rounds(self) -> int:
        """Communication rounds: 2 (Algorithm 1), 1 for FCI-base (no update round)."""
        return 1 if self.strategy == "largest" else 2


_CONSTRAINTS = {
    "knowledge": KnowledgeSetting(),
    "strategy": OneOf(STRATEGIES),
    "learner": OneOf(LEARNERS),
    "ci_test": OneOf(CI_TESTS),
    "weight_count": OneOf(WEIGHT_COUNTS),
    "definite_from": OneOf(DEFINITE_FROM),
    "small_sample": OneOf(SMALL_SAMPLE_RULES),
    "dof": OneOf(DOF_CONVENTIONS),
    "constant_columns": OneOf(("error", "exclude")),
    **dict.fromkeys(
        ("depth", "update_depth", "stability_depth"), Interval(int, 0, allow_none=True)
    ),
    "pds_depth": AnyOf(Interval(int, 0), OneOf((AUTO,)), allow_none=True),
    "workers": Interval(int, 1, allow_none=True),
    "device": AnyOf(DeviceName(), allow_none=True),
    "cg_min_rows": Interval(int, 0),
}
