"""CAFE's estimator, :class:`CAFE` (the package's docstring describes the method)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.data.client import ClientData
from fedstruct.data.images import LABEL, from_rows, pixel_columns
from fedstruct.errors import ConfigError
from fedstruct.fl import FederatedEstimator, Participation
from fedstruct.fl.estimator import InputColumns, Prediction, check_targets
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.cafe.client import CafeClient
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.local import predict_logits
from fedstruct.methods.cafe.networks import DriftNet
from fedstruct.methods.cafe.server import CafeServer, CafeState

__all__ = ["CAFE"]


class CAFE(
    FederatedEstimator,
    method="cafe",
    config=CafeConfig,
    client=CafeClient,
    server=CafeServer,
):
    """Drift-aware federated image classification, scikit-learn style.

    Parameters
    ----------
    shape
        ``(C, H, W)`` of the images.
    n_classes
        Number of classes.
    seed
        The run's seed (initial weights, batches, participation draws).
    participation
        Who takes part in each round (sampling rate, communication frequency).
    **params
        Fields of :class:`CafeConfig`; ``algorithm`` picks CAFE or a baseline.

    Attributes
    ----------
    model_ : DriftNet
        The final global model (``None`` for FedProto, whose models stay on the
        clients).
    drift_ : numpy.ndarray or None
        CAFE's global drift direction ``d_g``.
    prototypes_ : numpy.ndarray or None
        FedProto's global class prototypes.
    site_scores_ : dict
        Client name -> ``n`` images it kept out of training and ``correct``
        predictions of the final model on them (``test_fraction > 0``).
    history_ : list of dict
        Per-round records (clients asked/answered, late updates, loss, accuracy).
    traffic_ : fedstruct.fl.Traffic
        Bytes each way per round and client.

    :meth:`score` is the accuracy (:meth:`evaluate`).
    """

    score_metric = "accuracy"

    def __init__(
        self,
        shape: Sequence[int],
        n_classes: int,
        *,
        seed: int = 0,
        participation: Participation | None = None,
        **params: Any,
    ) -> None:
        if len(shape) != 3 or min(shape) < 1:
            raise ConfigError(f"shape must be (channels, height, width), got {tuple(shape)}")
        if n_classes < 2:
            raise ConfigError(f"n_classes must be at least 2, got {n_classes}")
        self.shape = (int(shape[0]), int(shape[1]), int(shape[2]))
        self.n_classes = int(n_classes)
        super().__init__(seed=seed, participation=participation, **params)
        self._given(shape=shape, n_classes=n_classes)
        self._test: tuple[torch.Tensor, torch.Tensor] | None = None

    def make_client(self, data: ClientData) -> CafeClient:
        """The client holding ``data``."""
        return CafeClient(
            data, shape=self.shape, n_classes=self.n_classes, config=self.config, seed=self.seed
        )

    def make_server(self) -> CafeServer:
        """A fresh server algorithm."""
        return CafeServer(self.shape, self.n_classes, self.config, self.seed, self._test)

    def identity(self) -> dict[str, Any]:
        """The task: image shape and number of classes."""
        return {"shape": list(self.shape), "n_classes": self.n_classes}

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
        """
        self._test = None if test is None else self._tensors(test)
        return super().fit(clients, **run_options)

    def learn(self, state: CafeState) -> None:
        """The global model (none for FedProto), ``d_g`` and the prototypes."""
        self.drift_ = state.drift_global
        self.prototypes_ = state.prototypes
        self.site_scores_ = state.site_scores
        self.model_: DriftNet | None = None
        if self.config.algorithm != "fedproto":
            self.model_ = DriftNet(self.shape, self.n_classes, self.config, self.seed)
            set_params(self.model_, state.params)

    def learned_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        """The global model's parameters (under ``model.``), ``d_g`` (``drift``) and
        FedProto's prototypes (``prototypes``), each where the algorithm has it."""
        arrays = {} if self.model_ is None else {
            f"model.{k}": v for k, v in get_params(self.model_).items()
        }  # fmt: skip
        for key, value in (("drift", self.drift_), ("prototypes", self.prototypes_)):
            if value is not None:
                arrays[key] = np.asarray(value)
        return arrays, {"global_model": self.model_ is not None, "site_scores": self.site_scores_}

    def restore(self, arrays: Mapping[str, NDArray[Any]], meta: Mapping[str, Any]) -> None:
        """Set the learned attributes from :meth:`learned_state`'s output."""
        self.drift_ = arrays.get("drift")
        self.prototypes_ = arrays.get("prototypes")
        self.site_scores_ = dict(meta.get("site_scores", {}))
        self.model_ = None
        if meta["global_model"]:
            self.model_ = DriftNet(self.shape, self.n_classes, self.config, self.seed)
            params = {k.removeprefix("model."): v for k, v in arrays.items() if k[:6] == "model."}
            set_params(self.model_, params)

    def _tensors(self, rows: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        if LABEL not in rows.columns:  # unlabelled rows to predict
            rows = rows.assign(**{LABEL: 0})
        images, labels = from_rows(rows, self.shape)
        return torch.tensor(images), torch.tensor(labels)

    def decision_function(self, rows: pd.DataFrame) -> np.ndarray:
        """Class scores of the global model for image rows (CAFE: drift-free).

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
        images, _ = self._tensors(coded.drop(columns=[LABEL], errors="ignore"))
        drift = None if self.drift_ is None else torch.as_tensor(self.drift_)
        return predict_logits(self.model_, images, self.config, drift_global=drift).numpy()

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """The predicted class of image rows: its name for a run on a user's files,
        else its code."""
        return self.prediction(rows).states[LABEL].to_numpy()

    def input_columns(self) -> InputColumns:
        """The pixel columns are required; the label (a class name for a run on a
        user's files) may be present."""
        pixels = tuple(pixel_columns(self.shape))
        return InputColumns(pixels, (*pixels, LABEL), labels=(LABEL,))

    def coded_prediction(
        self, rows: pd.DataFrame, targets: Sequence[str] | None = None
    ) -> Prediction:
        """The class (``label``, by code) and class probabilities (softmax of the class
        scores) of coded image rows."""
        check_targets(targets, (LABEL,))
        proba = torch.softmax(torch.as_tensor(self._scores(rows)), dim=1)
        return Prediction.from_probabilities({LABEL: proba.double().numpy()}, rows.index)

    def evaluate(self, X: pd.DataFrame, y: Any = None) -> dict[str, float]:
        """``accuracy`` of the global model on image rows (:meth:`score`).

        Parameters
        ----------
        X
            Image rows holding the label column (class names for a run on a user's
            files), unless ``y`` gives the labels.
        y
            The labels, one per row.

        Raises
        ------
        ConfigError
            For FedProto, which has no global model.
        """
        coded = self.model_rows(self._with_labels(X, y, LABEL))
        _, labels = from_rows(coded, self.shape)
        return {"accuracy": float(np.mean(self._scores(coded).argmax(axis=1) == labels))}
