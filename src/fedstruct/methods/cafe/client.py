"""The client of the drift-aware harness: local training, uploads, evaluation.

Messages (``config["round"]`` is stamped by the grid):

* ``cafe.fit`` — server sends ``param:<name>`` (the global weights; not for
  FedProto, which shares no weights), ``drift_global`` (CAFE) or ``prototypes`` and
  ``prototype_counts`` (FedProto). The client answers ``delta:<name>`` = its
  weights after local training minus the weights it received (the paper's uploaded
  "gradients", §V-D), ``drift_local`` (CAFE), or its class prototypes and counts
  (FedProto), with metrics ``n`` and ``loss``.
* ``cafe.evaluate`` (FedProto only, whose models stay on the clients) — server sends
  its test images and labels with the global prototypes; the client answers the
  number of correct nearest-prototype predictions.
* ``cafe.score`` (after the last round, with ``test_fraction > 0``) — server sends
  what ``cafe.fit`` carries, of the final model; the client answers how many of the
  images it kept out of training it classifies right (drift-free inference; FedProto:
  its own model and the prototypes) and how many it kept out.

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
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.local import (
    LocalContext,
    class_prototypes,
    predict_logits,
    train_local,
)
from fedstruct.methods.cafe.networks import DriftNet

__all__ = ["EVALUATE", "FIT", "SCORE", "CafeClient", "prefixed", "unprefixed"]

FIT = "cafe.fit"
EVALUATE = "cafe.evaluate"
SCORE = "cafe.score"


def prefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{prefix + name: array}``."""
    return {prefix + k: v for k, v in arrays.items()}


def unprefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix``, without it."""
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


class CafeClient(Client):
    """Holds one client's images; trains with the configured algorithm.

    Parameters
    ----------
    data
        Image rows (:func:`fedstruct.data.images.to_rows`); ``config.test_fraction``
        of them are kept out of training for ``cafe.score``.
    shape
        ``(C, H, W)`` of the images.
    n_classes
        Number of classes of the task.
    config
        The harness's hyper-parameters.
    seed
        The run's seed (initial weights, batch order).
    """

    def __init__(
        self,
        data: ClientData,
        *,
        shape: tuple[int, int, int],
        n_classes: int,
        config: CafeConfig,
        seed: int,
    ) -> None:
        super().__init__(data, seed=seed)
        images, labels = from_rows(data.rows, shape)
        if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
            raise DataError(
                f"client {data.name!r} has labels outside 0..{n_classes - 1}; encode the "
                "classes as codes 0..n_classes-1"
            )
        kept, held = holdout_split(len(labels), config.test_fraction, seed, data.name)
        self.images = torch.tensor(images[kept])
        self.labels = torch.tensor(labels[kept])
        self.held_images = torch.tensor(images[held])
        self.held_labels = torch.tensor(labels[held])
        self.n_classes = n_classes
        self.config = config
        self.net = DriftNet(shape, n_classes, config, seed)
        self.n_params = sum(p.numel() for p in self.net.parameters())
        d = config.feature_dim
        self.drift_local = np.zeros(d, dtype=np.float32)
        self.previous: dict[str, np.ndarray] | None = None  # MOON
        self.own: dict[str, np.ndarray] | None = (  # FedProto's model never leaves
            get_params(self.net) if config.algorithm == "fedproto" else None
        )

    def _bound(self, msg: Message) -> int:
        d = self.config.feature_dim
        return self.n_params + (self.n_classes + 1) * d + self.n_classes + 2

    @handles(FIT, max_entries=_bound)
    def fit(self, msg: Message) -> Message:
        """One local round of the configured algorithm (module docstring)."""
        c = self.config
        ctx = LocalContext()
        if c.algorithm == "fedproto":
            assert self.own is not None
            set_params(self.net, self.own)
            counts = torch.as_tensor(msg.arrays["prototype_counts"])
            ctx.prototypes = torch.as_tensor(msg.arrays["prototypes"])
            ctx.prototype_mask = counts > 0
        else:
            received = unprefixed("param:", msg.arrays)
            set_params(self.net, received)
            if c.algorithm in ("fedprox", "moon"):
                ctx.global_net = self._frozen(received)
            if c.algorithm == "moon":
                ctx.previous_net = self._frozen(self.previous or received)
            if c.algorithm == "cafe":
                ctx.drift_global = torch.as_tensor(msg.arrays["drift_global"])
                ctx.drift_local = torch.as_tensor(self.drift_local)
        loss = train_local(self.net, self.images, self.labels, c, ctx, self.rng(msg))
        weights = get_params(self.net)
        metrics = {"n": len(self.labels), "loss": loss}
        if c.algorithm == "fedproto":
            self.own = weights
            protos, counts = class_prototypes(self.net, self.images, self.labels, self.n_classes)
            arrays = {"prototypes": protos.numpy(), "prototype_counts": counts.numpy()}
            return Message(FIT, arrays=arrays, metrics=metrics)
        arrays = prefixed("delta:", {k: weights[k] - received[k] for k in weights})
        if c.algorithm == "moon":
            self.previous = weights
        if c.algorithm == "cafe":
            assert ctx.drift_local is not None
            self.drift_local = ctx.drift_local.numpy().astype(np.float32)
            arrays["drift_local"] = self.drift_local
        return Message(FIT, arrays=arrays, metrics=metrics)

    def _frozen(self, params: dict[str, np.ndarray]) -> DriftNet:
        net = DriftNet(tuple(self.images.shape[1:]), self.n_classes, self.config, self.seed)
        set_params(net, params)
        net.requires_grad_(False)
        net.eval()
        return net

    @handles(EVALUATE, max_entries=2)
    def evaluate(self, msg: Message) -> Message:
        """Correct nearest-prototype predictions of the client's own model (FedProto)."""
        if self.own is None:
            raise ProtocolError(
                f"client {self.name!r} runs {self.config.algorithm!r}: only FedProto clients "
                "evaluate their own model; the server must not send them an evaluate message"
            )
        set_params(self.net, self.own)
        counts = torch.as_tensor(msg.arrays["prototype_counts"])
        scores = predict_logits(
            self.net,
            torch.as_tensor(msg.arrays["images"]),
            self.config,
            prototypes=torch.as_tensor(msg.arrays["prototypes"]),
            prototype_mask=counts > 0,
        )
        labels = torch.as_tensor(msg.arrays["labels"])
        correct = int((scores.argmax(dim=1) == labels).sum())
        return Message(EVALUATE, metrics={"n": len(labels), "correct": correct})

    @handles(SCORE, max_entries=2)
    def score(self, msg: Message) -> Message:
        """Right predictions of the final model on the images kept out of training:
        the global weights with drift-free inference (``drift_global``, CAFE), or for
        FedProto the client's own model against the global prototypes."""
        if self.config.algorithm == "fedproto":
            assert self.own is not None
            set_params(self.net, self.own)
            counts = torch.as_tensor(msg.arrays["prototype_counts"])
            options: dict[str, Any] = {
                "prototypes": torch.as_tensor(msg.arrays["prototypes"]),
                "prototype_mask": counts > 0,
            }
        else:
            set_params(self.net, unprefixed("param:", msg.arrays))
            drift = msg.arrays.get("drift_global")
            options = {"drift_global": None if drift is None else torch.as_tensor(drift)}
        scores = predict_logits(self.net, self.held_images, self.config, **options)
        correct = int((scores.argmax(dim=1) == self.held_labels).sum())
        return Message(SCORE, metrics={"n": len(self.held_labels), "correct": correct})

    def get_state(self) -> dict[str, Any]:
        """``d_l``, MOON's previous model and FedProto's own model."""
        return {"drift_local": self.drift_local, "previous": self.previous, "own": self.own}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`get_state` returned."""
        if state:
            self.drift_local = state["drift_local"]
            self.previous = state["previous"]
            self.own = state["own"]
