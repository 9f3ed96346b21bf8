"""The FedAvg client: its feature statistics (once), local SGD on its rows, federated
evaluation on its held-out rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fedstruct.data.client import ClientData
from fedstruct.errors import DataError
from fedstruct.fl import Client, Message, handles, holdout_split
from fedstruct.fl.device import resolve_device
from fedstruct.fl.features import CENTER, FeatureEncoder, site_summary
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import (
    TabularSchema,
    build_model,
    evaluate,
    evaluate_regression,
    train_local,
    train_private,
)
from fedstruct.privacy.central_dp import CLIP, clipped_reply
from fedstruct.privacy.dp import PrivacyLedger, SitePrivacy
from fedstruct.privacy.settings import site_privacy

__all__ = [
    "DELTA",
    "EVALUATE",
    "FIT",
    "PRIVACY",
    "STATISTICS",
    "FedAvgClient",
    "central_update",
    "encoding_arrays",
]

FIT = "fedavg.fit"
EVALUATE = "fedavg.evaluate"
STATISTICS = "fedavg.statistics"
#: With DP-SGD: the ε a site has spent so far (asked after each summed round, whose
#: sum cannot say it per site).
PRIVACY = "fedavg.privacy"
#: Prefix of the feature encoding's arrays in a FIT or EVALUATE message.
ENCODING = "features."
#: A regression's target mean and standard deviation in a message's arrays.
TARGET_SCALE = "features.target_scale"
#: With central DP: the prefix of the clipped update's arrays in a FIT reply.
DELTA = "delta."


def central_update(
    received: dict[str, Any], trained: dict[str, Any], clip: float
) -> dict[str, np.ndarray]:
    """A site's reply under central DP (:mod:`fedstruct.privacy.central_dp`): its
    update ``Δ = trained - received`` clipped to norm ``clip`` (``delta.<name>``) and
    the bit ``1[‖Δ‖ ≤ clip]`` (adaptive clipping's count), both summable."""
    update = {k: np.asarray(trained[k]) - np.asarray(received[k]) for k in trained}
    return clipped_reply(update, clip, DELTA)


def encoding_arrays(encoder: FeatureEncoder, target_scale: tuple[float, float]) -> dict[str, Any]:
    """What a FIT or EVALUATE message carries besides the weights when the run has
    federated statistics: the feature encoding and the target's scale."""
    return {
        **encoder.to_arrays(ENCODING),
        TARGET_SCALE: np.array(target_scale, dtype=np.float64),
    }


class FedAvgClient(Client):
    """Holds one client's rows, encoded with the shared schema; never sends them.

    Complete categorical rows are encoded when the client is built. Otherwise
    (continuous columns or missing values) the client first answers the statistics
    step (:data:`STATISTICS`: :func:`~fedstruct.fl.features.site_summary` of its
    training rows) and encodes its rows with the encoding each FIT or EVALUATE
    message carries (the same in every message: encoded once).

    Parameters
    ----------
    data
        The client's rows (every schema variable must be a column).
    schema
        The shared task encoding.
    config
        FedAvg hyper-parameters.
    seed
        The run's seed.
    """

    def __init__(
        self, data: ClientData, *, schema: TabularSchema, config: FedAvgConfig, seed: int
    ) -> None:
        super().__init__(data, seed=seed)
        self.schema = schema
        self.config = config
        self.device = resolve_device(config.device)
        self.kept, self.held = holdout_split(data.n_rows, config.test_fraction, seed, data.name)
        self._encoded_with: dict[str, Any] | None = None
        self.model: torch.nn.Module | None = None
        self.ledger = PrivacyLedger()
        self.privacy: SitePrivacy | None = None
        if not schema.needs_statistics:
            self._encode(schema.one_hot(), (0.0, 1.0))

    def _encode(self, encoder: FeatureEncoder, target_scale: tuple[float, float]) -> None:
        """Encode the training and held-out rows (the training rows score too when
        none is held out) and build the local model."""
        rows, where = self.data.rows, f"client {self.data.name!r}"
        kept = rows if not len(self.held) else rows.iloc[self.kept]
        self.x, self.y = self.schema.encode(kept, encoder, target_scale, where)
        if not len(self.y):
            raise DataError(
                f"{where}: none of its {len(kept)} training rows gives the target "
                f"{self.schema.target!r}, so it has nothing to train on: label its rows, or "
                "leave it out of the federation"
            )
        if len(self.held):
            held = rows.iloc[self.held]
            self.x_test, self.y_test = self.schema.encode(held, encoder, target_scale, where)
        else:
            self.x_test, self.y_test = self.x, self.y
        self.x, self.y = self.x.to(self.device), self.y.to(self.device)
        self.x_test, self.y_test = self.x_test.to(self.device), self.y_test.to(self.device)
        self.target_scale = target_scale
        model = build_model(self.schema, encoder.width, self.config.hidden, self.seed)
        self.model = model.to(self.device)
        self.n_params = sum(p.numel() for p in self.model.parameters())
        self.privacy = site_privacy(self.config, self.data.name, len(self.y), self.ledger)

    def _weights(self, msg: Message) -> dict[str, Any]:
        """The message's weights, the rows encoded with its encoding first if new."""
        encoding, weights = FeatureEncoder.split(msg.arrays, ENCODING)
        if encoding:
            scale = tuple(float(v) for v in encoding.pop(TARGET_SCALE))
            if self._encoded_with is None or not _same(self._encoded_with, encoding):
                encoder = FeatureEncoder.from_arrays(
                    self.schema.feature_columns, encoding, ENCODING
                )
                self._encode(encoder, (scale[0], scale[1]))
                self._encoded_with = encoding
        assert self.model is not None, "a FIT before the statistics step"
        return weights

    @handles(
        STATISTICS,
        max_entries=lambda client, msg: client.schema.columns.summary_entries,
        summable=True,
    )
    def statistics(self, msg: Message) -> Message:
        """Counts, sums and sums of squares of the training rows' non-missing values
        (about the request's ``center`` when it has one), and level counts
        (:func:`~fedstruct.fl.features.site_summary`)."""
        rows = self.data.rows if not len(self.held) else self.data.rows.iloc[self.kept]
        summary = site_summary(rows, self.schema.columns, msg.arrays.get(CENTER))
        return Message(STATISTICS, arrays=summary)

    @handles(
        FIT,
        max_entries=lambda client, msg: client.n_params + 3 + (client.privacy is not None),
        summable=True,
    )
    def fit(self, msg: Message) -> Message:
        """Train the broadcast model for E local epochs; send the weights and n_k (with
        central DP, the message's ``central_dp.clip``: the clipped update and its
        clipping bit instead of the weights, :func:`central_update`).

        With DP-SGD the site first checks that the round keeps it within its budget
        (refusing it otherwise, :meth:`SitePrivacy.next_round`), trains with
        :func:`~fedstruct.methods.fedavg.model.train_private` and reports the ε it has
        spent so far (``epsilon``)."""
        weights = self._weights(msg)
        assert self.model is not None
        set_params(self.model, weights)
        settings = {
            "epochs": self.config.local_epochs,
            "batch_size": self.config.batch_size,
            "learning_rate": self.config.learning_rate,
        }
        metrics: dict[str, float] = {"n": len(self.y)}
        if self.privacy is None:
            loss = train_local(self.model, self.x, self.y, rng=self.rng(msg), **settings)
        else:
            private = self.privacy.next_round(int(msg.config.get("round", 0)))
            loss = train_private(self.model, self.x, self.y, private=private, **settings)
            metrics["epsilon"] = self.privacy.record_round()
        trained = get_params(self.model)
        if CLIP in msg.config:
            arrays = central_update(weights, trained, float(msg.config[CLIP]))
            return Message(FIT, arrays=arrays, metrics={**metrics, "loss": loss})
        return Message(FIT, arrays=trained, metrics={**metrics, "loss": loss})

    @handles(PRIVACY, max_entries=1)
    def spent(self, msg: Message) -> Message:
        """The ε this site has spent so far with DP-SGD (none without it): public
        accounting, not data, answered one site at a time even when the rounds' updates
        are summed securely."""
        metrics = {} if self.privacy is None else {"epsilon": self.privacy.epsilon}
        return Message(PRIVACY, metrics=metrics)

    def get_state(self) -> dict[str, Any]:
        """The DP ledger (the steps taken so far), when training with DP-SGD."""
        return {"ledger": list(self.ledger.history)} if self.ledger.history else {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the DP ledger."""
        self.ledger.history = PrivacyLedger(state.get("ledger", ())).history

    @handles(
        EVALUATE,
        max_entries=lambda client, msg: 5 if client.schema.regression else 3,
        summable=True,
    )
    def evaluate(self, msg: Message) -> Message:
        """Loss and correct predictions (a regression: the sums of
        :func:`~fedstruct.methods.fedavg.model.evaluate_regression`) of the broadcast
        model on the held-out rows (the training rows when the client holds none
        out)."""
        weights = self._weights(msg)
        assert self.model is not None
        set_params(self.model, weights)
        if self.schema.regression:
            sums = evaluate_regression(self.model, self.x_test, self.y_test, self.target_scale)
            return Message(EVALUATE, metrics=sums)
        loss, correct = evaluate(self.model, self.x_test, self.y_test)
        return Message(
            EVALUATE, metrics={"n": len(self.y_test), "loss_sum": loss, "correct": correct}
        )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
