"""The server of the drift-aware harness: aggregation, drift, history, evaluation.

Each round (METHODS.md § CAFE; Algorithm 1 of the paper):

1. send the global weights (CAFE also ``d_g``; FedProto only the global prototypes)
   to the round's clients;
2. collect their updates, and the updates of clients that computed in an earlier
   round and report now (communication frequency): a fresh update weighs ``n_k``, a
   late one ``n_k (1 + staleness)^-a`` (``staleness_exponent = a``; ``None`` ignores
   late updates and counts them in ``late_ignored``);
3. ``Δ = Σ ω_k Δ_k / Σ ω_k`` over the deltas (with central DP, fedavg, fedprox
   and moon: ``Δ = (Σ_k clip(Δ_k) + N(0, (z C)² I)) / m`` over the ``m`` sites
   asked, :mod:`fedstruct.privacy.central_dp`); History-Aware Average (CAFE with
   ``history_average``): ``v ← β_h v + (1-β_h) Δ``, else ``v = Δ``; then
   ``θ ← θ + η_g v`` (``η_g = 1``, ``v = Δ`` is FedAvg);
4. CAFE's global drift ``d_g ← β_g d_g + (1-β_g) Σ ω_k d_l^k / Σ ω_k`` — clients that
   report often enter it often, the bias drift-free inference removes (§V-E);
   FedProto's global prototype of class ``c`` is ``Σ_k n_{k,c} C̄_k^{(c)} / Σ_k n_{k,c}``
   (Tan et al. 2022, eq. 6) over the clients that hold the class;
5. every ``eval_every`` rounds and in the last round, the test accuracy: on the
   server's test set with the global model, or for FedProto, whose models stay on
   the clients, the mean accuracy of the round's clients' own models on it (all
   available clients in the last round);
6. after the last round, with ``test_fraction > 0``: every connected client scores
   the final model on the images it kept out of training (``cafe.score``,
   :attr:`CafeState.site_scores`), where they lie; without a server test set (a
   user's sites) also every ``eval_every`` rounds, the pooled share right recorded
   as the round's ``site_accuracy``.

On a table (``table``), round 1 starts with the statistics step of
:mod:`fedstruct.fl.features` (:func:`~fedstruct.fl.features.gather_statistics`: every
connected site sends counts, sums, centred sums of squares and level counts of its
training rows; the pooled :class:`~fedstruct.fl.features.FeatureStatistics` are kept
in :attr:`CafeState.statistics`, so a resumed run does not ask again). The server
then builds the network for the encoded width ``D`` (inputs ``(1, 1, D)``,
:func:`~fedstruct.methods.cafe.networks.table_shape`) and sends the encoding with
every ``cafe.fit`` and ``cafe.score``; the steps above are unchanged (CAFE's
calibration, drift and inference do not depend on the input).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.aggregate import answers_with_late, weighted_average
from fedstruct.fl.features import FeatureEncoder, FeatureStatistics, gather_statistics
from fedstruct.fl.params import get_params, set_params
from fedstruct.fl.privacy_report import ask_spent_epsilons
from fedstruct.fl.secagg import SumResult
from fedstruct.fl.summation import send_and_sum
from fedstruct.fl.tabular import TabularSchema
from fedstruct.methods.cafe.client import (
    ENCODING,
    EVALUATE,
    FIT,
    PRIVACY,
    SCORE,
    STATISTICS,
    SUMS,
    prefixed,
    unprefixed,
)
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.local import predict_logits
from fedstruct.methods.cafe.networks import DriftNet, table_shape
from fedstruct.privacy.central_dp import CentralDP, central_step, round_config
from fedstruct.privacy.dp import spent_epsilons

__all__ = ["POOLED_SITES", "CafeServer", "CafeState"]

Arrays = dict[str, NDArray[np.float32]]
#: The one entry of :attr:`CafeState.site_scores` with secure aggregation: the sites'
#: held-out images or rows scored as a sum, never one site's.
POOLED_SITES = "(all sites, summed)"


@dataclass
class CafeState:
    """The server's state after a round (saved in checkpoints)."""

    params: Arrays
    velocity: Arrays | None = None
    drift_global: NDArray[np.float32] | None = None
    prototypes: NDArray[np.float32] | None = None
    prototype_counts: NDArray[np.float32] | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    #: Client name -> ``n`` images it kept out and ``correct`` predictions of the
    #: final model on them (``test_fraction > 0``; after the last round).
    site_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    #: A table's pooled feature statistics (``None`` for images, and before the
    #: statistics step).
    statistics: FeatureStatistics | None = None


