"""LocalGrid overhead: 100 clients, each sending a 1 MB update per round.

The same local work (a couple of mini-batch softmax-regression steps whose
parameters are a 64 x 2048 float64 matrix, 1 MiB) runs once as a plain Python loop
over the clients and once through the runtime: ``Message`` wrapping, participation
plan, round stamping, the privacy audit of every reply (row hashing over the whole
1 MiB array), byte accounting and FedAvg-style averaging in both. The figure of merit
is the ratio of the medians of the round times (goal: <= 1.05), plus the absolute
overhead per message.

Run: ``.venv/bin/python benchmarks/runtime.py [--clients 100] [--rounds 3] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from fedstruct.data import ClientData
from fedstruct.fl import Client, LocalGrid, Message, Traffic, handles
from fedstruct.fl.aggregate import weighted_average

N_FEATURES, N_OUT, N_ROWS, BATCH = 64, 2048, 2000, 200


def local_update(x: np.ndarray, y: np.ndarray, w: np.ndarray, seed: int, steps: int) -> np.ndarray:
    """``steps`` mini-batch gradient steps of softmax regression; returns the new weights."""
    rng = np.random.default_rng(seed)
    w = w.copy()
    for _ in range(steps):
        idx = rng.integers(0, len(y), BATCH)
        logits = x[idx] @ w
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(BATCH), y[idx]] -= 1.0
        w -= 0.1 * (x[idx].T @ p) / BATCH
    return w


class BenchClient(Client):
    """Holds a client's rows; answers with a local update (1 MiB)."""

    def __init__(self, data: ClientData, x: np.ndarray, y: np.ndarray, steps: int) -> None:
        super().__init__(data)
        self.x, self.y, self.steps = x, y, steps

    @handles("bench.fit", max_entries=N_FEATURES * N_OUT + 1)
    def fit(self, msg: Message) -> Message:
        w = local_update(self.x, self.y, msg.arrays["w"], msg.config["round"], self.steps)
        return Message("bench.fit", arrays={"w": w}, metrics={"n": len(self.y)})


def make_federation(n_clients: int, steps: int) -> list[BenchClient]:
    clients = []
    for k in range(n_clients):
        rng = np.random.default_rng(k)
        rows = pd.DataFrame(
            rng.integers(0, 4, size=(N_ROWS, 8)), columns=[f"v{j}" for j in range(8)]
        )
        x = rng.normal(size=(N_ROWS, N_FEATURES))
        y = rng.integers(0, N_OUT, N_ROWS)
        clients.append(BenchClient(ClientData(f"client-{k}", rows), x, y, steps))
    return clients


def plain_round(clients: list[BenchClient], w: np.ndarray, rnd: int) -> np.ndarray:
    updates = [({"w": local_update(c.x, c.y, w, rnd, c.steps)}, float(len(c.y))) for c in clients]
    return weighted_average(updates)["w"]


def grid_round(grid: LocalGrid, w: np.ndarray, rnd: int) -> np.ndarray:
    grid.begin_round(rnd)
    replies = grid.send_and_receive(
        {n: Message("bench.fit", arrays={"w": w}) for n in grid.node_ids()}
    )
    return weighted_average([(r.arrays, r.metrics["n"]) for _, r in sorted(replies.items())])["w"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="local steps per client and round")
    args = parser.parse_args()

    clients = make_federation(args.clients, args.steps)
    grid = LocalGrid(clients)
    for c in clients:  # build the audit indexes outside the timed region, as in a long run
        _ = c.row_index
    w0 = np.zeros((N_FEATURES, N_OUT))
    assert w0.nbytes == 1 << 20

    plain_times, grid_times = [], []
    for rep in range(args.repeats):
        for kind in ("plain", "grid") if rep % 2 == 0 else ("grid", "plain"):
            w = w0
            grid.traffic = Traffic()
            start = time.perf_counter()
            for rnd in range(1, args.rounds + 1):
                w = plain_round(clients, w, rnd) if kind == "plain" else grid_round(grid, w, rnd)
            elapsed = (time.perf_counter() - start) / args.rounds
            (plain_times if kind == "plain" else grid_times).append(elapsed)
            if kind == "plain":
                w_plain = w
            else:
                w_grid = w
        np.testing.assert_array_equal(w_plain, w_grid)  # same work, same result

    print(
        "plain:",
        [round(t * 1e3) for t in plain_times],
        "grid:",
        [round(t * 1e3) for t in grid_times],
    )
    plain, gridt = statistics.median(plain_times), statistics.median(grid_times)
    per_msg_us = (gridt - plain) / args.clients * 1e6
    up = grid.traffic.total("up") / args.rounds
    print(f"clients={args.clients} rounds={args.rounds} repeats={args.repeats} steps={args.steps}")
    print(f"plain loop  : {plain * 1e3:8.1f} ms/round (median)")
    print(f"LocalGrid   : {gridt * 1e3:8.1f} ms/round (median)")
    print(f"ratio       : {gridt / plain:.3f}  (goal <= 1.05)")
    print(f"overhead    : {per_msg_us:.0f} us per 1 MiB message (round trip, audit included)")
    print(f"bytes up    : {up / 2**20:.1f} MiB per round")


if __name__ == "__main__":
    main()
