"""The capability of an estimator that predicts: which columns it reads, what it says
about new rows, and how rows named by a user's level names reach it.

A method whose model predicts (FedAvg, CAFE, F-CMs, FedNGM) derives from
:class:`Predictor` as well as :class:`~fedstruct.estimators.FederatedEstimator` and
provides :meth:`Predictor.input_columns` and :meth:`Predictor.coded_prediction`; a
generic verb (``fedstruct predict``, ``fedstruct show``) asks ``isinstance(model,
Predictor)`` instead of naming the methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.errors import ArtifactError, ConfigError, DataError, UnknownVariableError
from fedstruct.fl.codebook import Codebook

__all__ = ["InputColumns", "Prediction", "Predictor", "check_targets", "not_a_predictor"]


class InputColumns(NamedTuple):
    """The columns a predicting estimator reads (:meth:`Predictor.input_columns`).

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
    """What a predicting estimator says about some rows (:meth:`Predictor.prediction`).

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


def not_a_predictor(method: str) -> str:
    """What ``fedstruct predict`` says of a run whose method learns only a graph."""
    return (
        f"{method} learns a graph, not a model that predicts; look at it with "
        "'fedstruct show DIR' or export it with 'fedstruct export DIR'"
    )


class Predictor(ABC):
    """An estimator whose fitted model predicts variables of new rows.

    A subclass says which columns new rows hold (:meth:`input_columns`) and predicts
    rows coded as the training data were (:meth:`coded_prediction`); this class reads
    a user's rows (by the level names of the run's files, :meth:`model_rows`), names
    the predicted states again (:meth:`prediction`), and gives ``evaluate`` its rows
    (:meth:`scored_rows`: a table, or a list of held-out clients' data, as
    scikit-learn's cross-validation over sites passes them).
    """

    #: Provided by :class:`~fedstruct.estimators.FederatedEstimator`.
    method: ClassVar[str]
    data_: Mapping[str, Any] | None

    @abstractmethod
    def input_columns(self) -> InputColumns:
        """Which columns new rows must and may hold."""

    @abstractmethod
    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """:meth:`prediction` on rows coded as the training data were, states by code."""

    def image_shape(self) -> tuple[int, int, int] | None:
        """``(channels, height, width)`` of the images the model reads, or ``None``
        for a model of a table's rows (default)."""
        return None

    def is_regression(self) -> bool:
        """Whether the model predicts a continuous target's value (default: no, it
        predicts classes or states)."""
        return False

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
            If the columns do not fit the model, or it has nothing to predict with
            (a FedNGM run that released no global model).
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
            For rows whose columns do not fit.
        DataError
            For a level the run's files never had.
        """
        coded = self.model_rows(rows, source=source)
        return self.coded_prediction(coded, targets).named(self.codebook())

    def scored_rows(self, X: Any, y: Any, column: str) -> pd.DataFrame:
        """The rows ``evaluate`` scores, coded as the training data were: ``X``
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
            return self.model_rows(_with_labels(X, y, column))
        rows = pd.concat([c.rows for c in X], ignore_index=True)
        columns = self.input_columns()
        columns.check(list(rows.columns), "the clients' rows")
        return _with_labels(rows.drop(columns=columns.unread(list(rows.columns))), y, column)


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
            f"y holds {labels.shape} labels for {len(rows)} rows; give one {column!r} label per row"
        )
    return rows.assign(**{column: labels})


def _all_clients(X: Any) -> bool:
    """Whether ``X`` is a non-empty list (or tuple) of clients' data."""
    return isinstance(X, list | tuple) and bool(X) and all(isinstance(c, ClientData) for c in X)
