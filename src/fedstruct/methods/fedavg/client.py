"""The FedAvg client: local SGD on its rows, federated evaluation on its held-out rows."""

from __future__ import annotations

from fedstruct.data.client import ClientData
from fedstruct.fl import Client, Message, handles, holdout_split
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import (
    TabularSchema,
    build_model,
    evaluate,
    train_local,
)

__all__ = ["EVALUATE", "FIT", "FedAvgClient"]

FIT = "fedavg.fit"
EVALUATE = "fedavg.evaluate"


class FedAvgClient(Client):
    """Holds one client's rows, encoded with the shared schema; never sends them.

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
        x, y = schema.encode(data.rows, where=f"client {data.name!r}")
        kept, held = holdout_split(len(y), config.test_fraction, seed, data.name)
        if len(held):
            (self.x, self.y), (self.x_test, self.y_test) = (x[kept], y[kept]), (x[held], y[held])
        else:
            self.x, self.y = self.x_test, self.y_test = x, y
        self.config = config
        self.model = build_model(schema, config.hidden, seed)
        self.n_params = sum(p.numel() for p in self.model.parameters())

    @handles(FIT, max_entries=lambda client, msg: client.n_params + 2)
    def fit(self, msg: Message) -> Message:
        """Train the broadcast model for E local epochs; send the weights and n_k."""
        set_params(self.model, msg.arrays)
        loss = train_local(
            self.model,
            self.x,
            self.y,
            epochs=self.config.local_epochs,
            batch_size=self.config.batch_size,
            learning_rate=self.config.learning_rate,
            rng=self.rng(msg),
        )
        return Message(FIT, arrays=get_params(self.model), metrics={"n": len(self.y), "loss": loss})

    @handles(EVALUATE, max_entries=3)
    def evaluate(self, msg: Message) -> Message:
        """Loss and correct predictions of the broadcast model on the held-out rows
        (the training rows when the client holds none out)."""
        set_params(self.model, msg.arrays)
        loss, correct = evaluate(self.model, self.x_test, self.y_test)
        return Message(
            EVALUATE, metrics={"n": len(self.y_test), "loss_sum": loss, "correct": correct}
        )
