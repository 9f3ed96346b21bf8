"""The FedAvg server: the federated feature statistics (once, when the table needs
them), then broadcast, collect, average weighted by sample counts."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.aggregate import answers_with_late, weighted_average
from fedstruct.fl.divergence import diverged, non_finite
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics, gather_statistics
from fedstruct.fl.params import get_params, set_params
from fedstruct.fl.privacy_report import ask_spent_epsilons
from fedstruct.fl.secagg import SumResult
from fedstruct.fl.summation import send_and_sum
from fedstruct.methods.fedavg.client import (
    DELTA,
    EVALUATE,
    FIT,
    PRIVACY,
    STATISTICS,
    encoding_arrays,
)
from fedstruct.methods.fedavg.config import FedAvgConfig
from fedstruct.methods.fedavg.model import (
    TabularSchema,
    build_model,
    evaluate,
    evaluate_regression,
    regression_scores,
)
from fedstruct.privacy.central_dp import CentralDP, central_step, round_config
from fedstruct.privacy.dp import spent_epsilons

__all__ = ["FedAvgServer", "FedAvgState"]


@dataclass
class FedAvgState:
    """Global parameters, the per-round history and the federated feature statistics
    (``None`` before the statistics step, and for complete categorical data, which
    need none)."""

    params: dict[str, NDArray[np.float32]]
    history: list[dict[str, float]] = field(default_factory=list)
    statistics: FeatureStatistics | None = None


checkpoint.register(FedAvgState)


@dataclass(frozen=True)
class _Encoded:
    """What the rounds use once the statistics are known: the arrays every message
    carries besides the weights, the server's model, the encoded test set and the
    target's scale."""

    statistics: FeatureStatistics | None
    extra: dict[str, Any]
    model: torch.nn.Module
    test: tuple[torch.Tensor, torch.Tensor] | None
    target_scale: tuple[float, float]


