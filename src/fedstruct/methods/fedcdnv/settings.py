"""Settings of ``fedstruct run fedcdnv`` (defaults: the FedCDnv paper's Table 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.data import network_names
from fedstruct.data.datasets.sachs import DISCRETIZATIONS
from fedstruct.errors import ConfigError
from fedstruct.methods.fedcdnv import FedCDnvConfig
from fedstruct.methods.fedcdnv.config import SECURE_REFUSALS
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.runs.source import Source

__all__ = ["SACHS", "SYNTHETIC", "FedCDnvRun"]

SYNTHETIC = "synthetic"
SACHS = "sachs-cytometry"


@dataclass(frozen=True)
class FedCDnvRun(FederationSettings, FedCDnvConfig):
    """Settings of ``fedstruct run fedcdnv`` (defaults: the paper's Table 4).

    ``rounds`` is fixed by the protocol (Algorithm 1) at 2. ``constant_columns``
    defaults to ``"exclude"`` here: small simulated clients of networks with rare
    states (barley) see some variables constant, which is a property of the sample,
    not bad input (the count is in the history, ``excluded_constant``).

    Parameters
    ----------
    network
        ``synthetic`` (an Erdős–Rényi DAG), a bundled network, or ``sachs-cytometry``
        (the real Sachs et al. 2005 data, discretised).
    variables
        Number of variables of the ``synthetic`` DAG.
    edges_per_node
        Expected edges per variable of the ``synthetic`` DAG.
    cardinality
        States per variable of the ``synthetic`` network.
    cpt_alpha
        Dirichlet concentration of the ``synthetic`` network's conditional tables.
    latent_ratio
        λ, the share of the variables no client observes; empty: 0.15 (0 for Sachs).
    overlap
        δ, the share of the observed variables each client observes.
    min_samples
        The fewest rows a client may get (its rows are drawn uniformly from
        ``[min_samples, max_samples]``).
    max_samples
        The most rows a client may get (its rows are drawn uniformly from
        ``[min_samples, max_samples]``).
    discretize
        Discretisation of the Sachs data: ``hartemink``, ``quantile`` or ``log-interval``.
    reference
        Also score centralised FCI on the pooled data (all observed variables).
    """

    method_name: ClassVar[str] = "fedcdnv"
    bootstrap_refusal: ClassVar[str] = ""  # --bootstrap counts its graph's edges
    unused_on_files: ClassVar[tuple[str, ...]] = (
        "variables", "edges_per_node", "cardinality", "cpt_alpha", "latent_ratio",
        "overlap", "min_samples", "max_samples", "discretize",
    )  # fmt: skip
    #: FedCDnv-vote takes --secure-aggregation; the other strategies refuse it
    #: (``SECURE_REFUSALS``, checked in ``__post_init__``).
    secure_aggregation_refusal: ClassVar[str] = ""

    network: str = SYNTHETIC
    clients: int = 6
    rounds: int = 2
    variables: int = 30
    edges_per_node: float = 1.0
    cardinality: int = 3
    cpt_alpha: float = 1.0
    latent_ratio: float | None = None
    overlap: float = 0.85
    min_samples: int = 100
    max_samples: int = 2000
    discretize: str = "hartemink"
    reference: bool = True
    constant_columns: str = "exclude"

    def estimator_params(self, source: Source) -> dict[str, Any]:
        """The settings' estimator parameters for the source's clients; on a user's
        files the federation schema's kinds reach every client's CI test
        (``ci_test="auto"`` chooses from them: G², Fisher-z or the mixed test)."""
        return {
            **super().estimator_params(source),
            "kinds": source.column_kinds() or None,
            "participation": self.participation(source.names),
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rounds != 2:
            raise ConfigError(
                f"fedcdnv setting rounds = {self.rounds}: the protocol has 2 rounds "
                "(Algorithm 1); leave --rounds unset"
            )
        check_fields(self, {**_CONSTRAINTS, "network": OneOf(_sources())}, "fedcdnv")
        if self.secure_aggregation and self.strategy in SECURE_REFUSALS:
            reason = SECURE_REFUSALS[self.strategy]
            raise ConfigError(f"--secure-aggregation: {reason}; drop it")
        self.check_one_source("network")
        if self.min_samples > self.max_samples:
            raise ConfigError(
                f"fedcdnv min_samples = {self.min_samples} exceeds max_samples = "
                f"{self.max_samples}; give min_samples <= max_samples"
            )

    @property
    def latent(self) -> float:
        """λ: the given ratio, or the paper's default for the source."""
        if self.latent_ratio is not None:
            return self.latent_ratio
        return 0.0 if self.network == SACHS else 0.15


_CONSTRAINTS = {
    "variables": Interval(int, 2),
    "edges_per_node": Interval(float, 0, closed="neither"),
    "cardinality": Interval(int, 2),
    "cpt_alpha": Interval(float, 0, closed="neither"),
    "latent_ratio": Interval(float, 0, 1, closed="left", allow_none=True),
    "overlap": Interval(float, 0, 1, closed="right"),
    "min_samples": Interval(int, 1),
    "max_samples": Interval(int, 1),
    "discretize": OneOf(DISCRETIZATIONS),
    "reference": Boolean(),
}


def _sources() -> tuple[str, ...]:
    return (SYNTHETIC, SACHS, *network_names())