checkpoint.register(CafeState)


def table_encoder(
    table: TabularSchema, statistics: FeatureStatistics, config: CafeConfig
) -> FeatureEncoder:
    """A table's feature encoding from the pooled statistics (``categorical_imputation``
    of the config)."""
    return table.encoder(statistics, config.categorical_imputation)


class CafeServer(ServerAlgorithm[CafeState]):
    """CAFE or a baseline, server side (module docstring).

    Parameters
    ----------
    shape, n_classes
        The task's image shape ``(C, H, W)`` and number of classes.
    config
        The harness's hyper-parameters.
    seed
        Seed of the initial weights (the clients build the same ones).
    test
        The server's test set ``(images, labels)``; ``None`` skips evaluation.
    table
        The task on a table (then ``shape`` is ``None``: the width comes from the
        statistics step; module docstring).
    """

    def __init__(
        self,
        shape: tuple[int, int, int] | None,
        n_classes: int,
        config: CafeConfig,
        seed: int,
        test: tuple[torch.Tensor, torch.Tensor] | None = None,
        table: TabularSchema | None = None,
    ) -> None:
        self.shape = shape
        self.n_classes = n_classes
        self.config = config
        self.seed = seed
        self.test = test
        self.rounds = config.rounds
        self.table = table
        self._encoding: tuple[FeatureStatistics, dict[str, NDArray]] | None = None
        self.net: DriftNet | None = None
        if table is None:
            assert shape is not None, "an image task needs the images' shape"
            self.net = DriftNet(shape, n_classes, config, seed)

    def init_state(self) -> CafeState:
        """The initial weights (a table's: after the statistics step, which sets the
        width); zero drift; no prototypes yet."""
        c = self.config
        state = CafeState(params={} if self.net is None else get_params(self.net))
        if c.algorithm == "cafe":
            state.drift_global = np.zeros(c.feature_dim, dtype=np.float32)
        if c.algorithm == "fedproto":
            state.prototypes = np.zeros((self.n_classes, c.feature_dim), dtype=np.float32)
            state.prototype_counts = np.zeros(self.n_classes, dtype=np.float32)
        return state

    def _broadcast(self, state: CafeState) -> Arrays:
        if self.config.algorithm == "fedproto":
            assert state.prototypes is not None and state.prototype_counts is not None
            arrays = {"prototypes": state.prototypes, "prototype_counts": state.prototype_counts}
        else:
            arrays = prefixed("param:", state.params)
            if state.drift_global is not None:
                arrays["drift_global"] = state.drift_global
        return {**arrays, **self._encoding_arrays(state)}

    def _encoding_arrays(self, state: CafeState) -> dict[str, NDArray]:
        """A table's feature encoding (sent with every fit and score; computed once
        per statistics, and the server's network built for its width); nothing for
        images."""
        if self.table is None:
            return {}
        assert state.statistics is not None, "the statistics step comes first"
        if self._encoding is None or self._encoding[0] is not state.statistics:
            encoder = table_encoder(self.table, state.statistics, self.config)
            self.net = DriftNet(table_shape(encoder.width), self.n_classes, self.config, self.seed)
            self._encoding = (state.statistics, encoder.to_arrays(ENCODING))
        return self._encoding[1]

    def _statistics(self, grid: Grid, state: CafeState) -> tuple[CafeState, dict[str, float]]:
        """A table's statistics step (module docstring): the pooled statistics, the
        initial weights for the encoded width, and the first round's report (rows
        summarised, rows missing the target)."""
        assert self.table is not None
        statistics = gather_statistics(grid, self.table.columns, STATISTICS, "CAFE")
        state = dataclasses.replace(state, statistics=statistics)
        self._encoding_arrays(state)
        assert self.net is not None
        report = {
            "statistics_rows": float(statistics.rows),
            "missing_target_rows": float(statistics.rows - statistics.present(self.table.target)),
        }
        return dataclasses.replace(state, params=get_params(self.net)), report

    def run_round(self, grid: Grid, state: CafeState, rnd: int) -> CafeState:
        """One round; see the module docstring."""
        c = self.config
        statistics_record: dict[str, float] = {}
        if self.table is not None and state.statistics is None:
            state, statistics_record = self._statistics(grid, state)
        asked = grid.node_ids()
        payload = self._broadcast(state)
        new = dataclasses.replace(state, history=list(state.history))
        central = c.central_dp()
        if central is not None:
            fit_record = self._fit_with_central_dp(grid, new, asked, payload, central)
        elif grid.secure_aggregation is None:
            fit_record = self._fit_in_the_clear(grid, new, asked, payload)
        else:
            fit_record = self._fit_securely(grid, new, asked, payload)
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            **{k: v for k, v in fit_record.items() if k != "train_loss"},
            **statistics_record,
            **{k: v for k, v in fit_record.items() if k == "train_loss"},
        }
        if self.test is not None and (rnd % c.eval_every == 0 or rnd == self.rounds):
            nodes = grid.available_ids() if rnd == self.rounds else asked
            accuracy = self._evaluate(grid, new, nodes)
            if accuracy is not None:
                record["test_accuracy"] = accuracy
        if self.test is None and c.test_fraction > 0:
            if rnd == self.rounds:
                new.site_scores = self._score_sites(grid, new)
                record.update(_pooled_accuracy(new.site_scores))
            elif rnd % c.eval_every == 0:
                record.update(_pooled_accuracy(self._score_sites(grid, new)))
        elif c.test_fraction > 0 and rnd == self.rounds:
            new.site_scores = self._score_sites(grid, new)
        new.history.append(record)
        return new

    def _fit_in_the_clear(
        self, grid: Grid, state: CafeState, asked: list[int], payload: Arrays
    ) -> dict[str, float]:
        """Steps 2-4 from the replies one by one (late ones merged with their staleness
        weight); the round's record of answers, late ones and training loss."""
        c = self.config
        replies = grid.send_and_receive({n: Message(FIT, arrays=payload) for n in asked})
        late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
        a = c.staleness_exponent
        answers = answers_with_late(replies, late, FIT, a)
        if answers:
            if c.algorithm == "fedproto":
                self._merge_prototypes(state, [m for m, _ in answers])
            else:
                delta = weighted_average([(unprefixed("delta:", m.arrays), w) for m, w in answers])
                self._step(state, delta)
            if c.algorithm == "cafe":
                drift = [({"d": m.arrays["drift_local"]}, w) for m, w in answers]
                self._update_drift(state, weighted_average(drift)["d"])
        record: dict[str, float] = {
            "clients_answered": len(replies),
            "late_merged": len(late) if a is not None else 0,
            "late_ignored": 0 if a is not None else len(late),
        }
        if c.dp_epsilon is not None:
            answered = [*sorted(replies.items()), *((lr.node, lr.message) for lr in late)]
            record.update(spent_epsilons((grid.node_name(n), m.metrics) for n, m in answered))
        if replies:
            n = sum(r.metrics["n"] for r in replies.values())
            record["train_loss"] = (
                sum(r.metrics["loss"] * r.metrics["n"] for r in replies.values()) / n
            )
        return record

    def _fit_securely(
        self, grid: Grid, state: CafeState, asked: list[int], payload: Arrays
    ) -> dict[str, float]:
        """Steps 2-4 from secure sums (docs/privacy.md): ``Σ n_k Δ_k``, ``Σ n_k d_l^k``,
        ``Σ n_k loss_k`` and ``Σ n_k`` (weight ``n``), or FedProto's per-class
        ``Σ_k n_{k,c} C̄_k^{(c)}`` and ``Σ_k n_{k,c}`` (the clients send the products,
        :data:`~fedstruct.methods.cafe.client.SUMS`). A late reporter never gets past
        the protocol's first stage, so there is nothing late to merge."""
        c = self.config
        fedproto = c.algorithm == "fedproto"
        config = {SUMS: 1} if fedproto else {}
        request = {n: Message(FIT, arrays=payload, config=config) for n in asked}
        total = send_and_sum(grid, request, weight=None if fedproto else "n")
        late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
        record: dict[str, float] = {
            "clients_answered": len(total.nodes),
            "late_merged": 0,
            "late_ignored": len(late),
            **({"withheld_answers": total.withheld} if total.withheld else {}),
        }
        if not total.nodes:
            return record
        if c.dp_epsilon is not None:
            record.update(ask_spent_epsilons(grid, total.nodes, PRIVACY))
        if fedproto:
            self._merge_prototype_sums(
                state, total.arrays["prototype_sums"], total.arrays["prototype_counts"]
            )
            record["train_loss"] = total.metrics["loss_sum"] / total.metrics["n"]
            return record
        self._step(state, _mean(total, "delta:", state.params))
        if c.algorithm == "cafe":
            assert state.drift_global is not None
            mean = total.arrays["drift_local"] / total.metrics["n"]
            self._update_drift(state, mean.astype(state.drift_global.dtype))
        record["train_loss"] = total.metrics["loss"] / total.metrics["n"]
        return record

    def _fit_with_central_dp(
        self,
        grid: Grid,
        state: CafeState,
        asked: list[int],
        payload: Arrays,
        central: CentralDP,
    ) -> dict[str, float]:
        """Steps 2-3 under central DP (fedavg, fedprox, moon; docs/privacy.md): the
        sum of the sites' clipped updates (securely when the run says so), noised and
        divided by the number of sites asked
        (:func:`~fedstruct.privacy.central_dp.central_step`, as FedAvg's), then the
        server step ``θ ← θ + η_g Δ``, a post-processing of it. Late updates are
        ignored (``late_ignored``): a round's noise bounds that round's sum only; the
        training loss is the sites' unweighted mean, like their updates."""
        c = self.config
        config = round_config(central, state.history, len(asked))
        request = {n: Message(FIT, arrays=payload, config=config) for n in asked}
        total = send_and_sum(grid, request)
        late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
        mean, central_record = central_step(
            total.arrays,
            len(total.nodes),
            settings=central,
            history=state.history,
            asked=len(asked),
            federation=grid.n_nodes,
            prefix="delta:",
        )
        record: dict[str, float] = {
            "clients_answered": len(total.nodes),
            "late_merged": 0,
            "late_ignored": len(late),
            **({"withheld_answers": total.withheld} if total.withheld else {}),
            **central_record,
        }
        if mean is None:
            return record
        self._step(state, {k: mean[k] for k in state.params})
        if c.dp_epsilon is not None:
            record.update(ask_spent_epsilons(grid, total.nodes, PRIVACY))
        record["train_loss"] = total.metrics["loss"] / len(total.nodes)
        return record

    def _score_sites(self, grid: Grid, state: CafeState) -> dict[str, dict[str, float]]:
        """Every connected client's score of the final model on the images it kept
        out (``cafe.score``, outside the participation model: a measurement, not a
        round; clients that kept none are left out)."""
        payload = self._broadcast(state)
        request = {n: Message(SCORE, arrays=payload) for n in grid.connected_ids()}
        if grid.secure_aggregation is not None:  # only the sum over the sites
            total = send_and_sum(grid, request, outside_rounds=True)
            n = total.metrics.get("n", 0)
            return {POOLED_SITES: dict(total.metrics)} if n else {}
        replies = grid.exchange_outside_rounds(request)
        return {
            grid.node_name(k): dict(r.metrics)
            for k, r in sorted(replies.items())
            if r.metrics["n"] > 0
        }

    def _step(self, state: CafeState, delta: Arrays) -> None:
        """Step 3 from the weighted delta: history-aware average, server step."""
        c = self.config
        if c.algorithm == "cafe" and c.history_average:
            beta = c.history_momentum
            prev = state.velocity or {k: np.zeros_like(v) for k, v in delta.items()}
            velocity = {k: (beta * prev[k] + (1.0 - beta) * delta[k]).astype(np.float32)
                        for k in delta}  # fmt: skip
            state.velocity = velocity
        else:
            velocity = delta
        eta = c.server_learning_rate
        state.params = {
            k: (v + eta * velocity[k]).astype(np.float32) for k, v in state.params.items()
        }

    def _update_drift(self, state: CafeState, mean: NDArray[np.float32]) -> None:
        """Step 4, CAFE: the global drift direction from the weighted mean of the
        clients' local drifts."""
        assert state.drift_global is not None
        beta = self.config.global_drift_momentum
        state.drift_global = (beta * state.drift_global + (1.0 - beta) * mean).astype(np.float32)

    def _merge_prototypes(self, state: CafeState, messages: list[Message]) -> None:
        """Step 4, FedProto: count-weighted class prototypes (classes nobody held keep
        their previous prototype)."""
        assert state.prototypes is not None
        counts = np.sum([m.arrays["prototype_counts"] for m in messages], axis=0)
        sums = np.sum(
            [m.arrays["prototypes"] * m.arrays["prototype_counts"][:, None] for m in messages],
            axis=0,
        )
        self._merge_prototype_sums(state, sums, counts)

    def _merge_prototype_sums(
        self, state: CafeState, sums: NDArray[np.floating], counts: NDArray[np.floating]
    ) -> None:
        """Step 4, FedProto, from the per-class sums ``Σ_k n_{k,c} C̄_k^{(c)}`` and counts."""
        assert state.prototypes is not None
        held = counts > 0
        protos = state.prototypes.copy()
        protos[held] = sums[held] / counts[held, None]
        state.prototypes = protos.astype(np.float32)
        state.prototype_counts = np.where(held, counts, state.prototype_counts).astype(np.float32)

    def _evaluate(self, grid: Grid, state: CafeState, nodes: list[str]) -> float | None:
        assert self.test is not None
        images, labels = self.test
        if self.config.algorithm != "fedproto":
            assert self.net is not None
            set_params(self.net, state.params)
            drift = None if state.drift_global is None else torch.as_tensor(state.drift_global)
            scores = predict_logits(self.net, images, self.config, drift_global=drift)
            return float((scores.argmax(dim=1) == labels).float().mean())
        assert state.prototypes is not None and state.prototype_counts is not None
        arrays = {
            "images": images.numpy(),
            "labels": labels.numpy(),
            "prototypes": state.prototypes,
            "prototype_counts": state.prototype_counts,
        }
        request = {n: Message(EVALUATE, arrays=arrays) for n in nodes}
        if grid.secure_aggregation is not None:
            # every client scores the same test set, so the mean of the clients'
            # accuracies is the pooled share right: a sum
            total = send_and_sum(grid, request)
            return total.metrics["correct"] / total.metrics["n"] if total.nodes else None
        replies = grid.send_and_receive(request)
        if not replies:
            return None
        return float(np.mean([r.metrics["correct"] / r.metrics["n"] for r in replies.values()]))

    def describe(self, state: CafeState) -> str:
        """Latest test accuracy (or training loss), for the progress bar."""
        for record in reversed(state.history):
            if "test_accuracy" in record:
                return f"test acc {record['test_accuracy']:.3f}"
        if state.history and "train_loss" in state.history[-1]:
            return f"train loss {state.history[-1]['train_loss']:.3f}"
        return ""


def _pooled_accuracy(scores: dict[str, dict[str, float]]) -> dict[str, float]:
    """``site_accuracy``: the share of every site's held-out images or rows the model
    classifies right (nothing when no site holds any out)."""
    n = sum(score["n"] for score in scores.values())
    return {"site_accuracy": sum(s["correct"] for s in scores.values()) / n} if n else {}


def _mean(total: SumResult, prefix: str, like: Arrays) -> Arrays:
    """``Σ_k n_k Δ_k / Σ_k n_k`` of the arrays named ``prefix + name`` in a weighted
    secure sum, each in the dtype of ``like[name]`` (the global weights)."""
    n = float(total.metrics["n"])
    return {k: (total.arrays[prefix + k] / n).astype(v.dtype) for k, v in like.items()}
