"""The server of the drift-aware harness: aggregation, drift, history, evaluation.

Each round (METHODS.md § CAFE; Algorithm 1 of the paper):

1. send the global weights (CAFE also ``d_g``; FedProto only the global prototypes)
   to the round's clients;
2. collect their updates, and the updates of clients that computed in an earlier
   round and report now (communication frequency): a fresh update weighs ``n_k``, a
   late one ``n_k (1 + staleness)^-a`` (``staleness_exponent = a``; ``None`` ignores
   late updates and counts them in ``late_ignored``);
3. ``Δ = Σ ω_k Δ_k / Σ ω_k`` over the deltas; History-Aware Average (CAFE with
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
   :attr:`CafeState.site_scores`), where they lie.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.fl import Grid, Message, ServerAlgorithm, checkpoint
from fedstruct.fl.aggregate import answers_with_late, weighted_average
from fedstruct.fl.params import get_params, set_params
from fedstruct.methods.cafe.client import EVALUATE, FIT, SCORE, prefixed, unprefixed
from fedstruct.methods.cafe.config import CafeConfig
from fedstruct.methods.cafe.local import predict_logits
from fedstruct.methods.cafe.networks import DriftNet

__all__ = ["CafeServer", "CafeState"]

Arrays = dict[str, NDArray[np.float32]]


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


checkpoint.register(CafeState)


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
    """

    def __init__(
        self,
        shape: tuple[int, int, int],
        n_classes: int,
        config: CafeConfig,
        seed: int,
        test: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        self.shape = shape
        self.n_classes = n_classes
        self.config = config
        self.seed = seed
        self.test = test
        self.rounds = config.rounds
        self.net = DriftNet(shape, n_classes, config, seed)

    def init_state(self) -> CafeState:
        """The initial weights; zero drift; no prototypes yet."""
        c = self.config
        state = CafeState(params=get_params(self.net))
        if c.algorithm == "cafe":
            state.drift_global = np.zeros(c.feature_dim, dtype=np.float32)
        if c.algorithm == "fedproto":
            state.prototypes = np.zeros((self.n_classes, c.feature_dim), dtype=np.float32)
            state.prototype_counts = np.zeros(self.n_classes, dtype=np.float32)
        return state

    def _broadcast(self, state: CafeState) -> Arrays:
        if self.config.algorithm == "fedproto":
            assert state.prototypes is not None and state.prototype_counts is not None
            return {"prototypes": state.prototypes, "prototype_counts": state.prototype_counts}
        arrays = prefixed("param:", state.params)
        if state.drift_global is not None:
            arrays["drift_global"] = state.drift_global
        return arrays

    def run_round(self, grid: Grid, state: CafeState, rnd: int) -> CafeState:
        """One round; see the module docstring."""
        c = self.config
        asked = grid.node_ids()
        payload = self._broadcast(state)
        replies = grid.send_and_receive({n: Message(FIT, arrays=payload) for n in asked})
        late = [lr for lr in grid.late_replies() if lr.message.kind == FIT]
        a = c.staleness_exponent
        answers = answers_with_late(replies, late, FIT, a)
        new = dataclasses.replace(state, history=list(state.history))
        if answers:
            if c.algorithm == "fedproto":
                self._merge_prototypes(new, [m for m, _ in answers])
            else:
                self._step(new, answers)
            if c.algorithm == "cafe":
                self._update_drift(new, answers)
        record: dict[str, float] = {
            "round": rnd,
            "clients_asked": len(asked),
            "clients_answered": len(replies),
            "late_merged": len(late) if a is not None else 0,
            "late_ignored": 0 if a is not None else len(late),
        }
        if replies:
            n = sum(r.metrics["n"] for r in replies.values())
            record["train_loss"] = (
                sum(r.metrics["loss"] * r.metrics["n"] for r in replies.values()) / n
            )
        if self.test is not None and (rnd % c.eval_every == 0 or rnd == self.rounds):
            nodes = grid.available_ids() if rnd == self.rounds else asked
            accuracy = self._evaluate(grid, new, nodes)
            if accuracy is not None:
                record["test_accuracy"] = accuracy
        if c.test_fraction > 0 and rnd == self.rounds:
            new.site_scores = self._score_sites(grid, new)
        new.history.append(record)
        return new

    def _score_sites(self, grid: Grid, state: CafeState) -> dict[str, dict[str, float]]:
        """Every connected client's score of the final model on the images it kept
        out (``cafe.score``, outside the participation model: a measurement, not a
        round; clients that kept none are left out)."""
        payload = self._broadcast(state)
        replies = grid.exchange_outside_rounds(
            {n: Message(SCORE, arrays=payload) for n in grid.connected_ids()}
        )
        return {
            grid.node_name(k): dict(r.metrics)
            for k, r in sorted(replies.items())
            if r.metrics["n"] > 0
        }

    def _step(self, state: CafeState, answers: list[tuple[Message, float]]) -> None:
        """Steps 3 (weighted delta, history-aware average, server step)."""
        c = self.config
        delta = weighted_average([(unprefixed("delta:", m.arrays), w) for m, w in answers])
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

    def _update_drift(self, state: CafeState, answers: list[tuple[Message, float]]) -> None:
        """Step 4, CAFE: the global drift direction."""
        assert state.drift_global is not None
        mean = weighted_average([({"d": m.arrays["drift_local"]}, w) for m, w in answers])["d"]
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
        held = counts > 0
        protos = state.prototypes.copy()
        protos[held] = sums[held] / counts[held, None]
        state.prototypes = protos.astype(np.float32)
        state.prototype_counts = np.where(held, counts, state.prototype_counts).astype(np.float32)

    def _evaluate(self, grid: Grid, state: CafeState, nodes: list[str]) -> float | None:
        assert self.test is not None
        images, labels = self.test
        if self.config.algorithm != "fedproto":
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
        replies = grid.send_and_receive({n: Message(EVALUATE, arrays=arrays) for n in nodes})
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
