"""The FED-CD client: ENCO on its own rows from the broadcast belief; sends only beliefs."""

from __future__ import annotations

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.fl import Client, Message, handles
from fedstruct.methods.fedcd.config import FedCDConfig
from fedstruct.methods.fedcd.enco.learner import ENCO
from fedstruct.methods.fedcd.learner import Beliefs, InterventionalData

__all__ = ["FIT", "FedCDClient"]

FIT = "fedcd.fit"


class FedCDClient(Client):
    """Holds one client's observational and interventional rows; never sends them.

    Each ``fedcd.fit`` message carries the aggregated ``(γ, θ)``; the client runs
    ``epochs_per_round`` ENCO epochs from it (Algorithm 2, local learning stage) and
    replies with its new ``(γ, θ)``, its intervention targets (what proximity
    aggregation needs, §5.2), its variable names and its row count (for voting).
    """

    def __init__(self, data: ClientData, *, config: FedCDConfig, seed: int) -> None:
        super().__init__(data, seed=seed)
        self.local = InterventionalData.from_client(data)
        self.config = config
        self.learner = ENCO(config.enco())

    @handles(FIT, max_entries=lambda c, m: 2 * len(c.local.names) ** 2 + 2 * len(c.local.names) + 8)
    def fit(self, msg: Message) -> Message:
        """Local ENCO epochs from the broadcast belief (uniform when none is sent)."""
        d = len(self.local.names)
        if "gamma" in msg.arrays:
            prior = Beliefs(msg.arrays["gamma"], msg.arrays["theta"])
        else:
            prior = Beliefs.uniform(d)
        seed = int(self.rng(msg).integers(2**62))
        beliefs = self.learner.fit(self.local, prior, self.config.epochs_per_round, seed)
        return Message(
            FIT,
            arrays={
                "gamma": beliefs.gamma,
                "theta": beliefs.theta,
                "targets": np.asarray(self.local.targets, dtype=np.int64),
            },
            config={"names": list(self.local.names)},
            metrics={
                "n": self.local.n_rows,
                "loss": self.learner.last_loss_,
            },
        )
