"""The base of every method's estimator: its parameters and ``fit``.

The parameters are scikit-learn's (:class:`sklearn.base.BaseEstimator`): each
estimator's explicit ``__init__`` lists them and stores each one, unchanged, as the
attribute of its name, so ``get_params``, ``set_params``, ``sklearn.base.clone``,
the ``repr`` of the parameters that differ from their defaults and the notebook's
HTML view are scikit-learn's own. Nothing is checked in ``__init__``: :meth:`fit`
checks the parameters together (:meth:`FederatedEstimator.prepare`), so that
coupled ones can be set one at a time (``FedCDnv().set_params(alpha=0.01)``).

What an estimator can do besides fitting is a capability it derives from:
:class:`~fedstruct.estimators.persistence.Persistent` (every estimator: saved and
loaded), :class:`~fedstruct.estimators.prediction.Predictor`,
:class:`~fedstruct.estimators.graph_learner.GraphLearner` and
:class:`~fedstruct.estimators.sampling.JointModel`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from fedstruct.constraints import SEED
from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, DataError, NotFittedError
from fedstruct.estimators.parameters import check_parameter_names, check_signature
from fedstruct.estimators.persistence import Persistent, inputs_of
from fedstruct.estimators.secure import secure_aggregation_config
from fedstruct.fl.backend import Backend, run_on_backend
from fedstruct.fl.divergence import diverged, non_finite
from fedstruct.fl.grid import torch_threads
from fedstruct.fl.participation import Participation
from fedstruct.fl.rounds import RoundReport
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.fl.threads import default_threads
from fedstruct.registry import register_estimator

__all__ = ["FederatedEstimator"]


class FederatedEstimator(Persistent, BaseEstimator, ABC):
    """Base of the methods' scikit-learn estimators.

    A subclass names :attr:`method` and its :attr:`config_class`,
    :attr:`client_class` and :attr:`server_class` in its class statement (every
    method package exports these four)::

        class FedCD(GraphLearner, method="fedcd", config=FedCDConfig,
                    client=FedCDClient, server=FedCDServer): ...

    Its ``__init__`` takes the method's own inputs (a task, a schema), ``seed``,
    ``participation``, every field of the config with the field's default, and
    ``secure_aggregation``, and stores each unchanged under its name (the class
    statement checks the list against the config:
    :func:`~fedstruct.estimators.parameters.check_signature`).
    It provides :meth:`learn` (what to keep from the server's final state) and the
    persistence of what it learned (:meth:`learned_state`, :meth:`restore`).

    :meth:`fit` first calls :meth:`prepare`, which checks the parameters and keeps
    what the run derives from them, with a trailing underscore as scikit-learn's
    fitted attributes: ``config_`` (the method's config dataclass, built from the
    attributes, so its checks run and give their errors), ``secure_aggregation_``
    and a method's own (:meth:`check_params`). :meth:`make_client` and
    :meth:`make_server` build the classes from those; a method whose client or
    server needs more overrides them. A method with extra inputs to ``fit`` (e.g. a
    server-held test set) overrides ``fit`` to take them and calls ``super().fit``.
    :meth:`evaluate` gives every metric of the fitted estimator on test data (a dict)
    and :meth:`score` the main one (a float, higher is better); :meth:`learned_graphs`
    and :meth:`learned_tables` name the files a run writes besides the model files.

    Parameters
    ----------
    seed
        The run's seed (every random draw of the run).
    participation
        Who takes part in each round (default: everyone every round).
    secure_aggregation
        ``True`` (or a :class:`~fedstruct.fl.secagg.SecAggConfig`) to let the server
        see only the sum of the clients' summable replies (docs/privacy.md); refused
        by a method whose server needs each reply.
    """

    #: The method's name (checkpoint identity and progress label).
    method: ClassVar[str]
    #: The dataclass of every hyper-parameter, the client and the server algorithm.
    config_class: ClassVar[type]
    client_class: ClassVar[type]
    server_class: ClassVar[type]
    #: The key of :meth:`evaluate`'s result that :meth:`score` returns.
    score_metric: ClassVar[str] = ""
    #: What the method's graph is, in words (``fedstruct export --format bif`` says it
    #: is not BIF's DAG with a probability table per variable).
    learns: ClassVar[str] = "a graph without probability tables"
    #: Why the method refuses ``secure_aggregation=True`` in one clause: ``""`` where
    #: its server takes it, ``None`` (default) for "not supported yet"
    #: (:mod:`fedstruct.estimators.secure`).
    secure_aggregation_refusal: ClassVar[str | None] = None

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
        subclass of a method's estimator inherits those it does not name), and check
        that ``__init__`` lists the config's fields with their defaults.

        Raises
        ------
        TypeError
            For an ``__init__`` that does not
            (:func:`~fedstruct.estimators.parameters.check_signature`).
        """
        super().__init_subclass__(**kwargs)
        for attribute, value in (
            ("method", method),
            ("config_class", config),
            ("client_class", client),
            ("server_class", server),
        ):
            if value is not None:
                setattr(cls, attribute, value)
        if hasattr(cls, "config_class"):
            check_signature(cls)
        if method is not None:  # the method's estimator, for fedstruct.load (fedstruct.registry)
            register_estimator(method, cls)

    def __new__(cls, *args: Any, **params: Any) -> Self:
        """Refuse a parameter name the class does not take in one line (a
        ``ConfigError`` naming the closest valid one), as :meth:`set_params` does,
        rather than Python's ``TypeError``."""
        check_parameter_names(cls, params)
        return super().__new__(cls)

    def __init__(
        self,
        *,
        seed: int = 0,
        participation: Participation | None = None,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        self.seed = seed
        self.participation = participation
        self.secure_aggregation = secure_aggregation

    def __getattr__(self, name: str) -> Any:
        """A learned attribute (``model_``, ``graph_``, ``config_``: a public name
        ending in ``_``) that is not set yet: the estimator is not fitted.

        Raises
        ------
        NotFittedError
            For such a name (an ``AttributeError`` too, so ``hasattr`` and
            ``getattr(model, "graph_", None)`` work as before); ``AttributeError``
            for any other name.
        """
        if name.endswith("_") and not name.startswith("_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet (it has no {name}): call "
                "fit(clients) first, or fedstruct.load(DIR) a run that saved one"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # parameters ---------------------------------------------------------------
    def set_params(self, **params: Any) -> Self:
        """Set parameters (scikit-learn's), checked when :meth:`fit` runs.

        Raises
        ------
        ConfigError
            For a name that is not a parameter (listing the valid ones).
        """
        check_parameter_names(type(self), params)
        return super().set_params(**params)  # type: ignore[no-any-return]

    def prepare(self) -> Self:
        """Check the parameters together and keep what the run derives from them:
        ``config_`` (the method's config dataclass of the hyper-parameters),
        ``secure_aggregation_`` (a :class:`~fedstruct.fl.secagg.SecAggConfig` or
        ``None``) and the method's own (:meth:`check_params`). :meth:`fit` calls it
        first, :func:`fedstruct.load` before :meth:`restore`, and a deployed node
        before it builds its client with :meth:`make_client`.

        Raises
        ------
        ConfigError
            One line naming the parameter (or the two that do not go together),
            what it must be and what it got.
        """
        if not SEED.accepts(self.seed):
            raise ConfigError(SEED.message(f"{self.method} seed", self.seed))
        if self.participation is not None and not isinstance(self.participation, Participation):
            raise ConfigError(
                f"{self.method} participation must be a fedstruct Participation (e.g. "
                f"fedstruct.fl.Participation(dropout=0.1)) or None, got "
                f"{type(self.participation).__name__} {self.participation!r}"
            )
        fields = dataclasses.fields(self.config_class)
        self.config_ = self.config_class(**{f.name: getattr(self, f.name) for f in fields})
        self.check_params()
        self.secure_aggregation_ = secure_aggregation_config(
            self.method, self.secure_aggregation, self.secure_aggregation_refusal
        )
        if self.secure_aggregation_ is not None:
            self.check_secure_aggregation()
        return self

    def check_params(self) -> None:
        """Check the method's own parameters (its inputs, and what the config alone
        cannot judge) and keep what is derived from them (an optional hook, called by
        :meth:`prepare` once ``config_`` is built: nothing by default; raise a
        :class:`ConfigError` with the reason)."""

    def check_secure_aggregation(self) -> None:
        """Refuse settings that secure aggregation cannot serve (an optional hook,
        called by :meth:`prepare` when it is on: nothing by default; raise a
        :class:`ConfigError` with the reason)."""

    # the federation -----------------------------------------------------------
    def make_client(self, data: ClientData) -> Any:
        """The client holding ``data``: ``client_class(data, config=..., seed=...)``."""
        return self.client_class(data, config=self.config_, seed=self.seed)

    def make_server(self) -> Any:
        """A fresh server algorithm: ``server_class(config)``."""
        return self.server_class(self.config_)

    def check_clients(self, clients: Sequence[ClientData] | Sequence[str]) -> None:
        """Validate the clients before any round (an optional hook: nothing by default)."""

    @abstractmethod
    def learn(self, state: Any) -> None:
        """Set the learned attributes (ending in ``_``) from the server's final state.

        Raises a method's errors for a run that learned nothing."""

    def fit(
        self,
        clients: Sequence[ClientData] | Sequence[str],
        *,
        backend: str | Backend = "local",
        checkpoint: Path | None = None,
        resume: bool = False,
        progress: bool = False,
        stop_after: int | None = None,
        on_round: Callable[[RoundReport], None] | None = None,
    ) -> Self:
        """Check the parameters (:meth:`prepare`), run the method over ``clients`` and
        keep what it learned.

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
        on_round
            Called after each round with what an observer may see of it
            (:class:`~fedstruct.fl.rounds.RoundReport`; a run's progress file).

        Sets ``history_`` (per-round records), ``traffic_`` (bytes each way per round
        and client) and the method's own attributes (:meth:`learn`). Torch runs with
        :func:`~fedstruct.fl.threads.default_threads` threads meanwhile (one, unless
        ``FEDSTRUCT_THREADS`` says otherwise).

        Raises
        ------
        ConfigError
            For a parameter that is not valid (:meth:`prepare`), or if the training
            diverged (weights no longer finite: the learning rate).
        DataError
            If ``clients`` is not a list of ClientData (or names on a deployment).
        """
        self.prepare()
        self._check_fit_clients(clients)
        self.check_clients(clients)
        with torch_threads(default_threads()):
            result = run_on_backend(
                self,  # type: ignore[arg-type]
                clients,
                backend=backend,
                participation=self.participation,
                seed=int(self.seed),
                secure_aggregation=self.secure_aggregation_,
                checkpoint=checkpoint,
                resume=resume,
                fingerprint=self.fingerprint(),
                progress=progress,
                stop_after=stop_after,
                label=self.method,
                on_round=on_round,
            )
        self.history_ = result.state.history
        self.traffic_ = result.grid.traffic
        self.data_ = inputs_of(clients)
        self.learn(result.state)
        if stop_after is None:
            self._check_converged()
        return self

    def _check_fit_clients(self, clients: Any) -> None:
        """Refuse what ``fit`` cannot take as its clients (a one-line :class:`DataError`):
        anything but a list (or tuple) of :class:`~fedstruct.data.ClientData`, or of
        names on a deployment backend."""
        if isinstance(clients, str | bytes) or not isinstance(clients, Sequence):
            got = type(clients).__name__
        else:
            odd = [c for c in clients if not isinstance(c, ClientData | str)]
            if not odd:
                return
            got = f"a {type(clients).__name__} holding {type(odd[0]).__name__}"
        raise DataError(
            f"{type(self).__name__}.fit takes the clients: a list of ClientData, one per site "
            "(e.g. fedstruct.data.read_federation(files).clients), or their names on a "
            f"deployment; got {got}"
        )

    def _check_converged(self) -> None:
        """Refuse a model whose learned weights are not finite, for a method trained
        with a ``learning_rate`` (its SGD or Adam diverged: every prediction would be
        NaN or one class): a :class:`ConfigError` naming the weight and the rate."""
        rate = getattr(self.config_, "learning_rate", None)
        if rate is None:
            return
        arrays, _ = self.learned_state()
        floats = {k: v for k, v in arrays.items() if np.asarray(v).dtype.kind == "f"}
        bad = non_finite(floats)
        if bad is not None:
            raise diverged(self.method, f"its learned weight {bad!r}", float(rate))

    # what a run writes --------------------------------------------------------
    def learned_graphs(self) -> dict[str, tuple[Any, Any]]:
        """The graphs the fit learned, by file stem: ``stem -> (graph, confidence)``,
        the confidence per edge (a mapping or an array over the graph's names, as
        :func:`fedstruct.graphs.io.write_graph` takes it) or ``None``. By default the
        ``graph_`` attribute, if the method has one, under ``"graph"``."""
        graph = getattr(self, "graph_", None)
        return {} if graph is None else {"graph": (graph, None)}

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """Tables the fit learned besides its graphs and model files, by file stem: a
        run writes each as ``STEM.csv`` (its index as the first column). None by
        default; FED-CD gives its edge-probability matrix."""
        return {}

    # evaluation ---------------------------------------------------------------
    def evaluate(self, X: Any, y: Any = None) -> dict[str, float]:
        """Every metric of the fitted estimator on test data ``X`` (rows to predict, or
        the true graph for a method that learns a graph), by name (a method overrides
        this).

        Raises
        ------
        ConfigError
            For an estimator that has no evaluation.
        """
        raise ConfigError(
            f"{self.method} has no evaluation of its own: compare its learned attributes "
            "with what you know"
        )

    def score(self, X: Any, y: Any = None) -> float:
        """The main metric of :meth:`evaluate` (:attr:`score_metric`) as a float,
        higher is better (scikit-learn's ``score(X, y=None)``)."""
        return float(self.evaluate(X, y)[self.score_metric])

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags (its 1.6+ asks every estimator, e.g. ``GridSearchCV``):
        no declared estimator type, no target needed (``fit`` takes the clients, a list
        cross-validation splits by site; :meth:`Predictor.scored_rows`)."""
        from sklearn.utils import Tags, TargetTags  # scikit-learn >= 1.6, where asked

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))
