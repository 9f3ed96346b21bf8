"""Settings of ``fedstruct run fedcd`` (defaults: FED-CD's ER setting, §6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.data import network_names
from fedstruct.errors import ConfigError
from fedstruct.graphs.random import GRAPH_KINDS
from fedstruct.methods.fedcd import FedCDConfig
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.methods.fedcd.sources import InterventionTask, RegimeSites

__all__ = ["ALONE", "ER", "SPLITS", "FedCDRun"]

ER = "er"
SPLITS = ("horizontal", "vertical")
ALONE = ("none", "first", "all")


@dataclass(frozen=True)
class FedCDRun(FederationSettings, FedCDConfig):
    """Settings of ``fedstruct run fedcd`` (defaults: ENCO's data sizes, FED-CD's 2 clients).

    Parameters
    ----------
    network
        ``er`` (Erdős–Rényi, FED-CD §6.1), a structured family (``chain``, ``bidiag``,
        ``collider``, ``jungle``, ``full``) or a bundled network.
    variables
        Number of variables of a generated graph (``er`` and the families).
    edges_per_node
        Expected edges per variable of an ``er`` graph.
    cardinality
        Categories per variable of a generated graph's conditionals (ENCO's generator).
    split
        ``horizontal`` (every client a share of every part, §6.2) or ``vertical``
        (disjoint intervened-variable sets per client, §6.4).
    targets_per_client
        With ``split = vertical``: intervened variables per client, e.g. ``"16,4"``;
        empty: balanced.
    samples
        Observational rows of the global data set.
    samples_per_intervention
        Rows per variable under a perfect uniform intervention.
    alone
        ENCO alone for comparison: ``first`` client's data, ``all`` clients', ``none``.
    centralized
        Also run ENCO on the pooled data.
    regime
        With a user's files: the column that names, per row, the intervened variable
        (empty or ``obs``: an observational row).
    bins
        With a user's files: bins per continuous column (ENCO models categorical
        variables; federated quantile bins, :mod:`fedstruct.fl.binning`).
    bin_grid
        Cells of the shared grid over which each site counts a continuous column's
        values for its bins (a cut is within one cell of the pooled quantile).
    """

    method_name: ClassVar[str] = "fedcd"
    bootstrap_refusal: ClassVar[str] = ""  # --bootstrap counts its graph's edges
    secure_aggregation_refusal: ClassVar[str] = ""  # beliefs, proximity, bins: sums

    unused_on_files: ClassVar[tuple[str, ...]] = (
        "variables", "edges_per_node", "cardinality", "split", "targets_per_client",
        "samples", "samples_per_intervention",
    )  # fmt: skip

    network: str = ER
    clients: int = 2
    rounds: int = 5
    variables: int = 20
    edges_per_node: float = 2.0
    cardinality: int = 10
    split: str = "horizontal"
    targets_per_client: str = ""
    samples: int = 5000
    samples_per_intervention: int = 200
    alone: str = "first"
    centralized: bool = False
    regime: str = ""
    bins: int = 4
    bin_grid: int = 256

    def estimator_params(self, source: InterventionTask | RegimeSites) -> dict[str, Any]:
        """The settings' estimator parameters for the source's clients (a user's
        continuous columns binned by the method's exchange, ``bins`` and
        ``bin_grid``)."""
        return {
            **super().estimator_params(source),
            "continuous": source.continuous,
            "participation": self.participation(source.names),
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self, {**_CONSTRAINTS, "network": OneOf(_networks())}, "fedcd")
        self.check_one_source("network", "split", "targets_per_client")
        if self.targets_per_client and self.split != "vertical":
            raise ConfigError("targets_per_client applies to split = 'vertical' only")

    def blocks(self) -> list[int] | None:
        """``targets_per_client`` as counts (``None``: balanced)."""
        if not self.targets_per_client:
            return None
        try:
            return [int(p) for p in str(self.targets_per_client).split(",")]
        except ValueError:
            raise ConfigError(
                f"targets_per_client {self.targets_per_client!r} must be counts like '16,4'"
            ) from None


_CONSTRAINTS = {
    "variables": Interval(int, 2),
    "edges_per_node": Interval(float, 0, closed="neither"),
    "cardinality": Interval(int, 2),
    "split": OneOf(SPLITS),
    "samples": Interval(int, 0),
    "samples_per_intervention": Interval(int, 1),
    "alone": OneOf(ALONE),
    "centralized": Boolean(),
    "bins": Interval(int, 2),
    "bin_grid": Interval(int, 1),
}


def _networks() -> tuple[str, ...]:
    return (ER, *GRAPH_KINDS[1:], *network_names())
