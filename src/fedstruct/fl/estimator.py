"""What every method's estimator shares: its identity and how it runs on a backend."""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from fedstruct.data.client import ClientData
from fedstruct.fl.backend import Backend, run_on_backend
from fedstruct.fl.participation import Participation

__all__ = ["FederatedEstimator"]


class FederatedEstimator(ABC):
    """Base of the methods' scikit-learn-style estimators.

    A subclass names :attr:`method` and its :attr:`config_class`,
    :attr:`client_class` and :attr:`server_class` in its class statement (every
    method package exports these four)::

        class FedCD(FederatedEstimator, method="fedcd", config=FedCDConfig,
                    client=FedCDClient, server=FedCDServer): ...

    and provides :meth:`learn` (what to keep from the server's final
    state). ``__init__`` keeps ``config`` (a ``config_class`` of ``params``), ``seed``
    and ``participation``; a method with inputs of its own (a task, a schema) takes
    them in its ``__init__`` and calls ``super().__init__``. :meth:`make_client` and
    :meth:`make_server` build the classes from the config and the seed; a method
    whose client or server needs more overrides them. :meth:`fit` runs the
    federation and calls :meth:`learn`; a method with extra inputs (e.g. a
    server-held test set) overrides ``fit`` to take them and calls ``super().fit``.
    """

    #: The method's name (checkpoint identity and progress label).
    method: ClassVar[str]
    #: The dataclass of every hyper-parameter, the client and the server algorithm.
    config_class: ClassVar[type]
    client_class: ClassVar[type]
    server_class: ClassVar[type]
    config: Any
    seed: int
    participation: Participation | None

    def __init_subclass__(
        cls,
        *,
        method: str | None = None,
        config: type | None = None,
        client: type | None = None,
        server: type | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the method's name and its config, client and server classes (a
        subclass of a method's estimator inherits those it does not name)."""
        super().__init_subclass__(**kwargs)
        for attribute, value in (
            ("method", method),
            ("config_class", config),
            ("client_class", client),
            ("server_class", server),
        ):
            if value is not None:
                setattr(cls, attribute, value)

    def __init__(
        self, *, seed: int = 0, participation: Participation | None = None, **params: Any
    ) -> None:
        self.config = self.config_class(**params)
        self.seed = int(seed)
        self.participation = participation

    def make_client(self, data: ClientData) -> Any:
        """The client holding ``data``: ``client_class(data, config=..., seed=...)``."""
        return self.client_class(data, config=self.config, seed=self.seed)

    def make_server(self) -> Any:
        """A fresh server algorithm: ``server_class(config)``."""
        return self.server_class(self.config)

    @abstractmethod
    def learn(self, state: Any) -> None:
        """Set the learned attributes (ending in ``_``) from the server's final state.

        Raises a method's errors for a run that learned nothing."""

    def learned_graphs(self) -> dict[str, tuple[Any, Any]]:
        """The graphs the fit learned, by file stem: ``stem -> (graph, confidence)``,
        the confidence per edge (a mapping or an array over the graph's names, as
        :func:`fedstruct.graphs.io.write_graph` takes it) or ``None``. By default the
        ``graph_`` attribute, if the method has one, under ``"graph"``."""
        graph = getattr(self, "graph_", None)
        return {} if graph is None else {"graph": (graph, None)}

    def check_clients(self, clients: Sequence[ClientData] | Sequence[str]) -> None:  # noqa: B027
        """Validate the clients before any round (an optional hook: nothing by default)."""

    def fit(
        self,
        clients: Sequence[ClientData] | Sequence[str],
        *,
        backend: str | Backend = "local",
        checkpoint: Path | None = None,
        resume: bool = False,
        progress: bool = False,
        stop_after: int | None = None,
    ) -> Self:
        """Run the method over ``clients`` and keep what it learned.

        Parameters
        ----------
        clients
            The clients' data (their names suffice on a deployment backend, where
            every node holds its own data).
        backend
            Where to run: ``"local"``, ``"flower-sim"`` or a :class:`Backend`.
        checkpoint
            File for per-round checkpoints; with ``resume=True`` the run continues
            from it.
        progress
            Show a progress bar.
        stop_after
            Stop after this round (as if interrupted).

        Sets ``history_`` (per-round records), ``traffic_`` (bytes each way per round
        and client) and the method's own attributes (:meth:`learn`).
        """
        self.check_clients(clients)
        result = run_on_backend(
            self,  # type: ignore[arg-type]
            clients,
            backend=backend,
            participation=self.participation,
            seed=self.seed,
            checkpoint=checkpoint,
            resume=resume,
            fingerprint=self.fingerprint(),
            progress=progress,
            stop_after=stop_after,
            label=self.method,
        )
        self.history_ = result.state.history
        self.traffic_ = result.grid.traffic
        self.learn(result.state)
        return self

    def identity(self) -> dict[str, Any]:
        """Settings outside ``config`` that change the result (default: none)."""
        return {}

    def fingerprint(self) -> str:
        """Identity of this configuration, for checkpoints."""
        return json.dumps(
            {
                "method": self.method,
                **self.identity(),
                "config": dataclasses.asdict(self.config),
                "seed": self.seed,
                "participation": repr(self.participation),
            },
            sort_keys=True,
        )
