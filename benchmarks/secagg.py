"""Secure aggregation's cost per round against plain summation, at 10, 50 and 100 clients.

Every client answers one summable request with a 1 MiB update (262,144 float32), in
this process (a :class:`~fedstruct.fl.LocalGrid`, clients one after the other). Per
configuration: the server's time (the summation's wall time less the clients'), a
client's mean time, and the bytes up and down per client and in all, as the grid
counts them; for SecAgg+ (``k = 2 ceil(log2 n)`` neighbours) and, for comparison, the
original SecAgg's complete graph (``k = n - 1``). SecAgg+'s client cost grows like
``k ~ log n`` and the total like ``n log n``; the complete graph's like ``n`` and
``n^2``. Times are the median of ``--repeats`` runs (the machine may be shared: the
ratios are what to read).

Run: ``.venv/bin/python benchmarks/secagg.py [--clients 10 50 100] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.fl import Client, LocalGrid, Message, handles
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.fl.summation import send_and_sum

KIND = "bench.update"
SIZE = 262_144  # float32: 1 MiB


class UpdateClient(Client):
    """Answers with a fixed 1 MiB update; times its own work."""

    seconds = 0.0

    @handles(KIND, max_entries=SIZE + 1, summable=True)
    def update(self, msg: Message) -> Message:
        rng = np.random.default_rng(int(self.name[1:]))
        return Message(KIND, arrays={"w": rng.normal(size=SIZE).astype(np.float32)})

    def handle(self, message: Message) -> Message:
        start = time.perf_counter()
        try:
            return super().handle(message)
        finally:
            UpdateClient.seconds += time.perf_counter() - start


def one_round(n: int, config: SecAggConfig | None) -> dict[str, float]:
    """Server seconds, client seconds (mean), bytes up/down per client for one sum."""
    rows = pd.DataFrame({"a": [0, 1, 0, 1], "b": [0, 0, 1, 1]})
    grid = LocalGrid([UpdateClient(ClientData(f"c{i}", rows)) for i in range(n)])
    grid.secure_aggregation = config
    grid.begin_round(1)
    UpdateClient.seconds = 0.0
    start = time.perf_counter()
    result = send_and_sum(grid, {v: Message(KIND) for v in range(n)})
    wall = time.perf_counter() - start
    assert result.nodes == tuple(range(n))
    up, down = grid.traffic.total("up"), grid.traffic.total("down")
    return {
        "server_s": wall - UpdateClient.seconds,
        "client_s": UpdateClient.seconds / n,
        "up_per_client": up / n,
        "down_per_client": down / n,
        "total_bytes": up + down,
    }


def measure(n: int, config: SecAggConfig | None, repeats: int) -> dict[str, float]:
    """Median over ``repeats`` rounds (bytes are the same every time)."""
    runs = [one_round(n, config) for _ in range(repeats)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-complete", action="store_true", help="skip k = n - 1")
    args = parser.parse_args()
    print(
        f"{'protocol':<9} {'n':>4} {'k':>3} {'server s':>9} {'client s':>9} "
        f"{'up MiB/client':>13} {'keys+shares KiB/client':>22} {'client s/k':>10}"
    )
    for n in args.clients:
        plans: list[tuple[str, SecAggConfig | None]] = [
            ("plain", None),
            ("secagg+", SecAggConfig()),
        ]
        if not args.no_complete:
            plans.append(("secagg", SecAggConfig(neighbours=n - 1)))
        for name, config in plans:
            m = measure(n, config, args.repeats)
            k = config.degree(n) if config else 0
            # besides the masked vector (8 bytes a value): public keys, encrypted shares,
            # neighbour lists, layouts, unmasking shares
            protocol = (m["total_bytes"] / n - 8 * SIZE) / 2**10 if config else 0.0
            print(
                f"{name:<9} {n:>4} {k:>3} {m['server_s']:>9.3f} {m['client_s']:>9.4f} "
                f"{m['up_per_client'] / 2**20:>13.3f} {protocol:>22.2f} "
                f"{m['client_s'] / k if k else float('nan'):>10.4f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
