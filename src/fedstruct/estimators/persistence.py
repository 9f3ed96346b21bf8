"""The capability every estimator has of being saved, loaded and resumed: what it
learned as named arrays plus JSON (a run folder's ``model.safetensors`` and
``model.json``, :mod:`fedstruct.fl.artifact`), and the identity of its configuration
that a checkpoint is checked against.
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.fl.participation import Participation
from fedstruct.fl.secagg import SecAggConfig

__all__ = ["Persistent", "inputs_of"]


class Persistent(ABC):
    """What :meth:`fit` learned, turned into arrays plus JSON and back, and the
    identity of the configuration that learned it."""

    #: Provided by :class:`~fedstruct.estimators.FederatedEstimator`.
    method: ClassVar[str]
    config_: Any
    seed: int
    participation: Participation | None
    secure_aggregation_: SecAggConfig | None
    #: What the model's inputs are when its run read a user's files (``model.json``'s
    #: ``data``: variables, kinds, level names; or image shape and class names; set
    #: by :func:`fedstruct.load`, and by ``fit`` on clients read from files with
    #: one codebook, :attr:`~fedstruct.data.ClientData.schema`), else ``None``: rows
    #: are then codes already.
    data_: Mapping[str, Any] | None = None

    @abstractmethod
    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """What ``fit`` learned: named arrays (weights, matrices) and JSON-able
        metadata (graphs, schemas, names), the input of :meth:`restore`. Call it
        after ``fit``."""

    @abstractmethod
    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output (on an
        estimator whose parameters are checked: ``prepare()``, as
        :func:`fedstruct.load` does)."""

    def identity(self) -> dict[str, Any]:
        """Settings outside ``config_`` that change the result (default: none)."""
        return {}

    def fingerprint(self) -> str:
        """Identity of this configuration, for checkpoints (once ``prepare()`` ran)."""
        return json.dumps(
            {
                "method": self.method,
                **self.identity(),
                "config": dataclasses.asdict(self.config_),
                "seed": int(self.seed),
                "participation": repr(self.participation),
                # only when on: the fingerprints of plain runs stay as they were
                **(
                    {"secure_aggregation": repr(self.secure_aggregation_)}
                    if self.secure_aggregation_ is not None
                    else {}
                ),
            },
            sort_keys=True,
        )


def inputs_of(clients: Sequence[ClientData] | Sequence[str]) -> dict[str, Any] | None:
    """What the clients' coded rows mean when every one was read from a user's file
    with one codebook (:attr:`ClientData.schema`): the estimator's ``data_``, so that
    it reads new rows by their level names, as a model loaded from the run does;
    ``None`` otherwise (rows given as codes, or names on a deployment)."""
    schemas = {id(c.schema): c.schema for c in clients if isinstance(c, ClientData)}
    if len(schemas) != 1 or not all(isinstance(c, ClientData) for c in clients):
        return None
    schema = next(iter(schemas.values()))
    return None if schema is None else schema.inputs()
