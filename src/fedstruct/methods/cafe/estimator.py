"""CAFE's estimator, :class:`CAFE` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.data.images import LABEL, from_rows, pixel_columns
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.estimators.base import FederatedEstimator
from fedstruct.estimators.prediction import InputColumns, Prediction, Predictor, check_targets
from fedstruct.fl.device import AUTO
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics
from fedstruct.fl.params import get_params, set_params
from fedstruct.fl.tabular import TabularSchema
from fedstruct.methods.cafe.client import CafeClient
from fedstruct.methods.cafe.config import CafeConfig, continuous_target_message
from fedstruct.methods.cafe.local import predict_logits
from fedstruct.methods.cafe.networks import DriftNet, table_shape
from fedstruct.methods.cafe.server import CafeServer, CafeState, table_encoder
from fedstruct.privacy.central_dp import CentralDP

if TYPE_CHECKING:
    from fedstruct.fl.participation import Participation
    from fedstruct.fl.secagg import SecAggConfig

__all__ = ["CAFE"]


class CAFE(
    Predictor,
    FederatedEstimator,
    method="cafe",
    config=CafeConfig,
    client=CafeClient,
    server=CafeServer,
):
    """Drift-aware federated classification of images or of a table's rows,
    scikit-learn style.

    Give ``shape`` and ``n_classes`` for images, or ``target`` and
    ``cardinalities`` (and ``continuous``, ``missing_values``) for a table: its
    categorical and ordinal features are one-hot, its continuous ones standardised,
    and missing values imputed with a missing indicator, from federated statistics
    gathered before round 1 (:mod:`fedstruct.fl.features`); each row is fed as a
    ``(1, 1, D)`` input to the ``mlp`` backbone
    (:func:`~fedstruct.methods.cafe.networks.table_shape`). The statistics are saved
    with the model and encode new rows.

    Parameters
    ----------
    shape
        ``(C, H, W)`` of the images.
    n_classes
        Number of classes.
    target
        A table's class column (categorical or ordinal).
    cardinalities
        A table's categorical and ordinal columns -> their number of levels (the
        target among them).
    continuous
        A table's continuous columns. Every column of ``cardinalities`` and
        ``continuous`` but the target is a feature.
    missing_values
        Whether a table's rows may miss values (imputed; rows missing the target
        are left out of training and scoring, and counted in the first round's
        ``missing_target_rows``).
    seed
        The run's seed (initial weights, batches, participation draws).
    participation
        Who takes part in each round (sampling rate, communication frequency).
    secure_aggregation
        As :class:`~fedstruct.estimators.FederatedEstimator`'s (see below).
    algorithm, rounds, learning_rate, ...
        Every other parameter is a field of :class:`CafeConfig`, documented there with
        its default; ``algorithm`` picks CAFE or a baseline (``fit`` builds ``config_``
        from them and checks them together).

    Attributes
    ----------
    model_ : DriftNet
        The final global model (``None`` for FedProto, whose models stay on the
        clients).
    drift_ : numpy.ndarray or None
        CAFE's global drift direction ``d_g``.
    prototypes_ : numpy.ndarray or None
        FedProto's global class prototypes.
    statistics_ : FeatureStatistics or None
        A table's federated feature statistics (``None`` for images).
    encoder_ : FeatureEncoder or None
        How a table's rows become the model's inputs (``None`` for images).
    site_scores_ : dict
        Client name -> ``n`` images it kept out of training and ``correct``
        predictions of the final model on them (``test_fraction > 0``); with
        secure aggregation one entry, ``"(all sites, summed)"``, their sum.
    history_ : list of dict
        Per-round records (clients asked/answered, late updates, loss, accuracy).
    traffic_ : fedstruct.fl.Traffic
        Bytes each way per round and client.
    shape_, n_classes_ : tuple or None, int
        The task as ``fit`` reads it: the images' shape (``None`` for a table) and
        the number of classes (a table's: its target's levels).
    table_ : TabularSchema or None
        A table's columns (``None`` for images).

    :meth:`score` is the accuracy (:meth:`evaluate`).

    With ``secure_aggregation`` the server receives only sums (docs/privacy.md):
    ``Σ n_k Δ_k``, CAFE's ``Σ n_k d_l^k``, FedProto's per-class prototype sums and
    counts, the statistics, the scores.
    """

    secure_aggregation_refusal = ""  # every exchange is needed only as a sum

    def check_secure_aggregation(self) -> None:
        """Refuse merging late answers with secure aggregation.

        Raises
        ------
        ConfigError
            If ``staleness_exponent`` is set and the participation model lets
            clients report late: a secure sum adds the answers of one round, so a
            late answer cannot join it.
        """
        if self._merges_late_answers():
            raise ConfigError(
                "cafe refuses secure aggregation with staleness_exponent when clients report "
                "late (report_rate < 1): a secure sum adds the answers of one round, so late "
                "answers cannot be merged; set staleness_exponent=None (late answers "
                "ignored) or report_rate=1"
            )

    def _check_central_dp(self) -> None:
        """Refuse merging late answers with central DP.

        Raises
        ------
        ConfigError
            If ``central_dp_noise`` and ``staleness_exponent`` are set and the
            participation model lets clients report late: the noise bounds one round's
            sum of the clipped updates of the sites asked that round, and a late
            update would add to another round's.
        """
        if self.config_.central_dp() is not None and self._merges_late_answers():
            raise ConfigError(
                "cafe refuses central DP (central_dp_noise) with staleness_exponent when "
                "clients report late (report_rate < 1): the noise bounds one round's sum of "
                "the updates of the sites asked that round, and a late update would add to "
                "another round's; set staleness_exponent=None (late answers ignored) or "
                "report_rate=1"
            )

    def _merges_late_answers(self) -> bool:
        """Whether late answers are to be merged (``staleness_exponent``) and the
        participation model lets clients report late."""
        late = self.participation is not None and (
            self.participation.report_rate < 1.0 and self.participation.always_report < 1.0
        )
        return self.config_.staleness_exponent is not None and late

    score_metric = "accuracy"
    #: ``fit``'s server-held test rows (images), evaluated every ``eval_every`` rounds.
    _test: pd.DataFrame | None = None

    def __init__(
        self,
        shape: Sequence[int] | None = None,
        n_classes: int | None = None,
        *,
        target: str | None = None,
        cardinalities: Mapping[str, int] | None = None,
        continuous: Sequence[str] = (),
        missing_values: bool = False,
        seed: int = 0,
        participation: Participation | None = None,
        dp_epsilon: float | None = None,
        dp_delta: float | None = None,
        dp_clip: float = 1.0,
        dp_noise_multiplier: float | None = None,
        central_dp_noise: float | None = None,
        central_dp_clip: float = CentralDP.clip,
        central_dp_quantile: float | None = CentralDP.target_quantile,
        central_dp_clip_rate: float = CentralDP.clip_learning_rate,
        central_dp_count_noise: float | None = CentralDP.count_noise,
        central_dp_delta: float = CentralDP.delta,
        algorithm: str = "cafe",
        rounds: int = 100,
        local_epochs: int = 5,
        batch_size: int = 32,
        learning_rate: float = 0.01,
        momentum: float = 0.9,
        weight_decay: float = 5e-4,
        backbone: str = "auto",
        feature_dim: int = 128,
        heads: int = 2,
        tau: float = 16.0,
        gamma: float = 1.0 / 32.0,
        local_drift_momentum: float = 0.9,
        global_drift_momentum: float = 0.9,
        lambda_global: float = 1.0,
        lambda_local: float = 0.0,
        history_momentum: float = 0.5,
        server_learning_rate: float = 1.0,
        tde_alpha: float = 1.0,
        feature_calibration: bool = True,
        parameter_calibration: bool = True,
        history_average: bool = True,
        prox_mu: float = 0.01,
        moon_mu: float = 5.0,
        moon_temperature: float = 0.5,
        moon_projection: int = 256,
        proto_lambda: float = 1.0,
        staleness_exponent: float | None = 0.5,
        eval_every: int = 10,
        categorical_imputation: str = "missing-level",
        test_fraction: float = 0.0,
        device: str = AUTO,
        secure_aggregation: bool | SecAggConfig = False,
    ) -> None:
        super().__init__(
            seed=seed, participation=participation, secure_aggregation=secure_aggregation
        )
        self.shape = shape
        self.n_classes = n_classes
        self.target = target
        self.cardinalities = cardinalities
        self.continuous = continuous
        self.missing_values = missing_values
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_clip = dp_clip
        self.dp_noise_multiplier = dp_noise_multiplier
        self.central_dp_noise = central_dp_noise
        self.central_dp_clip = central_dp_clip
        self.central_dp_quantile = central_dp_quantile
        self.central_dp_clip_rate = central_dp_clip_rate
        self.central_dp_count_noise = central_dp_count_noise
        self.central_dp_delta = central_dp_delta
        self.algorithm = algorithm
        self.rounds = rounds
        self.local_epochs = local_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.backbone = backbone
        self.feature_dim = feature_dim
        self.heads = heads
        self.tau = tau
        self.gamma = gamma
        self.local_drift_momentum = local_drift_momentum
        self.global_drift_momentum = global_drift_momentum
        self.lambda_global = lambda_global
        self.lambda_local = lambda_local
        self.history_momentum = history_momentum
        self.server_learning_rate = server_learning_rate
        self.tde_alpha = tde_alpha
        self.feature_calibration = feature_calibration
        self.parameter_calibration = parameter_calibration
        self.history_average = history_average
        self.prox_mu = prox_mu
        self.moon_mu = moon_mu
        self.moon_temperature = moon_temperature
        self.moon_projection = moon_projection
        self.proto_lambda = proto_lambda
        self.staleness_exponent = staleness_exponent
        self.eval_every = eval_every
        self.categorical_imputation = categorical_imputation
        self.test_fraction = test_fraction
        self.device = device

    def check_params(self) -> None:
        """Check the task (images or a table) and that central DP goes with the
        participation, and keep ``shape_``, ``n_classes_`` and ``table_``.

        Raises
        ------
        ConfigError
            For a task that is neither or both, a shape or number of classes that is
            not one, or central DP merging late answers.
        DataError
            If a table's target is continuous, or has fewer than 2 levels.
        UnknownVariableError
            If a table's target is not a column.
        """
        self.table_: TabularSchema | None = None
        self.shape_: tuple[int, int, int] | None = None
        if self.target is not None:
            self.table_ = _table_task(
                self.target, self.cardinalities, self.continuous, self.missing_values, self.shape
            )
            self.n_classes_ = self.table_.n_classes
        else:
            shape, n_classes = self.shape, self.n_classes
            if shape is None or n_classes is None:
                raise ConfigError(
                    "CAFE needs shape and n_classes (images), or target and cardinalities (a table)"
                )
            if len(shape) != 3 or min(shape) < 1:
                raise ConfigError(f"shape must be (channels, height, width), got {tuple(shape)}")
            if n_classes < 2:
                raise ConfigError(f"n_classes must be at least 2, got {n_classes}")
            self.shape_ = (int(shape[0]), int(shape[1]), int(shape[2]))
            self.n_classes_ = int(n_classes)
        self._check_central_dp()

    def make_client(self, data: ClientData) -> CafeClient:
        """The client holding ``data``."""
        return CafeClient(
            data,
            shape=self.shape_,
            n_classes=self.n_classes_,
            config=self.config_,
            seed=self.seed,
            table=self.table_,
        )

    def make_server(self) -> CafeServer:
        """A fresh server algorithm (with ``fit``'s server-held test rows, if any)."""
        test = None if self._test is None else self._tensors(self._test)
        return CafeServer(
            self.shape_, self.n_classes_, self.config_, self.seed, test, table=self.table_
        )

    def identity(self) -> dict[str, Any]:
        """The task: image shape and number of classes, or a table's columns."""
        if self.table_ is None:
            return {"shape": list(self.shape_ or ()), "n_classes": self.n_classes_}
        return {
            "target": self.table_.target,
            "cardinalities": self.table_.cardinalities,
            "continuous": list(self.table_.continuous),
            "missing_values": self.table_.missing_values,
        }

    def fit(
        self, clients: Sequence[ClientData] | Sequence[str], *,
        test: pd.DataFrame | None = None, **run_options: Any,
    ) -> CAFE:  # fmt: skip
        """Run the federation over ``clients``.

        Parameters
        ----------
        clients
            The clients' image rows (their names suffice on a deployment backend).
        test
            Server-held test rows, evaluated every ``eval_every`` rounds.
        **run_options
            ``backend``, ``checkpoint``, ``resume``, ``progress``, ``stop_after``
            (:meth:`FederatedEstimator.fit`).

        Raises
        ------
        ConfigError
            For a ``test`` set with a table (its sites score on their held-out rows).
        """
        if test is not None and self.target is not None:
            raise ConfigError(
                "CAFE on a table scores the final model on the rows each site keeps out "
                "(test_fraction); it takes no server-held test set: drop test="
            )
        self._test = test
        return super().fit(clients, **run_options)

    def learn(self, state: CafeState) -> None:
        """The global model (none for FedProto), ``d_g``, the prototypes and a
        table's statistics."""
        self.drift_ = state.drift_global
        self.prototypes_ = state.prototypes
        self.site_scores_ = state.site_scores
        self._set_statistics(state.statistics)
        self.model_: DriftNet | None = None
        if self.config_.algorithm != "fedproto":
            self.model_ = self._network()
            set_params(self.model_, state.params)

    def _set_statistics(self, statistics: FeatureStatistics | None) -> None:
        self.statistics_ = statistics
        self.encoder_: FeatureEncoder | None = None
        if self.table_ is not None and statistics is not None:
            self.encoder_ = table_encoder(self.table_, statistics, self.config_)

    def _input_shape(self) -> tuple[int, int, int]:
        """The images' shape, or a table row's ``(1, 1, D)`` once encoded."""
        if self.shape_ is not None:
            return self.shape_
        if self.encoder_ is None:
            raise ConfigError("the CAFE model has no feature statistics yet: fit it first")
        return table_shape(self.encoder_.width)

    def _network(self) -> DriftNet:
        return DriftNet(self._input_shape(), self.n_classes_, self.config_, self.seed)

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The global model's parameters (under ``model.``), ``d_g`` (``drift``),
        FedProto's prototypes (``prototypes``) and a table's federated statistics
        (``statistics.*``), each where the run has it."""
        arrays = {} if self.model_ is None else {
            f"model.{k}": v for k, v in get_params(self.model_).items()
        }  # fmt: skip
        for key, value in (("drift", self.drift_), ("prototypes", self.prototypes_)):
            if value is not None:
                arrays[key] = np.asarray(value)
        if self.statistics_ is not None:
            arrays.update(self.statistics_.to_arrays())
        return arrays, {"global_model": self.model_ is not None, "site_scores": self.site_scores_}

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        self.drift_ = arrays.get("drift")
        self.prototypes_ = arrays.get("prototypes")
        self.site_scores_ = dict(meta.get("site_scores", {}))
        statistics = None
        if self.table_ is not None:
            statistics = FeatureStatistics.from_arrays(self.table_.columns, arrays)
        self._set_statistics(statistics)
        self.model_ = None
        if meta["global_model"]:
            self.model_ = self._network()
            params = {k.removeprefix("model."): v for k, v in arrays.items() if k[:6] == "model."}
            set_params(self.model_, params)

    @property
    def label(self) -> str:
        """The class column: ``label`` for images, the target of a table."""
        return LABEL if self.target is None else self.target

    def _tensors(self, rows: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        """Image rows as ``(images, labels)`` (unlabelled rows get label 0)."""
        if LABEL not in rows.columns:  # unlabelled rows to predict
            rows = rows.assign(**{LABEL: 0})
        assert self.shape_ is not None
        images, labels = from_rows(rows, self.shape_)
        return torch.tensor(images), torch.tensor(labels)

    def _inputs(self, coded: pd.DataFrame) -> torch.Tensor:
        """The network's inputs for coded rows: images, or a table's rows encoded with
        the saved statistics (missing values imputed) as ``(N, 1, 1, D)``."""
        if self.table_ is None:
            images, _ = self._tensors(coded.drop(columns=[LABEL], errors="ignore"))
            return images
        assert self.encoder_ is not None
        x = self.encoder_.encode(coded, where="input")
        return torch.from_numpy(x.reshape(-1, *self._input_shape()))

    def decision_function(self, rows: pd.DataFrame) -> np.ndarray:
        """Class scores of the global model for image rows or a table's rows (CAFE:
        drift-free).

        Raises
        ------
        ConfigError
            For FedProto, which has no global model (its accuracy is the clients'
            mean, in ``history_``).
        """
        return self._scores(self.model_rows(rows))

    def _scores(self, coded: pd.DataFrame) -> np.ndarray:
        if self.model_ is None:
            raise ConfigError(
                "FedProto keeps its models on the clients: there is no global model to "
                "predict with; read the clients' mean test accuracy from history_"
            )
        drift = None if self.drift_ is None else torch.as_tensor(self.drift_)
        inputs = self._inputs(coded)
        return predict_logits(self.model_, inputs, self.config_, drift_global=drift).numpy()

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """The predicted class of image rows or a table's rows: its name for a run on
        a user's files, else its code."""
        return self.prediction(rows).states[self.label].to_numpy()

    def image_shape(self) -> tuple[int, int, int] | None:
        """The images' ``(channels, height, width)``; ``None`` for a table."""
        return self.shape_

    def input_columns(self) -> InputColumns:
        """The pixel columns (a table: its features) are required; the label (a class
        name for a run on a user's files) may be present. A table's missing inputs
        are imputed as in training."""
        if self.table_ is not None:
            features, target = self.table_.features, self.table_.target
            return InputColumns(
                features, (*features, target), labels=(target,), missing_values=True
            )
        pixels = tuple(pixel_columns(self._input_shape()))
        return InputColumns(pixels, (*pixels, LABEL), labels=(LABEL,))

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """The class (by code) and class probabilities (softmax of the class scores)
        of coded rows."""
        check_targets(targets, (self.label,))
        proba = torch.softmax(torch.as_tensor(self._scores(rows)), dim=1)
        return Prediction.from_probabilities({self.label: proba.double().numpy()}, rows.index)

    def evaluate(self, X: pd.DataFrame, y: Any = None) -> dict[str, float]:
        """``accuracy`` of the global model on image rows or a table's rows
        (:meth:`score`; a table's rows missing the class are not counted).

        Parameters
        ----------
        X
            Rows holding the class column (class names for a run on a user's
            files), unless ``y`` gives the labels.
        y
            The labels, one per row.

        Raises
        ------
        ConfigError
            For FedProto, which has no global model.
        UnknownVariableError
            If neither ``X`` nor ``y`` gives a table's class.
        """
        coded = self.scored_rows(X, y, self.label)
        if self.table_ is None:
            _, labels = from_rows(coded, self._input_shape())
            return {"accuracy": float(np.mean(self._scores(coded).argmax(axis=1) == labels))}
        if self.label not in coded.columns:
            raise UnknownVariableError(
                f"score needs the class column {self.label!r} in the rows, or its labels as y"
            )
        labels = coded[self.label].to_numpy()
        given = labels >= 0
        correct = self._scores(coded[given]).argmax(axis=1) == labels[given]
        return {"accuracy": float(np.mean(correct))}


def _table_task(
    target: str,
    cardinalities: Mapping[str, int] | None,
    continuous: Sequence[str],
    missing_values: bool,
    shape: Sequence[int] | None,
) -> TabularSchema:
    """The classification task on a table.

    Raises
    ------
    ConfigError
        If a shape is given too, or no ``cardinalities``.
    DataError
        If the target is continuous (CAFE classifies), or has fewer than 2 levels.
    UnknownVariableError
        If the target is not a column.
    """
    if shape is not None:
        raise ConfigError("CAFE takes shape (images) or target (a table), not both")
    if cardinalities is None:
        raise ConfigError(
            f"CAFE on a table needs the cardinalities of its columns ({target!r}'s too)"
        )
    if target in continuous:
        raise DataError(continuous_target_message(target))
    return TabularSchema(target, cardinalities, tuple(continuous), missing_values)
