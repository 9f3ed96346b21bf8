"""Settings of ``fedstruct run fedavg``: the federation, FedAvg's hyper-parameters, the data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.methods.fedavg import FedAvgConfig
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.methods.fedavg.sources import NetworkTask, SiteTask

__all__ = ["PARTITIONS", "TASKS", "FedAvgRun", "default_target", "task_variable"]

#: The task variable of each network in the F-CMs experiments (App. B.1), reused here.
TASKS = {
    "asia": "dysp",
    "sachs": "Akt",
    "alarm": "BP",
    "insurance": "PropCost",
    "hailfinder": "R5Fcst",
}

#: How the training rows are split over the clients.
PARTITIONS = ("iid", "label-skew")


def default_target(network: DiscreteNetwork) -> str:
    """The network's task variable: the F-CMs task if it has one, else its last variable
    in topological order (a sink)."""
    return TASKS.get(network.name, network.graph.topological_order()[-1])


@dataclass(frozen=True)
class FedAvgRun(FederationSettings, FedAvgConfig):
    """Settings of ``fedstruct run fedavg``: the federation, FedAvg's hyper-parameters
    (:class:`FedAvgConfig`) and the data.

    Parameters
    ----------
    network
        Bundled network the rows are sampled from (``fedstruct datasets`` lists them).
    target
        The variable to predict; empty: the network's task (F-CMs App. B.1) or a sink.
    samples
        Training rows sampled from the network and split over the clients.
    test_samples
        Rows of the server's test set (sampled apart from the clients' rows).
    partition
        ``iid`` or ``label-skew`` (Dirichlet(``skew_alpha``) over the target's classes).
    skew_alpha
        Concentration of the label-skew Dirichlet: small values give skewed clients.
    min_per_client
        Fewest rows a client may get: an iid split that gives one fewer is an error; a
        label-skewed split is redrawn until every client has as many.
    knowledge
        Not taken: fedavg learns no graph, so background knowledge has nothing to act
        on (a value is refused; docs/knowledge.md lists the methods that take it).

    On a user's files (``--site``/``--sites``) ``target`` names the column to predict
    (categorical or ordinal: a classification; continuous: a regression), continuous
    columns are standardised and missing values imputed from federated statistics
    (docs/fedavg.md), and there is no server test set: the final model is scored on
    the rows each site holds out (``test_fraction``, e.g. 0.2).
    """

    method_name: ClassVar[str] = "fedavg"
    bootstrap_refusal: ClassVar[str] = (
        "FedAvg trains a classifier and learns no graph whose edges a resample could "
        "count; --bootstrap is for the discovery methods fedcdnv and fedcd"
    )
    secure_aggregation_refusal: ClassVar[str] = ""  # weights, statistics, scores: sums
    unused_on_files: ClassVar[tuple[str, ...]] = ("skew_alpha", "min_per_client")

    network: str = "asia"
    target: str = ""
    samples: int = 5000
    test_samples: int = 2000
    partition: str = "iid"
    skew_alpha: float = 0.5
    min_per_client: int = 20
    knowledge: str | None = None

    def estimator_params(self, source: NetworkTask | SiteTask) -> dict[str, Any]:
        """The settings' estimator parameters for the source's target and columns (a
        user's table: encoded from federated statistics), participation over its
        clients."""
        return {
            **super().estimator_params(source),
            "target": source.target,
            "cardinalities": source.cardinalities,
            "continuous": source.continuous,
            "missing_values": source.missing_values,
            "participation": self.participation(source.names),
        }

    def __post_init__(self) -> None:
        if self.knowledge:
            raise ConfigError(
                f"fedavg learns no graph, so --knowledge {self.knowledge} has nothing to act "
                "on: drop it (docs/knowledge.md lists the methods that take it)"
            )
        if self.truth:
            raise ConfigError(
                f"fedavg learns no graph, so --truth {self.truth} has nothing to score: drop it"
            )
        super().__post_init__()
        check_fields(self, _CONSTRAINTS, "fedavg")
        self.check_one_source("network", "samples", "test_samples", "partition")


_CONSTRAINTS = {
    "samples": Interval(int, 1),
    "test_samples": Interval(int, 1),
    "partition": OneOf(PARTITIONS),
    "skew_alpha": Interval(float, 0, closed="neither"),
    "min_per_client": Interval(int, 1),
}


def task_variable(settings: FedAvgRun, network: DiscreteNetwork) -> str:
    """The task variable: the ``target`` setting, else the network's default.

    Raises
    ------
    UnknownVariableError
        If it is not a variable of the network.
    """
    target = settings.target or default_target(network)
    if target not in network.names:
        raise UnknownVariableError(
            f"target {target!r} is not a variable of {network.name}; "
            f"pick one of {list(network.names)}"
        )
    return target
