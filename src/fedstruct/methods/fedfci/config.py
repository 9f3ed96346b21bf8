"""Hyper-parameters of pooled federated discovery (``fedstruct run fedfci``)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import AnyOf, Interval, OneOf, check_fields
from fedstruct.discovery import CI_TESTS, DOF_CONVENTIONS, SMALL_SAMPLE_RULES
from fedstruct.discovery.kinds import CG_MIN_ROWS
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.discovery.pds import AUTO
from fedstruct.discovery.pooled import DEFAULT_PAIR_WINDOW
from fedstruct.privacy.audit import ANONYMITY
from fedstruct.privacy.settings import refuse_unused

__all__ = ["ALGORITHMS", "FedFCIConfig"]

#: The searches a federation can run on pooled statistics.
ALGORITHMS = ("pc", "fci", "rfci")


@dataclass(frozen=True)
class FedFCIConfig:
    """Every hyper-parameter of pooled federated discovery (docs/fedfci.md).

    Parameters
    ----------
    algorithm
        ``"fci"`` (default), ``"rfci"`` or ``"pc"``: the search the server runs, each of
        its CI tests computed from the sites' statistics summed together.
    ci_test
        ``"auto"`` (default: from the pooled kinds, as a one-process search chooses:
        G² when every variable is categorical or ordinal, Fisher-z when none is
        categorical, else the conditional-Gaussian test when the median over the
        variable pairs of the pooled rows observed on both reaches ``cg_min_rows``,
        the degenerate-Gaussian test below), ``"g2"``, ``"chi2"``, ``"fisherz"``,
        ``"cg"`` or ``"dg"``.
    cg_min_rows
        ``ci_test="auto"`` on mixed columns: the conditional-Gaussian test from this
        median of pooled rows per variable pair (1,500), the degenerate-Gaussian below.
    alpha
        Significance level of the CI tests (0.05).
    depth
        Largest conditioning set of the adjacency search (``None``: unbounded).
    pds_depth
        Largest conditioning set of FCI's possible-D-SEP phase: ``"auto"`` (default),
        an integer, or ``None`` (unbounded); as a one-process FCI.
    small_sample
        The G²/χ² small-sample rule (``"toolbox"``, ``"pcalg"``, ``"none"``), applied to
        the pooled rows of each test.
    dof
        The G²/χ² degrees-of-freedom convention (``"adjusted"`` or ``"plain"``).
    min_sites
        The fewest sites whose statistics one test may sum (default 2): a test whose
        variables fewer sites measure together is never asked of anyone; it is skipped
        (the edge stays during the search), and a pair never tested is *undecided*
        and left out of the graph.
    min_contribution_rows
        The fewest rows complete on a test's variables for a site to contribute its
        statistic to that test (default 10, the message audit's anonymity): a site
        with fewer sends zeros for it (and the test is then the test on the other
        sites' rows).
    constant_columns
        A variable constant over the pooled rows: ``"error"`` (name it and stop) or
        ``"exclude"`` (leave it out of the search and report it).
    knowledge
        Background knowledge (docs/knowledge.md): a ``Knowledge`` or a file (JSON or
        YAML) the server's search uses; ``None`` (default): none.
    pair_window
        The most conditioning sets one step of a pair's search asks of the sites in one
        exchange beyond those already computed: a pair's sets are asked in their order,
        the window doubling exchange by exchange, so a batch stays a few sets per pair
        on a wide, dense network (docs/fedfci.md, "Batches"); ``None``: every set a
        level may need in one exchange (the fewest exchanges; memory and tests grow
        with the level). ``"auto"`` (default): 32, and ``None`` under DP, where every
        exchange spends budget.
    batch_megabytes
        The most memory one exchange's replies take at the server, all sites together
        (default 512): a batch asks each site for at most ``batch_megabytes / sites``
        of counts and sums (8 bytes an entry, and never more than 20 million entries a
        site), a level asking more in several exchanges. The local and flower-sim
        backends hold every site's reply in one process: pigs with 10 sites peaked at
        2.6 GB with batches of 20 million entries a site.
    max_exchanges
        The most exchanges of statistics a run may take (a bound, never reached by a
        search that finishes: a run takes about one per level and phase).
    dp_epsilon
        If set, every site adds Gaussian noise to each release of statistics (round 2's
        margins, every batch) within this total ε over the run, composed by the Rényi
        accountant (docs/fedfci.md, "Differential privacy"; categorical and ordinal
        variables only); ``None`` (default): exact statistics.
    dp_delta
        δ of the DP budget (1e-5).
    dp_releases
        The releases the budget is planned for (the margins and the exchanges; about
        one per level and phase of the search): more spreads the budget thinner (more
        noise per release); a search that needs more stops with one line.
    """

    algorithm: str = "fci"
    ci_test: str = "auto"
    cg_min_rows: int = CG_MIN_ROWS
    alpha: float = 0.05
    depth: int | None = None
    pds_depth: int | str | None = AUTO
    small_sample: str = "toolbox"
    dof: str = "adjusted"
    min_sites: int = 2
    min_contribution_rows: int = ANONYMITY
    constant_columns: str = "error"
    knowledge: str | Knowledge | None = None
    pair_window: int | str | None = AUTO
    batch_megabytes: int = 512
    max_exchanges: int = 200
    dp_epsilon: float | None = None
    dp_delta: float = 1e-5
    dp_releases: int = 12

    @property
    def window(self) -> int | None:
        """``pair_window`` resolved: ``"auto"`` is 32 (``DEFAULT_PAIR_WINDOW``), and
        ``None`` (whole levels, the fewest exchanges) with ``dp_epsilon``."""
        if self.pair_window != AUTO:
            return self.pair_window  # type: ignore[return-value]
        return None if self.dp_epsilon is not None else DEFAULT_PAIR_WINDOW

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fedfci")
        refuse_unused(
            self,
            ("dp_delta", "dp_releases"),
            "dp_epsilon",
            "they shape the noise of a DP run, and without dp_epsilon the statistics are exact",
        )


_CONSTRAINTS = {
    "algorithm": OneOf(ALGORITHMS),
    "ci_test": OneOf(CI_TESTS),
    "cg_min_rows": Interval(int, 0),
    "alpha": Interval(float, 0, 1, closed="left"),
    "depth": Interval(int, 0, allow_none=True),
    "pds_depth": AnyOf(Interval(int, 0), OneOf((AUTO,)), allow_none=True),
    "small_sample": OneOf(SMALL_SAMPLE_RULES),
    "dof": OneOf(DOF_CONVENTIONS),
    "min_sites": Interval(int, 1),
    "min_contribution_rows": Interval(int, 1),
    "constant_columns": OneOf(("error", "exclude")),
    "pair_window": AnyOf(Interval(int, 1), OneOf((AUTO,)), allow_none=True),
    "batch_megabytes": Interval(int, 1),
    "max_exchanges": Interval(int, 1),
    "dp_epsilon": Interval(float, 0, closed="neither", allow_none=True),
    "dp_delta": Interval(float, 0, 1, closed="neither"),
    "dp_releases": Interval(int, 2),
}
