"""Hyper-parameters of FED-CD (its own, plus those of its local learner ENCO)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.methods.fedcd.aggregate import BELIEF_SPACES, DISTANCES, WEIGHTINGS
from fedstruct.methods.fedcd.enco.config import ENCOConfig

__all__ = ["AGGREGATIONS", "FedCDConfig"]

AGGREGATIONS = ("proximity", "vote")


@dataclass(frozen=True)
class FedCDConfig(ENCOConfig):
    """FED-CD's settings; ENCO's (inherited from :class:`ENCOConfig`) configure the
    clients' local learner.

    Parameters
    ----------
    rounds
        Federated rounds ``T`` (Algorithm 2; the paper runs 5-10).
    epochs_per_round
        ENCO epochs each client runs per round, starting from the broadcast belief (2).
    aggregation
        ``"proximity"`` (§5.2, Algorithm 1) or ``"vote"`` (§5.1).
    mass
        Mass ``m_k`` injected at each intervened variable (reference code: 16).
    discount
        ``α``: reliability lost per step away from an intervention (reference code: 0.2).
    temperature
        ``β`` of the softmax over clients, eq. (1) (reference code: 0.3).
    min_mass
        Reliability floor for edges no intervention reaches (reference code: 0.1).
    distance
        Which edges an intervention reaches: ``"outgoing"`` (along the arrows, only
        edges leaving a reached variable: the reference code) or ``"undirected"``
        (every edge touching it, either direction: §5.2's "edges immediately
        connected to the intervened variable").
    weighting
        ``"softmax"`` (eq. 1) or ``"normalize"`` (``r / Σ r``, what the reference code
        does: it never applies β).
    belief_space
        Average beliefs as ``"probability"`` (eq. 2) or as ``"logit"`` (reference code).
    acyclic
        Break the cycles of each round's aggregated graph at their least-supported edge
        (§7, second pruning step); the clients' own graphs are pruned the same way.
    """

    rounds: int = 5
    epochs_per_round: int = 2
    aggregation: str = "proximity"
    mass: float = 16.0
    discount: float = 0.2
    temperature: float = 0.3
    min_mass: float = 0.1
    distance: str = "outgoing"
    weighting: str = "softmax"
    belief_space: str = "probability"
    acyclic: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self, _CONSTRAINTS, "fedcd")

    def enco(self) -> ENCOConfig:
        """The local learner's settings."""
        return ENCOConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ENCOConfig)})


_CONSTRAINTS = {
    "aggregation": OneOf(AGGREGATIONS),
    "weighting": OneOf(WEIGHTINGS),
    "distance": OneOf(DISTANCES),
    "belief_space": OneOf(BELIEF_SPACES),
    "rounds": Interval(int, 1),
    "epochs_per_round": Interval(int, 1),
    "discount": Interval(float, 0, 1, closed="right"),
    "mass": Interval(float, 0, closed="neither"),
    "min_mass": Interval(float, 0),
    "temperature": Interval(float, 0, closed="neither"),
    "acyclic": Boolean(),
}
