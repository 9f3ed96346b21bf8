"""Settings of ``fedstruct run fedngm`` (defaults: the health-insurance setting)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.errors import ConfigError
from fedstruct.methods.fedngm import FedNGMConfig
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.methods.fedngm.sources import MixedSites, SubpopulationSource

__all__ = ["DATASETS", "FedNGMRun"]

#: Data sets ``fedstruct run fedngm`` knows.
DATASETS = ("health", "synthetic")


@dataclass(frozen=True)
class FedNGMRun(FederationSettings, FedNGMConfig):
    """Settings of ``fedstruct run fedngm`` (defaults: the health-insurance setting).

    Parameters
    ----------
    dataset
        ``health`` (the RAND HIE table, three sub-population clients, §3.2) or
        ``synthetic`` (a mixed-type SCM with a known graph).
    variables
        Variables of the ``synthetic`` data set.
    samples
        Rows of the ``synthetic`` data set.
    fidelity_samples
        Gibbs samples drawn from each model to measure its covariance error.
    test_fraction
        With a user's files: share of each site's rows kept out of training to score
        the global and the site's own model on.
    graph
        A graph to constrain the NGMs by instead of merging the clients' local graphs
        (``--graph``): a graph file (graph.json, DOT, GraphML, BIF) or the folder of a
        run that learned one (e.g. FedCDnv on the same columns); made undirected by
        ``graph_rule``.
    """

    method_name: ClassVar[str] = "fedngm"
    bootstrap_refusal: ClassVar[str] = (
        "FedNGM learns a neural graphical model on the union of the sites' graphs, not a "
        "causal graph to count edges of; --bootstrap is for the discovery methods fedcdnv"
        " and fedcd"
    )
    secure_aggregation_refusal: ClassVar[str] = (
        "FedNGM's server needs each client's reply, not their sum (it distils the global "
        "model from each client's own model)"
    )

    unused_on_files: ClassVar[tuple[str, ...]] = ("variables", "samples")

    dataset: str = "health"
    clients: int = 3
    rounds: int = 4
    variables: int = 30
    samples: int = 50_000
    fidelity_samples: int = 5000
    test_fraction: float = 0.2
    graph: str | None = None

    def estimator_params(self, source: SubpopulationSource | MixedSites) -> dict[str, Any]:
        """The settings' estimator parameters for the source's variables (the paper's
        master holds the public training rows, used by eq. 3; a user's sites have none,
        and each keeps ``test_fraction`` of its rows out to score the released model
        on)."""
        return {
            **super().estimator_params(source),
            "kinds": source.kinds,
            "public": source.public,
            "test_fraction": source.held_out,
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self, _CONSTRAINTS, "fedngm")
        self.check_one_source("dataset", "variables", "samples")
        if self.dataset == "health" and self.clients != 3:
            raise ConfigError(
                "the health data set has exactly 3 clients (§3.2); drop --clients or use "
                "--set dataset=synthetic"
            )


_CONSTRAINTS = {
    "dataset": OneOf(DATASETS),
    "variables": Interval(int, 2),
    "samples": Interval(int, 1),
    "fidelity_samples": Interval(int, 1),
    "test_fraction": Interval(float, 0, 1, closed="neither"),
}
