"""The capability of an estimator whose fitted model is a joint distribution of its
variables: rows can be drawn from it and any variable's posterior asked given
evidence on the others (``fedstruct sample``, ``fedstruct query``). FedNGM's is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["JointModel", "not_a_joint_model"]


class JointModel(ABC):
    """An estimator whose fitted model samples rows and answers queries."""

    @abstractmethod
    def released(self) -> Any:
        """The model that samples and answers (``sample(n, seed=..., **sampling)``,
        ``predict``/``predict_proba`` of a target given evidence).

        Raises
        ------
        ConfigError
            If the run released none.
        """

    @abstractmethod
    def sampling_options(self) -> dict[str, Any]:
        """The run's own settings of :meth:`released`'s ``sample`` (e.g. the sampler
        and its burn-in)."""

    @abstractmethod
    def inference_options(self, method: str | None = None) -> dict[str, Any]:
        """The run's own settings of a query (``method``: another inference method
        than the run's).

        Raises
        ------
        ConfigError
            For an inference method the model does not have.
        """


def not_a_joint_model(folder: object, method: str, what: str) -> str:
    """What ``fedstruct sample``/``query`` (``what``) says of a run in ``folder`` whose
    ``method`` learns no joint distribution."""
    return (
        f"{folder} holds a {method} model; {what} needs a FedNGM run (a model of the joint "
        "distribution)"
    )
