"""FedNGM's targets on 2 cores (recorded in docs/benchmarks.md).

Runs ``fedstruct run fedngm`` on the synthetic data (30 mixed variables x 50,000
rows, 3 clients + the global model: target <= 5 minutes end to end) and on the RAND
health-insurance table, and prints the wall time with the issue's quality targets:
the global model within 5 % of each client's own model on the client's rows
(``worst_own_ratio <= 1.05``), better than every client model on the public rows
(``public_wins = 1``; ``public_clear_losses``: the share of those comparisons a paired
bootstrap calls clearly lost), every model better than the mean (``beats_mean = 1``), Gibbs
samples' covariance within 10 % (``fidelity_*``), stitching gain on private
variables (``stitch_gain_*`` > 0).

Usage: ``python benchmarks/fedngm.py [--seeds 0 1] [--datasets synthetic health]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

TARGETS = ("worst_own_ratio", "public_wins", "public_clear_losses", "beats_mean", "graph_aupr")


def main() -> None:
    from fedstruct.methods.fedngm.recipes import ROWS_PROTOCOL
    from fedstruct.runs import execute

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--datasets", nargs="+", default=["synthetic", "health"])
    args = parser.parse_args()
    for dataset in args.datasets:
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as folder:
                start = time.perf_counter()
                config = {"dataset": dataset, "seed": seed, **ROWS_PROTOCOL}
                m = execute("fedngm", [config], Path(folder), progress=False).metrics
                wall = time.perf_counter() - start
            fidelity = {k.removeprefix("fidelity_"): v for k, v in m.items()
                        if k.startswith("fidelity_")}  # fmt: skip
            gains = {k.removeprefix("stitch_gain_"): v for k, v in m.items()
                     if k.startswith("stitch_gain_client-") and k.count("_") == 2}  # fmt: skip
            print(
                f"{dataset} seed {seed}: {wall:.0f} s; "
                + ", ".join(f"{k} {m[k]:.3f}" for k in TARGETS if k in m)
                + "; fidelity "
                + " ".join(f"{k} {v:.3f}" for k, v in fidelity.items())
                + "; stitch gain "
                + " ".join(f"{k} {v:.2f}" for k, v in gains.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
