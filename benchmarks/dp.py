"""Accuracy against ε: FedAvg on alarm with per-site DP-SGD, and with central DP.

The default FedAvg federation (``fedstruct run fedavg --network alarm``: 4 sites of
1,250 rows, 20 rounds, task BP) without DP, then with DP-SGD at every site for
ε = 1, 3, 8 (δ = 1 / n_k, clipping norm 1; the noise multiplier calibrated so that
the 20 rounds spend ε), over seeds 0-2. With ``--options central``: central DP
instead (``--options dp-sgd central``: both): each site's update clipped, Gaussian
noise on their sum; on the default 4 sites (every site asked in every round: the
sampling rate is 1, no amplification) with noise multipliers 0.5 and 1, and on 100
sites of 200 rows with 10 asked a round, fixed and adaptive clipping.

Prints a markdown table of the mean (and spread) of the final test accuracy and of
the ε reported in metrics.json (docs/benchmarks.md).

Run: ``.venv/bin/python benchmarks/dp.py [--seeds 0 1 2] [--options dp-sgd central]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fedstruct.runs import execute

BASE = {"network": "alarm"}
DP_SGD = {f"DP-SGD ε = {e:g}": {"dp_epsilon": e} for e in (1.0, 3.0, 8.0)}
#: Central DP on the default federation (4 sites, all asked: no amplification).
CENTRAL_FEW = {
    f"central z = {z:g}, C = 0.5, 4 sites": {"central_dp_noise": z, "central_dp_clip": 0.5}
    for z in (0.5, 1.0)
}
#: Central DP where it is meant to work: 100 sites of 200 rows, 10 asked per round.
MANY = {"clients": 100, "samples": 20000, "sample_rate": 0.1}
CENTRAL_MANY = {
    f"100 sites, 10 a round, {label}": {**MANY, **extra}
    for label, extra in (
        ("no DP", {}),
        ("central z = 1, C = 0.5", {"central_dp_noise": 1.0, "central_dp_clip": 0.5}),
        ("central z = 1, adaptive (median, σ_b = 2)", {
            "central_dp_noise": 1.0, "central_dp_clip": 0.5, "central_dp_quantile": 0.5,
            "central_dp_count_noise": 2.0,
        }),
    )
}  # fmt: skip
CENTRAL = {**CENTRAL_FEW, **CENTRAL_MANY}


def run(settings: dict[str, Any], seed: int) -> tuple[dict[str, float], float]:
    """One run's metrics.json and its wall time."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "run"
        start = time.perf_counter()
        execute("fedavg", [{**BASE, **settings, "seed": seed}], folder)
        elapsed = time.perf_counter() - start
        return json.loads((folder / "metrics.json").read_text()), elapsed


def summary(values: list[float]) -> str:
    """``mean ± sd`` (or the single value)."""
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--options", nargs="+", choices=("dp-sgd", "central"), default=["dp-sgd"],
        help="which DP options to run beside the run without DP",
    )  # fmt: skip
    args = parser.parse_args()
    chosen = {"dp-sgd": DP_SGD, "central": CENTRAL}
    variants = {"no DP": {}, **{k: v for o in args.options for k, v in chosen[o].items()}}
    print("| setting | test accuracy | ε (largest site, or central) | s per run |")
    print("|---|---|---|---|")
    for label, settings in variants.items():
        accuracy, spent, seconds = [], [], []
        for seed in args.seeds:
            metrics, elapsed = run(settings, seed)
            accuracy.append(metrics["test_accuracy"])
            eps = metrics.get("dp_epsilon_max", metrics.get("central_dp_epsilon"))
            if eps is not None:
                spent.append(eps)
            seconds.append(elapsed)
        eps_text = f"{max(spent):.3f}" if spent else "∞ (no DP)"
        print(
            f"| {label} | {summary(accuracy)} | {eps_text} | {statistics.median(seconds):.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
