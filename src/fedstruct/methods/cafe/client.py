"""The client of the drift-aware harness: local training, uploads, evaluation.

Messages (``config["round"]`` is stamped by the grid):

* ``cafe.fit`` — server sends ``param:<name>`` (the global weights; not for
  FedProto, which shares no weights), ``drift_global`` (CAFE) or ``prototypes`` and
  ``prototype_counts`` (FedProto). The client answers ``delta:<name>`` = its
  weights after local training minus the weights it received (the paper's uploaded
  "gradients", §V-D), ``drift_local`` (CAFE), or its class prototypes and counts
  (FedProto), with metrics ``n`` and ``loss``. With central DP the request's
  config carries the round's clipping norm ``central_dp.clip`` and the client
  answers its ``delta:<name>`` clipped to it and the bit ``central_dp.below_clip``
  (:func:`~fedstruct.privacy.central_dp.clipped_reply`).
* ``cafe.evaluate`` (FedProto only, whose models stay on the clients) — server sends
  its test images and labels with the global prototypes; the client answers the
  number of correct nearest-prototype predictions.
* ``cafe.score`` (after the last round, with ``test_fraction > 0``) — server sends
  what ``cafe.fit`` carries, of the final model; the client answers how many of the
  images it kept out of training it classifies right (drift-free inference; FedProto:
  its own model and the prototypes) and how many it kept out.
* ``cafe.statistics`` (a table's rows only, once, before round 1) — the client
  answers :func:`~fedstruct.fl.features.site_summary` of its training rows: counts,
  sums, centred sums of squares and level counts, never a row. Every later
  ``cafe.fit`` and ``cafe.score`` then carries the feature encoding built from the
  pooled statistics (``features.*``), with which the client encodes its rows into
  the ``(1, 1, D)`` inputs of :func:`~fedstruct.methods.cafe.networks.table_shape`
  (once; rows missing the target are left out).

State kept between rounds: CAFE's local drift ``d_l``, MOON's previous local model,
FedProto's own model. Nothing derived from single rows leaves the client: weights,
a mean feature direction, class-mean features and counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fedstruct.data.client import ClientData
from fedstruct.data.images import from_rows
from fedstruct.errors import DataError, ProtocolError
from fedstruct.fl import Client, Message, handles, holdout_split
from fedstruct.fl.device import host_array, resolve_device
from fedstruct.fl.features import CENTER, FeatureEncoder, site_summary
from fedstruct.fl.params import get_params, set_params
from fedstruct.fl.tabular import TabularSchema
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.local import (
    LocalContext,
    class_prototypes,
    predict_logits,
    train_local,
)
from fedstruct.methods.cafe.networks import DriftNet, table_shape
from fedstruct.privacy.central_dp import CLIP, clipped_reply
from fedstruct.privacy.dp import PrivacyLedger, SitePrivacy
from fedstruct.privacy.settings import site_privacy

__all__ = [
    "ENCODING",
    "EVALUATE",
    "FIT",
    "PRIVACY",
    "SCORE",
    "STATISTICS",
    "SUMS",
    "CafeClient",
    "prefixed",
    "unprefixed",
]

FIT = "cafe.fit"
EVALUATE = "cafe.evaluate"
SCORE = "cafe.score"
STATISTICS = "cafe.statistics"
#: With DP-SGD: the ε a site has spent so far (asked after a summed round).
PRIVACY = "cafe.privacy"
#: Prefix of a table's feature encoding in a ``cafe.fit`` or ``cafe.score`` message.
ENCODING = "features."
#: A FedProto ``cafe.fit`` config key (secure aggregation): answer the summable
#: products ``prototype_sums`` (class-mean features times class counts),
#: ``prototype_counts`` and ``loss_sum`` (loss times ``n``) instead of the prototypes.
SUMS = "sums"


def prefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{prefix + name: array}``."""
    return {prefix + k: v for k, v in arrays.items()}


def unprefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix``, without it."""
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


class CafeClient(Client):
    """Holds one client's images (or a table's rows); trains with the configured
    algorithm.

    Parameters
    ----------
    data
        Image rows (:func:`fedstruct.data.images.to_rows`), or a table's coded rows
        with ``table``; ``config.test_fraction`` of them are kept out of training for
        ``cafe.score``.
    shape
        ``(C, H, W)`` of the images (``None`` with ``table``: the width comes with
        the encoding).
    n_classes
        Number of classes of the task.
    config
        The harness's hyper-parameters.
    seed
        The run's seed (initial weights, batch order).
    table
        The task on a table (its target, features and their kinds): the client
        answers the statistics step and encodes its rows with the encoding the
        server sends (module docstring).
    """

    def __init__(
        self,
        data: ClientData,
        *,
        shape: tuple[int, int, int] | None,
        n_classes: int,
        config: CafeConfig,
        seed: int,
        table: TabularSchema | None = None,
    ) -> None:
        super().__init__(data, seed=seed)
        self.n_classes = n_classes
        self.config = config
        self.device = resolve_device(config.device)
        self.table = table
        self.drift_local = np.zeros(config.feature_dim, dtype=np.float32)
        self.previous: dict[str, np.ndarray] | None = None  # MOON
        self.own: dict[str, np.ndarray] | None = None  # FedProto's model never leaves
        self._encoded_with: dict[str, np.ndarray] | None = None
        self.ledger = PrivacyLedger()
        self.privacy: SitePrivacy | None = None
        self.kept, self.held = holdout_split(data.n_rows, config.test_fraction, seed, data.name)
        if table is None:
            assert shape is not None, "an image client needs the images' shape"
            images, labels = from_rows(data.rows, shape)
            if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
                raise DataError(
                    f"client {data.name!r} has labels outside 0..{n_classes - 1}; encode the "
                    "classes as codes 0..n_classes-1"
                )
            self._hold(images[self.kept], labels[self.kept], images[self.held], labels[self.held])

    def _hold(
        self, images: np.ndarray, labels: np.ndarray, held: np.ndarray, held_labels: np.ndarray
    ) -> None:
        """Keep the training and held-out inputs and build the local model for their
        shape (FedProto's own model starts from the shared initial weights)."""
        self.images = torch.tensor(images, device=self.device)
        self.labels = torch.tensor(labels, device=self.device)
        self.held_images = torch.tensor(held, device=self.device)
        self.held_labels = torch.tensor(held_labels, device=self.device)
        shape = tuple(self.images.shape[1:])
        net = DriftNet(shape, self.n_classes, self.config, self.seed)  # type: ignore[arg-type]
        self.net = net.to(self.device)
        self.n_params = sum(p.numel() for p in self.net.parameters())
        if self.config.algorithm == "fedproto" and self.own is None:
            self.own = get_params(self.net)
        # DP-SGD: a fixed noise over budget is refused here
        self.privacy = site_privacy(self.config, self.name, len(self.labels), self.ledger)

    def _encode_table(self, msg: Message) -> None:
        """A table client: encode its rows with the message's feature encoding (once
        per encoding) into ``(1, 1, D)`` inputs; rows missing the target are left
        out (module docstring)."""
        if self.table is None:
            return
        encoding, _ = FeatureEncoder.split(msg.arrays, ENCODING)
        if not encoding:
            raise ProtocolError(
                f"client {self.name!r} holds a table and got a {msg.kind} message without "
                "its feature encoding; the server must run the statistics step first"
            )
        if self._encoded_with is not None and _same(self._encoded_with, encoding):
            return
        encoder = FeatureEncoder.from_arrays(self.table.feature_columns, encoding, ENCODING)
        where = f"client {self.name!r}"
        rows = self.data.rows
        x, y = self.table.encode(rows.iloc[self.kept], encoder, where=where)
        hx, hy = self.table.encode(rows.iloc[self.held], encoder, where=where)
        shape = table_shape(encoder.width)
        self._hold(
            x.numpy().reshape(-1, *shape), y.numpy(), hx.numpy().reshape(-1, *shape), hy.numpy()
        )
        self._encoded_with = encoding

    @handles(
        STATISTICS,
        max_entries=lambda client, msg: client._table_task().columns.summary_entries,
        summable=True,
    )
    def statistics(self, msg: Message) -> Message:
        """A table's training rows summarised (:func:`~fedstruct.fl.features.site_summary`;
        squares about the request's ``center`` when it has one)."""
        table = self._table_task()
        rows = self.data.rows.iloc[self.kept]
        return Message(STATISTICS, arrays=site_summary(rows, table.columns, msg.arrays.get(CENTER)))

    def _table_task(self) -> TabularSchema:
        if self.table is None:
            raise ProtocolError(
                f"client {self.name!r} holds images: there are no feature statistics to send"
            )
        return self.table

    def _bound(self, msg: Message) -> int:
        d = self.config.feature_dim
        return self.n_params + (self.n_classes + 1) * d + self.n_classes + 2

    @handles(FIT, max_entries=_bound, summable=True)
    def fit(self, msg: Message) -> Message:
        """One local round of the configured algorithm (module docstring)."""
        self._encode_table(msg)
        c = self.config
        ctx = LocalContext()
        if c.algorithm == "fedproto":
            assert self.own is not None
            set_params(self.net, self.own)
            counts = self._tensor(msg.arrays["prototype_counts"])
            ctx.prototypes = self._tensor(msg.arrays["prototypes"])
            ctx.prototype_mask = counts > 0
        else:
            received = unprefixed("param:", msg.arrays)
            set_params(self.net, received)
            if c.algorithm in ("fedprox", "moon"):
                ctx.global_net = self._frozen(received)
            if c.algorithm == "moon":
                ctx.previous_net = self._frozen(self.previous or received)
            if c.algorithm == "cafe":
                ctx.drift_global = self._tensor(msg.arrays["drift_global"])
                ctx.drift_local = self._tensor(self.drift_local)
        private = None
        if self.privacy is not None:  # refuses a round over budget before training
            private = self.privacy.next_round(int(msg.config.get("round", 0)))
        loss = train_local(self.net, self.images, self.labels, c, ctx, self.rng(msg), private)
        weights = get_params(self.net)
        metrics = {"n": len(self.labels), "loss": loss}
        if self.privacy is not None:
            metrics["epsilon"] = self.privacy.record_round()
        if c.algorithm == "fedproto":
            self.own = weights
            protos, counts = class_prototypes(self.net, self.images, self.labels, self.n_classes)
            arrays = {"prototypes": host_array(protos), "prototype_counts": host_array(counts)}
            if msg.config.get(SUMS):  # a secure sum: the products the server adds
                arrays = {
                    "prototype_sums": host_array(protos * counts[:, None]),
                    "prototype_counts": host_array(counts).astype(np.int64),  # exact sums
                }
                metrics = {"n": len(self.labels), "loss_sum": loss * len(self.labels)}
            return Message(FIT, arrays=arrays, metrics=metrics)
        update = {k: weights[k] - received[k] for k in weights}
        if c.algorithm == "moon":
            self.previous = weights
        if CLIP in msg.config:  # central DP: the clipped update and its clipping bit
            arrays = clipped_reply(update, float(msg.config[CLIP]), "delta:")
            return Message(FIT, arrays=arrays, metrics=metrics)
        arrays = prefixed("delta:", update)
        if c.algorithm == "cafe":
            assert ctx.drift_local is not None
            self.drift_local = host_array(ctx.drift_local).astype(np.float32)
            arrays["drift_local"] = self.drift_local
        return Message(FIT, arrays=arrays, metrics=metrics)

    def _frozen(self, params: dict[str, np.ndarray]) -> DriftNet:
        net = DriftNet(tuple(self.images.shape[1:]), self.n_classes, self.config, self.seed)
        set_params(net, params)
        net.to(self.device)
        net.requires_grad_(False)
        net.eval()
        return net

    @handles(EVALUATE, max_entries=2, summable=True)
    def evaluate(self, msg: Message) -> Message:
        """Correct nearest-prototype predictions of the client's own model (FedProto)."""
        if self.own is None:
            raise ProtocolError(
                f"client {self.name!r} runs {self.config.algorithm!r}: only FedProto clients "
                "evaluate their own model; the server must not send them an evaluate message"
            )
        set_params(self.net, self.own)
        counts = self._tensor(msg.arrays["prototype_counts"])
        scores = predict_logits(
            self.net,
            self._tensor(msg.arrays["images"]),
            self.config,
            prototypes=self._tensor(msg.arrays["prototypes"]),
            prototype_mask=counts > 0,
        )
        labels = self._tensor(msg.arrays["labels"])
        correct = int((scores.argmax(dim=1) == labels).sum())
        return Message(EVALUATE, metrics={"n": len(labels), "correct": correct})

    @handles(SCORE, max_entries=2, summable=True)
    def score(self, msg: Message) -> Message:
        """Right predictions of the final model on the images kept out of training:
        the global weights with drift-free inference (``drift_global``, CAFE), or for
        FedProto the client's own model against the global prototypes."""
        self._encode_table(msg)
        if self.config.algorithm == "fedproto":
            assert self.own is not None
            set_params(self.net, self.own)
            counts = self._tensor(msg.arrays["prototype_counts"])
            options: dict[str, Any] = {
                "prototypes": self._tensor(msg.arrays["prototypes"]),
                "prototype_mask": counts > 0,
            }
        else:
            set_params(self.net, unprefixed("param:", msg.arrays))
            drift = msg.arrays.get("drift_global")
            options = {"drift_global": None if drift is None else self._tensor(drift)}
        scores = predict_logits(self.net, self.held_images, self.config, **options)
        correct = int((scores.argmax(dim=1) == self.held_labels).sum())
        return Message(SCORE, metrics={"n": len(self.held_labels), "correct": correct})

    @handles(PRIVACY, max_entries=1)
    def spent(self, msg: Message) -> Message:
        """The ε this site has spent so far with DP-SGD (none without it): its own
        accounting, answered one site at a time even when the rounds are summed."""
        metrics = {} if self.privacy is None else {"epsilon": self.privacy.epsilon}
        return Message(PRIVACY, metrics=metrics)

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        """A message's or the state's array as a tensor on the client's device."""
        return torch.as_tensor(array, device=self.device)

    def get_state(self) -> dict[str, Any]:
        """``d_l``, MOON's previous model and FedProto's own model (and with DP-SGD,
        the ledger of its steps)."""
        state = {"drift_local": self.drift_local, "previous": self.previous, "own": self.own}
        if self.ledger.history:
            state["ledger"] = list(self.ledger.history)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`get_state` returned."""
        if state:
            self.drift_local = state["drift_local"]
            self.previous = state["previous"]
            self.own = state["own"]
            self.ledger.history = PrivacyLedger(state.get("ledger", ())).history


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
