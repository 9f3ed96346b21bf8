"""What every method's estimator shares: its identity and how it runs on a backend."""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.constraints import SEED
from fedstruct.data.client import ClientData
from fedstruct.data.graph_files import given_graph
from fedstruct.errors import (
    ArtifactError,
    ConfigError,
    DataError,
    NotFittedError,
    UnknownVariableError,
    unknown_choice_message,
)
from fedstruct.fl.backend import Backend, get_backend, run_on_backend
from fedstruct.fl.bootstrap import (
    MAX_REPLICATES,
    check_clients_here,
    deployment_refusal,
    replicate_graphs,
)
from fedstruct.fl.codebook import Codebook
from fedstruct.fl.divergence import diverged, non_finite
from fedstruct.fl.grid import torch_threads
from fedstruct.fl.participation import Participation
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.fl.threads import default_threads
from fedstruct.graphs.frequencies import CONSENSUS, PAG_PATTERNS, EdgeFrequencies
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import graph_metrics
from fedstruct.registry import register_estimator

__all__ = [
    "FederatedEstimator",
    "GraphLearner",
    "InputColumns",
    "Prediction",
    "check_targets",
    "config_signature",
]


class InputColumns(NamedTuple):
    """The columns a predicting estimator reads (:meth:`FederatedEstimator.input_columns`).

    Attributes
    ----------
    required
        Columns new rows must hold.
    read
        Every column the model reads (the required ones, the labels it predicts,
        evidence it may use).
    others_allowed
        Whether rows may hold columns outside ``read`` (left out, and named): a
        FedNGM site's own variables, which the global model does not read. Otherwise
        such a column is an error.
    labels
        Columns of ``read`` that are only labels the model predicts (never its
        input): a missing value there is a label the rows do not give.
    missing_values
        Whether the model imputes missing values of its inputs (FedAvg trained on
        continuous or incomplete columns); otherwise a missing input is an error.
    """

    required: tuple[str, ...]
    read: tuple[str, ...]
    others_allowed: bool = False
    labels: tuple[str, ...] = ()
    missing_values: bool = False

    def unread(self, columns: Sequence[str]) -> list[str]:
        """The columns of ``columns`` the model does not read and leaves out (only
        where others are allowed; otherwise they are an error, :meth:`check`)."""
        return [c for c in columns if c not in self.read] if self.others_allowed else []

    def check(self, columns: Sequence[str], where: str) -> None:
        """Check that rows with ``columns`` fit the model.

        Raises
        ------
        ArtifactError
            Naming the required columns missing and the unknown ones present (where
            others are not allowed), and what the model reads.
        """
        missing = [c for c in self.required if c not in columns]
        extra = [] if self.others_allowed else [c for c in columns if c not in self.read]
        if not (missing or extra):
            return
        parts = [f"lacks {_few(missing)}" if missing else "",
                 f"has {_few(extra)}, not the model's" if extra else ""]  # fmt: skip
        raise ArtifactError(
            f"{where}: its columns do not match the model: it "
            f"{' and '.join(p for p in parts if p)}; the model reads "
            f"{_few(self.required or self.read)}"
        )


def _few(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}] ({len(names)})"