class FedAvgServer(ServerAlgorithm[FedAvgState]):
    """FedAvg (McMahan et al. 2017, Algorithm 1, server side).

    When the table has continuous columns or missing values
    (:attr:`TabularSchema.needs_statistics`), round 1 starts with the statistics step:
    every connected site sends the counts, sums and sums of squares of its training
    rows' values and its level counts (outside the participation model, like the
    final evaluation; :mod:`fedstruct.fl.features`), the server pools them into
    :class:`~fedstruct.fl.features.FeatureStatistics` (kept in the state, so a resumed
    run does not ask again), builds the model for the encoded width and sends the
    encoding with every later message. Each round: send the global weights to the
    grid's sampled nodes, receive their locally trained weights and sample counts
    n_k, and set the global weights to ``sum_k n_k w_k / sum_k n_k`` over the
    answers (late answers too, down-weighted by ``(1 + staleness) ** -a``, when
    ``config.staleness_exponent = a`` is set). In the last round the global model is
    also evaluated by every available client on its own rows (federated evaluation:
    only counts and sums come back). Without a server-held test set, clients that
    hold rows out (``config.test_fraction > 0``) evaluate it in every round too: the
    clients asked that round, on their held-out rows (``client_accuracy``,
    ``client_loss`` in each round's record, or ``client_rmse``, ``client_r2`` for a
    regression; one more message each way per asked client).

    The server needs the trained weights, the statistics and the evaluation only as
    sums (``sum_k n_k w_k`` and ``sum_k n_k``; counts and sums of values; counts of
    correct answers and sums of losses): they come through
    :func:`~fedstruct.fl.summation.send_and_sum`, which sums them in node order, or,
    when the run has secure aggregation, by SecAgg+ so that the server never holds
    one site's reply (docs/privacy.md). Late answers cannot join a secure sum: with
    ``staleness_exponent`` set the answers come one by one (and the estimator
    refuses secure aggregation).

    Parameters
    ----------
    schema
        The task encoding.
    config
        Hyper-parameters.
    seed
        Seed of the initial weights.
    test
        Optional server-held test rows (coded), evaluated after every round.
    """

    def __init__(
        self,
        schema: TabularSchema,
        config: FedAvgConfig,
        seed: int,
        test: pd.DataFrame | None = None,
    ) -> None:
        self.schema = schema
        self.config = config
        self.seed = seed
        self.test_rows = test
        self.rounds = config.rounds
        self._encoded: _Encoded | None = None

    def init_state(self) -> FedAvgState:
        """The initial global weights (the same on every client's model); none yet
        when the statistics step comes first (the width depends on it)."""
        if self.schema.needs_statistics:
            return FedAvgState(params={})
        return FedAvgState(params=self._initial_params(self.schema.one_hot()))

    def _initial_params(self, encoder: FeatureEncoder) -> dict[str, NDArray[np.float32]]:
        return get_params(build_model(self.schema, encoder.width, self.config.hidden, self.seed))

    def encoder(self, state: FedAvgState) -> FeatureEncoder:
        """The features' encoding of the run (from the state's statistics)."""
        if state.statistics is None:
            return self.schema.one_hot()
        return self.schema.encoder(state.statistics, self.config.categorical_imputation)

    def _setup(self, state: FedAvgState) -> _Encoded:
        """What the rounds of ``state`` use (computed once per statistics)."""
        if self._encoded is None or self._encoded.statistics is not state.statistics:
            encoder = self.encoder(state)
            scale = self.schema.target_scale(state.statistics)
            test = None
            if self.test_rows is not None:
                test = self.schema.encode(self.test_rows, encoder, scale, "test data")
            self._encoded = _Encoded(
                state.statistics,
                {} if state.statistics is None else encoding_arrays(encoder, scale),
                build_model(self.schema, encoder.width, self.config.hidden, self.seed),
                test,
                scale,
            )
        return self._encoded

    def _statistics(self, grid: Grid, state: FedAvgState) -> FedAvgState:
        """The statistics step (class docstring): ask every connected site.

        Raises
        ------
        ProtocolError
            If no site answers.
        """
        statistics = gather_statistics(grid, self.schema.columns, STATISTICS, "FedAvg")
        encoder = self.schema.encoder(statistics, self.config.categorical_imputation)
        return dataclasses.replace(
            state, statistics=statistics, params=self._initial_params(encoder)
        )

    def run_round(self, grid: Grid, state: FedAvgState, rnd: int) -> FedAvgState:
        """One FedAvg round; see the class docstring."""
        statistics_record: dict[str, float] = {}
        if self.schema.needs_statistics and state.statistics is None:
            state = self._statistics(grid, state)
            assert state.statistics is not None
            statistics_record = {
                "statistics_rows": state.statistics.rows,
                "missing_target_rows": state.statistics.rows
                - state.statistics.present(self.schema.target),
            }
        setup = self._setup(state)
        extra, model, test, scale = setup.extra, setup.model, setup.test, setup.target_scale
        asked = grid.node_ids()
        central = self.config.central_dp()
        config = {} if central is None else round_config(central, state.history, len(asked))
        request = {n: Message(FIT, arrays={**state.params, **extra}, config=config) for n in asked}
        a = self.config.staleness_exponent
        late: list[Any] = []
        central_record: dict[str, float] = {}
        if a is None:  # only sums are needed (securely if the run says so)
            # central DP: the clipped updates, unweighted; else n_k w_k and n_k
            total = send_and_sum(grid, request, weight=None if central else "n")
            answered = len(total.nodes)
            train: dict[str, float] = {}
            if central is not None:
                params, central_record = self._central_step(grid, state, total, central)
                if answered:  # each site's mean loss, unweighted like its update
                    train["train_loss"] = total.metrics["loss"] / answered
            else:
                params = _average(total, state.params) if answered else state.params
                if answered:
                    train["train_loss"] = total.metrics["loss"] / total.metrics["n"]
            if total.withheld:  # too few answers to hide each one: none was used
                train["withheld_answers"] = total.withheld
            if self.config.dp_epsilon is not None:
                train.update(ask_spent_epsilons(grid, total.nodes, PRIVACY))
        else:  # late answers are merged one by one, down-weighted by their staleness
            replies = grid.send_and_receive(request)
            late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
            updates = [(m.arrays, w) for m, w in answers_with_late(replies, late, FIT, a)]
            params = weighted_average(updates) if updates else state.params
            answered = len(replies)
            train = {}
            if replies:
                n = sum(r.metrics["n"] for r in replies.values())
                loss = sum(r.metrics["loss"] * r.metrics["n"] for r in replies.values())
                train["train_loss"] = loss / n
            pairs = [*sorted(replies.items()), *((lr.node, lr.message) for lr in late)]
            train.update(spent_epsilons((grid.node_name(n), m.metrics) for n, m in pairs))
        self._check_converging(params, train.get("train_loss", 0.0), rnd)
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            "clients_answered": answered,
            "late_merged": len(late) if a is not None else 0,
            **statistics_record,
            **central_record,
            **train,
        }
        if test is not None:
            set_params(model, params)
            record.update(self._test_scores(model, test, scale))
        sent = {**params, **extra}
        if rnd == self.rounds:
            record.update(self._federated_evaluation(grid, sent, grid.available_ids()))
        elif test is None and self.config.test_fraction > 0:
            record.update(self._federated_evaluation(grid, sent, asked))
        return FedAvgState(
            params=params, history=[*state.history, record], statistics=state.statistics
        )

    def _check_converging(
        self, params: dict[str, NDArray[np.float32]], loss: float, rnd: int
    ) -> None:
        """Refuse to go on with a model whose weights or training loss are no longer
        finite: the sites' SGD diverged, and every later round and score would be NaN.

        Raises
        ------
        ConfigError
            Naming the round and the learning rate (the usual cause).
        """
        bad = non_finite(params)
        if bad is None and math.isfinite(loss):
            return
        what = f"the global model's weight {bad!r}" if bad is not None else "the training loss"
        raise diverged("fedavg", f"in round {rnd} {what}", self.config.learning_rate)

    def _central_step(
        self, grid: Grid, state: FedAvgState, total: SumResult, central: CentralDP
    ) -> tuple[dict[str, NDArray[np.float32]], dict[str, float]]:
        """Central DP's round (:func:`~fedstruct.privacy.central_dp.central_step`): the
        global weights plus the noised mean of the sites' clipped updates (uniform
        weights, over the number of sites asked), and the round's central-DP record."""
        mean, record = central_step(
            total.arrays,
            len(total.nodes),
            settings=central,
            history=state.history,
            asked=len(grid.node_ids()),
            federation=grid.n_nodes,
            prefix=DELTA,
        )
        if mean is None:
            return state.params, record
        return {k: (v + mean[k]).astype(np.float32) for k, v in state.params.items()}, record

    def _test_scores(
        self, model: torch.nn.Module, test: tuple[torch.Tensor, torch.Tensor], scale: Any
    ) -> dict[str, float]:
        """The server-held test set's scores (``test_`` + accuracy and loss, or rmse,
        r2 and loss for a regression)."""
        if self.schema.regression:
            scores = regression_scores([evaluate_regression(model, *test, scale)])
            return {f"test_{k}": v for k, v in scores.items()}
        loss, correct = evaluate(model, *test)
        return {"test_loss": loss / len(test[1]), "test_accuracy": correct / len(test[1])}

    def _federated_evaluation(
        self, grid: Grid, arrays: dict[str, NDArray], nodes: list[int]
    ) -> dict[str, float]:
        total = send_and_sum(grid, {n: Message(EVALUATE, arrays=arrays) for n in nodes})
        if not total.nodes:
            return {}
        if self.schema.regression:
            return {f"client_{k}": v for k, v in regression_scores([total.metrics]).items()}
        n = total.metrics["n"]
        if not n:
            return {}
        return {
            "client_accuracy": total.metrics["correct"] / n,
            "client_loss": total.metrics["loss_sum"] / n,
        }

    def describe(self, state: FedAvgState) -> str:
        """Latest test (or training) metric, for the progress bar."""
        if not state.history:
            return ""
        last = state.history[-1]
        if "test_accuracy" in last:
            return f"test acc {last['test_accuracy']:.3f}"
        if "test_rmse" in last:
            return f"test rmse {last['test_rmse']:.3g}"
        return f"train loss {last.get('train_loss', float('nan')):.3f}"


def _average(
    total: SumResult, like: dict[str, NDArray[np.float32]]
) -> dict[str, NDArray[np.float32]]:
    """FedAvg's ``sum_k n_k w_k / sum_k n_k`` from the weighted sum (McMahan et al.
    2017, Algorithm 1), each array in the dtype and order of ``like`` (the global
    weights) or the clients' own when there are none yet."""
    n = float(total.metrics["n"])
    names = list(like) or list(total.arrays)
    return {
        name: (total.arrays[name] / n).astype(like[name].dtype if like else np.float32)
        for name in names
    }
