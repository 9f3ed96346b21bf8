"""Settings of ``fedstruct run fedfci`` (pooled federated discovery, docs/fedfci.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.data import network_names
from fedstruct.data.gaussian import GAUSSIAN_NETWORKS
from fedstruct.errors import ConfigError
from fedstruct.methods.fedfci import FedFCIConfig
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.runs.source import Source

__all__ = ["MIXED", "FedFCIRun"]

#: A random conditional-Gaussian model: half its variables categorical.
MIXED = "mixed"


@dataclass(frozen=True)
class FedFCIRun(FederationSettings, FedFCIConfig):
    """Settings of ``fedstruct run fedfci``.

    The run has no rounds to set: it takes a few exchanges of statistics per level and
    phase of its search (``pair_window`` sets how many; ``max_exchanges`` bounds them).
    On built-in data each site draws its rows from the network, all its variables
    observed, with
    ``missing_rate`` of its values missing at random. ``constant_columns`` defaults to
    ``"exclude"`` here, as for FedCDnv: a network's rare states leave some variables
    constant in a sample (insurance's ``Theft`` in 3,000 rows), a property of the
    sample, not bad input (the count is in the metrics, ``excluded_constant``).

    Parameters
    ----------
    network
        A bundled discrete network (G²), a Gaussian network (``ecoli70``,
        ``magic-niab``, ``magic-irri``, ``arth150``: Fisher-z) or ``mixed`` (a random
        conditional-Gaussian model of ``variables`` variables, half categorical).
    variables
        Number of variables of the ``mixed`` model.
    min_samples
        The fewest rows a site draws (its rows are uniform in
        ``[min_samples, max_samples]``).
    max_samples
        The most rows a site draws.
    missing_rate
        Share of each site's values missing at random (each test then uses the rows
        complete on its variables).
    reference
        Also run the same search on the sites' rows pooled in one process and record
        whether the graphs agree (``pooled_agreement``) and its scores
        (``central_*``): what pooled federated discovery must reproduce.
    """

    method_name: ClassVar[str] = "fedfci"
    bootstrap_refusal: ClassVar[str] = ""
    secure_aggregation_refusal: ClassVar[str] = ""

    unused_on_files: ClassVar[tuple[str, ...]] = (
        "variables", "min_samples", "max_samples", "missing_rate", "reference",
    )  # fmt: skip

    network: str = "alarm"
    clients: int = 10
    rounds: int = 1
    variables: int = 12
    min_samples: int = 200
    max_samples: int = 500
    missing_rate: float = 0.0
    reference: bool = True
    constant_columns: str = "exclude"

    def estimator_params(self, source: Source) -> dict[str, Any]:
        """The settings' estimator parameters for the source's clients; on a user's
        files the federation schema's kinds reach every site, and the variables'
        levels where they are public."""
        return {
            **super().estimator_params(source),
            "kinds": source.column_kinds() or None,
            "levels": source.levels(),
            "participation": self.participation(source.names),
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rounds != 1:
            raise ConfigError(
                f"fedfci setting rounds = {self.rounds}: the run takes a few exchanges per "
                "level and phase of its search; leave --rounds unset (max_exchanges bounds them)"
            )
        check_fields(self, {**_CONSTRAINTS, "network": OneOf(_sources())}, "fedfci")
        self.check_one_source("network")
        if self.min_samples > self.max_samples:
            raise ConfigError(
                f"fedfci min_samples = {self.min_samples} exceeds max_samples = "
                f"{self.max_samples}; give min_samples <= max_samples"
            )


_CONSTRAINTS = {
    "variables": Interval(int, 2),
    "min_samples": Interval(int, 1),
    "max_samples": Interval(int, 1),
    "missing_rate": Interval(float, 0, 1, closed="left"),
    "reference": Boolean(),
}


def _sources() -> tuple[str, ...]:
    return (*network_names(), *GAUSSIAN_NETWORKS, MIXED)