class Prediction(NamedTuple):
    """What a predicting estimator says about some rows (:meth:`FederatedEstimator.prediction`).

    Attributes
    ----------
    states
        One column per predicted variable: its predicted state (a level name where
        the run's files named levels, else a code; a value for a continuous
        variable), indexed like the rows.
    probabilities
        Predicted categorical variable -> its states' probabilities: a frame indexed
        like the rows, one column per state (labelled as ``states`` names states).
    warnings
        What the user should know about these predictions, one line each (FedNGM:
        a target with no neighbour in the model's graph is predicted from no other
        variable). Also issued as :class:`~fedstruct.errors.FedstructWarning`.
    """

    states: pd.DataFrame
    probabilities: dict[str, pd.DataFrame]
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_probabilities(
        cls, probabilities: Mapping[str, NDArray[np.float64]], index: pd.Index
    ) -> Prediction:
        """The most probable state of each variable, from ``(rows, states)`` arrays
        whose column ``k`` is the state coded ``k``."""
        return cls(
            pd.DataFrame({v: p.argmax(axis=1) for v, p in probabilities.items()}, index=index),
            {v: pd.DataFrame(p, index=index) for v, p in probabilities.items()},
        )

    def named(self, codebook: Codebook | None) -> Prediction:
        """States and probability columns by the level names of ``codebook`` (as
        they are without one)."""
        if codebook is None:
            return self
        states = pd.DataFrame(
            {v: codebook.names(v, s.to_numpy()) for v, s in self.states.items()},
            index=self.states.index,
        )
        probabilities = {
            v: p.set_axis(list(codebook.names(v, p.columns.to_numpy())), axis=1)
            for v, p in self.probabilities.items()
        }
        return Prediction(states, probabilities, self.warnings)

    def table(self) -> pd.DataFrame:
        """One column per predicted variable (its state) and, for a categorical one,
        ``P(VAR=STATE)`` per state: what ``fedstruct predict`` writes."""
        columns: dict[str, Any] = {}
        for variable in self.states.columns:
            columns[variable] = self.states[variable].to_numpy()
            for state, p in self.probabilities.get(variable, {}).items():
                columns[f"P({variable}={state})"] = p.to_numpy()
        return pd.DataFrame(columns, index=self.states.index)


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
    them in its ``__init__``, calls ``super().__init__`` and records them with
    :meth:`_given` (so :meth:`get_params` returns them and ``sklearn.base.clone``
    works). :meth:`make_client` and
    :meth:`make_server` build the classes from the config and the seed; a method
    whose client or server needs more overrides them. :meth:`fit` runs the
    federation and calls :meth:`learn`; a method with extra inputs (e.g. a
    server-held test set) overrides ``fit`` to take them and calls ``super().fit``.
    :meth:`learned_state` and :meth:`restore` turn what ``fit`` learned into named
    arrays plus JSON and back (the run folder's ``model.safetensors`` and
    ``model.json``, :mod:`fedstruct.fl.artifact`).

    The class's signature (``inspect.signature(FedCD)``, ``help``, IPython and the
    editors that ask the running interpreter) lists the config's fields as
    keyword-only parameters with their defaults, in place of ``**params``
    (:func:`config_signature`); a name that is not a parameter is a
    :class:`~fedstruct.errors.ConfigError` naming the valid ones, in ``__init__`` as
    in :meth:`set_params`. :meth:`evaluate` gives every metric of the fitted estimator
    on test data (a dict) and :meth:`score` the main one (a float, higher is better);
    :meth:`learned_tables` names the tables a run writes besides graphs and model
    files.
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
    #: What the model's inputs are when its run read a user's files (``model.json``'s
    #: ``data``: variables, kinds, level names; or image shape and class names; set
    #: by :func:`fedstruct.load`, and by :meth:`fit` on clients read from files with
    #: one codebook, :attr:`~fedstruct.data.ClientData.schema`), else ``None``: rows
    #: are then codes already.
    data_: Mapping[str, Any] | None = None
    #: The key of :meth:`evaluate`'s result that :meth:`score` returns.
    score_metric: ClassVar[str] = ""
    #: Why the method refuses ``secure_aggregation=True`` in one clause: ``""`` where
    #: its server takes it, ``None`` (default) for "not supported yet".
    secure_aggregation_refusal: ClassVar[str | None] = None
    #: The run's secure aggregation (``None``: summable replies are summed in the clear).
    secure_aggregation: SecAggConfig | None

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
        subclass of a method's estimator inherits those it does not name), and the
        class's signature with the config's fields (:func:`config_signature`)."""
        super().__init_subclass__(**kwargs)
        if method is not None:  # the method's estimator, for fedstruct.load (fedstruct.registry)
            register_estimator(method, cls)
        for attribute, value in (
            ("method", method),
            ("config_class", config),
            ("client_class", client),
            ("server_class", server),
        ):
            if value is not None:
                setattr(cls, attribute, value)
        if hasattr(cls, "config_class"):
            cls.__signature__ = config_signature(cls.__init__, cls.config_class)  # type: ignore[attr-defined]

    def __init__(
        self, *, seed: int = 0, participation: Participation | None = None, **params: Any
    ) -> None:
        self._check_parameter_names(params)
        self._check_run_parameters(seed, participation)
        secure = params.pop("secure_aggregation", False)
        self.config = self.config_class(**params)
        self.seed = int(seed)
        self.participation = participation
        self.secure_aggregation = self._secure_aggregation(secure)
        self._params: dict[str, Any] = {
            "seed": seed,
            "participation": participation,
            "secure_aggregation": secure,
            **params,
        }

    def __getattr__(self, name: str) -> Any:
        """A learned attribute (``model_``, ``graph_``: a public name ending in ``_``)
        that is not set yet: the estimator is not fitted.

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

    def _check_run_parameters(self, seed: Any, participation: Any) -> None:
        """Refuse a ``seed`` numpy and torch cannot both take (the command line's
        ``--seed`` range) and a ``participation`` that is not a :class:`Participation`.

        Raises
        ------
        ConfigError
            One line naming the parameter, what it must be and what it got.
        """
        if not SEED.accepts(seed):
            raise ConfigError(SEED.message(f"{self.method} seed", seed))
        if participation is not None and not isinstance(participation, Participation):
            raise ConfigError(
                f"{self.method} participation must be a fedstruct Participation (e.g. "
                f"fedstruct.fl.Participation(dropout=0.1)) or None, got "
                f"{type(participation).__name__} {participation!r}"
            )

    def _check_fit_clients(self, clients: Any) -> None:
        """Refuse what ``fit`` cannot take as its clients: anything but a list (or tuple)
        of :class:`~fedstruct.data.ClientData`, or of names on a deployment backend.

        Raises
        ------
        DataError
            One line saying what ``fit`` takes and what it got.
        """
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

    def _secure_aggregation(self, given: bool | SecAggConfig) -> SecAggConfig | None:
        """The run's secure-aggregation settings (``None``: off), refused with the
        method's reason where its server cannot take them.

        Raises
        ------
        ConfigError
            If the method refuses it (:attr:`secure_aggregation_refusal`,
            :meth:`check_secure_aggregation`).
        """
        if given is False or given is None:
            return None
        config = given if isinstance(given, SecAggConfig) else SecAggConfig()
        if given is not True and not isinstance(given, SecAggConfig):
            raise ConfigError(
                f"{self.method}: secure_aggregation must be True, False or a SecAggConfig, "
                f"got {given!r}"
            )
        reason = self.secure_aggregation_refusal
        if reason is None:
            reason = (
                f"it is not supported yet for {self.method} (its exchanges are not wired to "
                "the secure sum; fedavg takes it)"
            )
        if reason:
            raise ConfigError(f"{self.method} refuses secure aggregation: {reason}")
        self.check_secure_aggregation()
        return config

    def check_secure_aggregation(self) -> None:  # noqa: B027
        """Refuse settings that secure aggregation cannot serve (an optional hook:
        nothing by default; raise a :class:`ConfigError` with the reason)."""

    def _given(self, **params: Any) -> None:
        """Record a subclass's own ``__init__`` arguments, as given (for :meth:`get_params`)."""
        self._params.update(params)

    # scikit-learn parameters --------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Every constructor parameter: the method's own inputs, ``seed``,
        ``participation`` and every field of the config (scikit-learn's contract:
        the objects given to ``__init__``, so ``sklearn.base.clone`` works)."""
        fields = {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)}
        return {**fields, **self._params}

    def set_params(self, **params: Any) -> Self:
        """Change constructor parameters (validated as ``__init__`` validates them).

        Raises
        ------
        ConfigError
            For a name that is not a parameter (listing the valid ones).
        """
        self._check_parameter_names(params)
        self.__init__(**{**self.get_params(), **params})  # type: ignore[misc]
        return self

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """Every constructor parameter's name: the method's own inputs, ``seed``,
        ``participation`` and the config's fields (the class's signature)."""
        return tuple(inspect.signature(cls).parameters)

    def _check_parameter_names(self, names: Iterable[str]) -> None:
        """Refuse a name that is not a constructor parameter (``__init__`` and
        :meth:`set_params` share this check).

        Raises
        ------
        ConfigError
            Naming the first unknown name, the closest valid one if it looks like a
            typo, and every valid name.
        """
        valid = self.parameter_names()
        unknown = [name for name in names if name not in valid]
        if unknown:
            raise ConfigError(
                unknown_choice_message(f"{self.method} parameter", unknown[0], valid, suggest=True)
            )

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

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """Tables the fit learned besides its graphs and model files, by file stem: a
        run writes each as ``STEM.csv`` (its index as the first column). None by
        default; FED-CD gives its edge-probability matrix."""
        return {}

    # Evaluation ---------------------------------------------------------------
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

    @staticmethod
    def _with_labels(rows: pd.DataFrame, y: Any, column: str) -> pd.DataFrame:
        """``rows`` with the labels ``y`` as their ``column`` (as given without ``y``).

        Raises
        ------
        DataError
            If ``y`` does not hold one label per row.
        """
        if y is None:
            return rows
        labels = np.asarray(y)
        if labels.ndim != 1 or len(labels) != len(rows):
            raise DataError(
                f"y holds {labels.shape} labels for {len(rows)} rows; give one "
                f"{column!r} label per row"
            )
        return rows.assign(**{column: labels})

    @abstractmethod
    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """What :meth:`fit` learned: named arrays (weights, matrices) and JSON-able
        metadata (graphs, schemas, names), the input of :meth:`restore`. Call it
        after :meth:`fit`."""

    @abstractmethod
    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""

    def input_columns(self) -> InputColumns:
        """For :meth:`prediction`: which columns new rows must and may hold (a method
        that predicts overrides this).

        Raises
        ------
        ConfigError
            For a method that learns only a graph.
        """
        raise self._not_a_predictor()

    def codebook(self) -> Codebook | None:
        """The codebook the run read its files with (``None`` for built-in data)."""
        return Codebook.from_saved(self.data_)

    def model_rows(self, rows: pd.DataFrame, *, source: str | Path | None = None) -> pd.DataFrame:
        """``rows`` as the model reads them: their columns checked against
        :meth:`input_columns`, those it does not read left out (where allowed), and
        coded by the run's codebook when the run read a user's files (level names
        in); as given otherwise.

        Parameters
        ----------
        rows
            A table with the column names the run's sites had.
        source
            The file the rows came from, named in messages.

        Raises
        ------
        ArtifactError
            If the columns do not fit the model, or it only learned a graph.
        DataError
            For a level the run's files never had, or a missing value in an input of
            a model that imputes none.
        """
        try:
            columns = self.input_columns()
        except ConfigError as exc:
            raise ArtifactError(str(exc)) from None
        columns.check(list(rows.columns), "the rows" if source is None else str(source))
        rows = rows.drop(columns=columns.unread(list(rows.columns)))
        codebook = self.codebook()
        if codebook is None:
            return rows
        missing = "keep" if columns.missing_values else "error"
        return codebook.encode(rows, labels=columns.labels, source=source, missing=missing)

    def prediction(
        self,
        rows: pd.DataFrame,
        targets: Sequence[str] | None = None,
        *,
        source: str | Path | None = None,
    ) -> Prediction:
        """Predict ``targets`` (default: what the method predicts) for ``rows``.

        ``rows`` are read as :meth:`model_rows` reads them: for a model of a run on a
        user's files, with the level names of those files, and the predicted states
        are named by level too; otherwise codes in, codes out. ``source``: the file
        the rows came from, named in messages.

        Raises
        ------
        ArtifactError
            For a method that learns only a graph, or rows whose columns do not fit.
        DataError
            For a level the run's files never had.
        """
        coded = self.model_rows(rows, source=source)
        return self.coded_prediction(coded, targets).named(self.codebook())

    def scored_rows(self, X: Any, y: Any, column: str) -> pd.DataFrame:
        """The rows :meth:`evaluate` scores, coded as the training data were: ``X``
        with the labels ``y`` as its ``column``, read as :meth:`model_rows` reads a
        table, or, when ``X`` is a list of clients' data, their rows (coded already):
        scikit-learn's cross-validation (``GridSearchCV``) splits the list of clients
        that ``fit`` takes, and scores on the sites left out.

        Raises
        ------
        ArtifactError
            If the columns do not fit the model.
        """
        if not _all_clients(X):
            return self.model_rows(self._with_labels(X, y, column))
        rows = pd.concat([c.rows for c in X], ignore_index=True)
        columns = self.input_columns()
        columns.check(list(rows.columns), "the clients' rows")
        return self._with_labels(rows.drop(columns=columns.unread(list(rows.columns))), y, column)

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags (its 1.6+ asks every estimator, e.g. ``GridSearchCV``):
        no declared estimator type, no target needed (``fit`` takes the clients, a list
        cross-validation splits by site; :meth:`scored_rows`)."""
        from sklearn.utils import Tags, TargetTags  # scikit-learn >= 1.6, where asked

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """:meth:`prediction` on rows coded as the training data were, states by code
        (a method that predicts overrides this).

        Raises
        ------
        ConfigError
            For a method that learns only a graph.
        """
        raise self._not_a_predictor()

    def _not_a_predictor(self) -> ConfigError:
        return ConfigError(
            f"{self.method} learns a graph, not a model that predicts; look at it with "
            "'fedstruct show DIR' or export it with 'fedstruct export DIR'"
        )

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
        and client) and the method's own attributes (:meth:`learn`). Torch runs with
        :func:`~fedstruct.fl.threads.default_threads` threads meanwhile (one, unless
        ``FEDSTRUCT_THREADS`` says otherwise).

        Raises
        ------
        DataError
            If ``clients`` is not a list of ClientData (or names on a deployment).
        ConfigError
            If the training diverged (weights no longer finite: the learning rate).
        """
        self._check_fit_clients(clients)
        self.check_clients(clients)
        with torch_threads(default_threads()):
            result = self._run(clients, backend, checkpoint, resume, progress, stop_after)
        self.history_ = result.state.history
        self.traffic_ = result.grid.traffic
        self.data_ = _read_from(clients)
        self.learn(result.state)
        if stop_after is None:
            self._check_converged()
        return self

    def _check_converged(self) -> None:
        """Refuse a model whose learned weights are not finite, for a method trained
        with a ``learning_rate`` (its SGD or Adam diverged: every prediction would be
        NaN or one class).

        Raises
        ------
        ConfigError
            Naming the weight and the learning rate.
        """
        rate = getattr(self.config, "learning_rate", None)
        if rate is None:
            return
        arrays, _ = self.learned_state()
        floats = {k: v for k, v in arrays.items() if np.asarray(v).dtype.kind == "f"}
        bad = non_finite(floats)
        if bad is not None:
            raise diverged(self.method, f"its learned weight {bad!r}", float(rate))

    def _run(
        self,
        clients: Sequence[ClientData] | Sequence[str],
        backend: str | Backend,
        checkpoint: Path | None,
        resume: bool,
        progress: bool,
        stop_after: int | None,
    ) -> Any:
        return run_on_backend(
            self,  # type: ignore[arg-type]
            clients,
            backend=backend,
            participation=self.participation,
            seed=self.seed,
            secure_aggregation=self.secure_aggregation,
            checkpoint=checkpoint,
            resume=resume,
            fingerprint=self.fingerprint(),
            progress=progress,
            stop_after=stop_after,
            label=self.method,
        )

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
                # only when on: the fingerprints of plain runs stay as they were
                **(
                    {"secure_aggregation": repr(self.secure_aggregation)}
                    if self.secure_aggregation is not None
                    else {}
                ),
            },
            sort_keys=True,
        )


class GraphLearner(FederatedEstimator):
    """Base of the estimators that learn a graph (``graph_``), not a model that predicts.

    :meth:`evaluate` compares the learned graph with a true one
    (:func:`~fedstruct.graphs.metrics.graph_metrics`: SHD, edge and orientation
    precision/recall/F1) and :meth:`score` is the F1 of its edges, its adjacencies
    (``f1_edge``): which pairs are adjacent, whatever the marks, so the same score
    suits a DAG, a CPDAG and a PAG.

    With ``bootstrap=B``, :meth:`fit` then runs the federation ``B`` more times, each
    site resampling its own rows (:mod:`fedstruct.fl.bootstrap`, in ``jobs``
    processes), and keeps how often each pair came back adjacent and with which marks
    (``edge_frequencies_``, :class:`~fedstruct.graphs.frequencies.EdgeFrequencies`)
    and their consensus graph (``consensus_graph_``); ``graph_`` stays the graph of
    the sites' own rows. Both are saved with the run (``consensus.*``, and frequency
    columns in ``edges.csv`` and ``graph.json``; docs/confidence.md).
    """

    score_metric: ClassVar[str] = "f1_edge"
    #: The mark patterns the method's graphs hold (edge-frequency columns).
    mark_patterns: ClassVar[tuple[str, ...]] = PAG_PATTERNS
    #: Whether the consensus must be acyclic (a method that learns DAGs).
    acyclic_consensus: ClassVar[bool] = False
    #: The method's own parameter of processes inside one fit, set to 1 in a replicate
    #: when replicates run in parallel (``None``: it has none).
    inner_workers: ClassVar[str | None] = None
    #: What a bootstrap learned (``None``: no bootstrap ran).
    edge_frequencies_: EdgeFrequencies | None = None
    consensus_graph_: Graph | None = None

    def __init__(
        self,
        *,
        seed: int = 0,
        participation: Participation | None = None,
        bootstrap: int | None = None,
        subsample: float | None = None,
        correct_duplicates: bool = True,
        jobs: int | None = None,
        **params: Any,
    ) -> None:
        super().__init__(seed=seed, participation=participation, **params)
        if not isinstance(correct_duplicates, bool | np.bool_):
            raise ConfigError(
                f"{self.method} correct_duplicates = {correct_duplicates!r}: give true (a "
                "bootstrap sample's rows count half a row each in the CI tests) or false"
            )
        if subsample is not None and not (isinstance(subsample, float) and 0 < subsample < 1):
            raise ConfigError(
                f"{self.method} subsample = {subsample!r}: give the share of each site's rows "
                "a resampled run draws, between 0 and 1 (exclusive), or None for a bootstrap"
            )
        for name, value in (("bootstrap", bootstrap), ("jobs", jobs)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1
            ):
                raise ConfigError(
                    f"{self.method} {name} = {value!r}: give a whole number >= 1, or None"
                )
        if bootstrap is not None and bootstrap > MAX_REPLICATES:
            raise ConfigError(
                f"{self.method} bootstrap = {bootstrap}: each replicate runs the whole "
                f"federation again (about {bootstrap} times the fit's own time); give at "
                f"most {MAX_REPLICATES:,} (an edge's frequency has a standard error of at "
                "most 0.5/√B; docs/confidence.md)"
            )
        #: ``B``, the resampled federations run after the fit (``None``: none).
        self.bootstrap = None if bootstrap is None else int(bootstrap)
        #: Processes running them (``None``: the cores this process may use).
        #: Each resampled run's share of a site's rows, drawn without replacement
        #: (``None``: a bootstrap sample, as many rows drawn with replacement).
        self.subsample = subsample
        #: A bootstrap sample's rows count half a row each in the CI tests (false: the
        #: plain bootstrap; :meth:`~fedstruct.data.ClientData.resampled`).
        self.correct_duplicates = bool(correct_duplicates)
        self.jobs = None if jobs is None else int(jobs)
        self._given(
            bootstrap=self.bootstrap,
            subsample=subsample,
            correct_duplicates=self.correct_duplicates,
            jobs=self.jobs,
        )

    def fit(self, clients: Sequence[ClientData] | Sequence[str], **run_options: Any) -> Self:
        """Run the federation (:meth:`FederatedEstimator.fit`); with ``bootstrap`` then
        its ``B`` site-resampled replicates (not after a run stopped early).

        Raises
        ------
        ConfigError
            With ``bootstrap`` on a backend whose nodes hold the rows (a deployment).
        """
        if (
            self.bootstrap
            and not get_backend(run_options.get("backend", "local")).needs_client_data
        ):
            raise deployment_refusal(self.method)
        started = time.monotonic()
        super().fit(clients, **run_options)
        seconds = time.monotonic() - started
        self.edge_frequencies_ = self.consensus_graph_ = None
        finished = run_options.get("stop_after") is None
        if self.bootstrap and finished and getattr(self, "graph_", None) is not None:
            self._fit_bootstrap(check_clients_here(clients, self.method), run_options, seconds)
        return self

    def _fit_bootstrap(
        self, clients: list[ClientData], run_options: Mapping[str, Any], seconds: float
    ) -> None:
        """Run the replicates (each about as long as the fit's ``seconds``: the progress
        says what they will take) and keep their frequencies and consensus."""
        params = {
            **self.get_params(),
            "bootstrap": None,
            "subsample": None,
            "correct_duplicates": True,
            "jobs": None,
        }
        if self.inner_workers is not None and self.jobs != 1:
            params[self.inner_workers] = 1  # replicates in parallel: one process each
        graphs = replicate_graphs(
            type(self),
            params,
            clients,
            int(self.bootstrap or 0),
            seed=self.seed,
            subsample=self.subsample,
            correct_duplicates=self.correct_duplicates,
            jobs=self.jobs,
            progress=bool(run_options.get("progress", False)),
            fit_seconds=seconds,
        )
        self._keep_frequencies(EdgeFrequencies.of(graphs, self.graph_.names, self.mark_patterns))

    def _keep_frequencies(self, frequencies: EdgeFrequencies) -> None:
        self.edge_frequencies_ = frequencies
        self.consensus_graph_ = frequencies.consensus(CONSENSUS, acyclic=self.acyclic_consensus)

    def with_consensus(self, graphs: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
        """``graphs`` (a method's :meth:`learned_graphs`) and, after a bootstrap, the
        consensus graph (``consensus``, each edge with its adjacency frequency)."""
        if self.consensus_graph_ is None or self.edge_frequencies_ is None:
            return graphs
        frequency = self.edge_frequencies_.adjacency_matrix()
        return {**graphs, "consensus": (self.consensus_graph_, frequency)}

    def learned_tables(self) -> dict[str, pd.DataFrame]:
        """After a bootstrap, ``edge-frequencies``: every pair adjacent in some
        replicate, whether the learned graph has it (``in_graph``: a frequent pair the
        run on the sites' own rows lacks is read apart, docs/confidence.md), and its
        adjacency and mark-pattern frequencies
        (:meth:`~fedstruct.graphs.frequencies.EdgeFrequencies.table`); else none."""
        if self.edge_frequencies_ is None:
            return {}
        table = self.edge_frequencies_.table()
        graph = self.graph_
        in_graph = [
            a in graph and b in graph and graph.is_adjacent(a, b)
            for a, b in zip(table["from"], table["to"], strict=True)
        ]
        table.insert(2, "in_graph", in_graph)
        return {"edge-frequencies": table.set_index(["from", "to"])}

    def graph_frequencies(self) -> dict[str, EdgeFrequencies]:
        """Saved graph stem -> the edge frequencies its edges' rows carry (the learned
        graph's and the consensus's after a bootstrap; none otherwise)."""
        if self.edge_frequencies_ is None:
            return {}
        return {"graph": self.edge_frequencies_, "consensus": self.edge_frequencies_}

    def site_graphs(self) -> dict[str, Graph]:
        """Each site's own graph as the server saw it (site name -> graph): what the
        learned graph's edges are compared with, edge by edge (their site agreement,
        :func:`~fedstruct.graphs.metrics.edge_site_votes`). None here; a method that
        keeps them says so, and none under secure aggregation, where no site's graph
        is seen."""
        return {}

    def bootstrap_state(self) -> dict[str, Any]:
        """For :meth:`learned_state`'s JSON: the bootstrap's counts (empty without one)."""
        if self.edge_frequencies_ is None:
            return {}
        return {"bootstrap": self.edge_frequencies_.to_json()}

    def restore_bootstrap(self, meta: Mapping[str, Any]) -> None:
        """Set ``edge_frequencies_`` and ``consensus_graph_`` from :meth:`bootstrap_state`."""
        self.edge_frequencies_ = self.consensus_graph_ = None
        if "bootstrap" in meta:
            self._keep_frequencies(EdgeFrequencies.from_json(meta["bootstrap"], "model.json"))

    def evaluate(self, X: Graph | str | Path, y: None = None) -> dict[str, float]:
        """The learned graph's metrics against the true graph ``X``.

        Parameters
        ----------
        X
            The true graph: a :class:`~fedstruct.graphs.Graph`, or a graph file or run
            folder (:func:`~fedstruct.data.graph_files.given_graph`). Both graphs are
            placed over the union of their variables (one a graph lacks is isolated in
            it), the truth's order first.
        y
            Not used: present for scikit-learn's ``score(X, y=None)``; must be ``None``.

        Raises
        ------
        ConfigError
            If ``y`` is given, ``X`` is not a graph, or no graph was learned (a run
            stopped before its graph was built).
        """
        return graph_metrics(*self._compared_graphs(X, y))

    def _compared_graphs(self, X: Any, y: Any) -> tuple[Graph, Graph]:
        """The true graph ``X`` and the learned graph, both over the union of their
        variables (the truth's order first): what :meth:`evaluate` compares."""
        truth = self._truth(X, y)
        learned = self._learned_graph()
        names = [*truth.names, *(v for v in learned.names if v not in truth)]
        return truth.expand(names), learned.expand(names)

    def _truth(self, X: Any, y: Any) -> Graph:
        if y is not None:
            raise ConfigError(
                f"{self.method} learns a graph: score/evaluate take the true graph only, "
                "not y; call score(truth)"
            )
        truth = given_graph(X) if isinstance(X, (Graph, str, Path)) else None
        if truth is None:
            raise ConfigError(
                f"{self.method} learns a graph: score/evaluate take the true graph (a Graph, "
                f"or a graph file), not {type(X).__name__}"
            )
        return truth

    def _learned_graph(self) -> Graph:
        graph = getattr(self, "graph_", None)
        if graph is None:
            raise ConfigError(
                f"{self.method} has learned no graph to evaluate (fit it first, without "
                "stop_after before the graph is built)"
            )
        return graph


def _all_clients(X: Any) -> bool:
    """Whether ``X`` is a non-empty list (or tuple) of clients' data."""
    return isinstance(X, list | tuple) and bool(X) and all(isinstance(c, ClientData) for c in X)


def _read_from(clients: Sequence[ClientData] | Sequence[str]) -> dict[str, Any] | None:
    """What the clients' coded rows mean when every one was read from a user's file
    with one codebook (:attr:`ClientData.schema`): the estimator's ``data_``, so that
    it reads new rows by their level names, as a model loaded from the run does;
    ``None`` otherwise (rows given as codes, or names on a deployment)."""
    schemas = {id(c.schema): c.schema for c in clients if isinstance(c, ClientData)}
    if len(schemas) != 1 or not all(isinstance(c, ClientData) for c in clients):
        return None
    schema = next(iter(schemas.values()))
    return None if schema is None else schema.inputs()


def config_signature(init: Any, config_class: type) -> inspect.Signature:
    """The signature of an estimator class whose ``__init__`` is ``init``: its
    parameters without ``self``, with ``**params`` replaced by the fields of
    ``config_class`` as keyword-only parameters with their defaults (what
    ``inspect.signature``, ``help`` and IDEs show)."""
    parameters = list(inspect.signature(init).parameters.values())[1:]
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return inspect.Signature(parameters)
    own = [p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in own}
    fields = [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, default=_default(f), annotation=f.type
        )
        for f in dataclasses.fields(config_class)
        if f.name not in taken
    ]
    if "secure_aggregation" not in taken:  # every method's run option (FederatedEstimator)
        fields.append(
            inspect.Parameter(
                "secure_aggregation",
                inspect.Parameter.KEYWORD_ONLY,
                default=False,
                annotation="bool | SecAggConfig",
            )
        )
    return inspect.Signature([*own, *fields])


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return inspect.Parameter.empty


def check_targets(targets: Sequence[str] | None, predicted: Sequence[str]) -> list[str]:
    """``targets`` (default: every one of ``predicted``), checked to be predicted ones.

    Raises
    ------
    UnknownVariableError
        For a target the model does not predict (listing those it does).
    """
    chosen = list(predicted) if not targets else list(targets)
    unknown = [t for t in chosen if t not in predicted]
    if unknown:
        raise UnknownVariableError(
            f"the model does not predict {unknown[0]!r}; it predicts {list(predicted)}"
        )
    return chosen
