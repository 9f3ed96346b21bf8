"""The FedAvg server: broadcast, collect, average weighted by sample counts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.aggregate import answers_with_late, weighted_average
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.fedavg.client import EVALUATE, FIT
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import (
    TabularSchema,
    build_model,
    evaluate,
)

__all__ = ["FedAvgServer", "FedAvgState"]


@dataclass
class FedAvgState:
    """Global parameters and the per-round history."""

    params: dict[str, NDArray[np.float32]]
    history: list[dict[str, float]] = field(default_factory=list)


checkpoint.register(FedAvgState)


class FedAvgServer(ServerAlgorithm[FedAvgState]):
    """FedAvg (McMahan et al. 2017, Algorithm 1, server side).

    Each round: send the global weights to the grid's sampled nodes, receive their
    locally trained weights and sample counts n_k, and set the global weights to
    ``sum_k n_k w_k / sum_k n_k`` over the answers (late answers too, down-weighted
    by ``(1 + staleness) ** -a``, when ``config.staleness_exponent = a`` is set).
    In the last round the global model is also evaluated by every available client
    on its own rows (federated evaluation: only counts come back). Without a
    server-held test set, clients that hold rows out (``config.test_fraction > 0``)
    evaluate it in every round too: the clients asked that round, on their held-out
    rows (``client_accuracy``, ``client_loss`` in each round's record; one more
    message each way per asked client).

    Parameters
    ----------
    schema
        The task encoding.
    config
        Hyper-parameters.
    seed
        Seed of the initial weights.
    test
        Optional server-held test set ``(x, y)`` evaluated after every round.
    """

    def __init__(
        self,
        schema: TabularSchema,
        config: FedAvgConfig,
        seed: int,
        test: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        self.schema = schema
        self.config = config
        self.seed = seed
        self.test = test
        self.rounds = config.rounds
        self._model = build_model(schema, config.hidden, seed)

    def init_state(self) -> FedAvgState:
        """The initial global weights (the same on every client's model)."""
        return FedAvgState(params=get_params(self._model))

    def run_round(self, grid: Grid, state: FedAvgState, rnd: int) -> FedAvgState:
        """One FedAvg round; see the class docstring."""
        asked = grid.node_ids()
        replies = grid.send_and_receive({n: Message(FIT, arrays=state.params) for n in asked})
        late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
        a = self.config.staleness_exponent
        updates = [(m.arrays, w) for m, w in answers_with_late(replies, late, FIT, a)]
        params = weighted_average(updates) if updates else state.params
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            "clients_answered": len(replies),
            "late_merged": len(late) if a is not None else 0,
        }
        if replies:
            n = sum(r.metrics["n"] for r in replies.values())
            loss = sum(r.metrics["loss"] * r.metrics["n"] for r in replies.values())
            record["train_loss"] = loss / n
        if self.test is not None:
            set_params(self._model, params)
            loss, correct = evaluate(self._model, *self.test)
            record["test_loss"] = loss / len(self.test[1])
            record["test_accuracy"] = correct / len(self.test[1])
        if rnd == self.rounds:
            record.update(self._federated_evaluation(grid, params, grid.available_ids()))
        elif self.test is None and self.config.test_fraction > 0:
            record.update(self._federated_evaluation(grid, params, asked))
        return FedAvgState(params=params, history=[*state.history, record])

    def _federated_evaluation(
        self, grid: Grid, params: dict[str, NDArray], nodes: list[int]
    ) -> dict[str, float]:
        replies = grid.send_and_receive({n: Message(EVALUATE, arrays=params) for n in nodes})
        n = sum(r.metrics["n"] for r in replies.values())
        if not n:
            return {}
        return {
            "client_accuracy": sum(r.metrics["correct"] for r in replies.values()) / n,
            "client_loss": sum(r.metrics["loss_sum"] for r in replies.values()) / n,
        }

    def describe(self, state: FedAvgState) -> str:
        """Latest test (or training) metric, for the progress bar."""
        if not state.history:
            return ""
        last = state.history[-1]
        if "test_accuracy" in last:
            return f"test acc {last['test_accuracy']:.3f}"
        return f"train loss {last.get('train_loss', float('nan')):.3f}"
