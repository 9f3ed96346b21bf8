"""CAFE's targets on 2 cores (recorded in docs/benchmarks.md).

* ``speed``: 100 clients, 10 % sampled, CF 0.1, 100 rounds, 5 local epochs on
  digits-LT (Dir 0.1, imbalance factor 10): wall time of data preparation and of the
  federation (target: <= 5 minutes), median of ``--repeats`` runs.
* ``quality``: digits-LT and MNIST-LT, Dir 0.1, CF 0.1, 200 rounds, 3 seeds: the final
  test accuracy of CAFE, the four baselines and CAFE without each module (targets:
  CAFE >= every baseline; removing any module loses accuracy). Runs go two at a time
  (one per core); the table of means is printed and written as JSON.

Usage::

    python benchmarks/cafe.py speed [--repeats 3]
    python benchmarks/cafe.py quality [--datasets digits mnist] [--seeds 0 1 2]
        [--rounds 200] [--variants CAFE "CAFE w/o PC" ...] [--out results/cafe-quality.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

#: The compared variants: the paper's baselines, CAFE, and CAFE without one module.
VARIANTS: dict[str, dict[str, Any]] = {
    "FedAvg": {"algorithm": "fedavg"},
    "FedProx": {"algorithm": "fedprox"},
    "MOON": {"algorithm": "moon"},
    "FedProto": {"algorithm": "fedproto"},
    "CAFE": {"algorithm": "cafe"},
    "CAFE w/o FC": {"algorithm": "cafe", "feature_calibration": False},
    "CAFE w/o PC": {"algorithm": "cafe", "parameter_calibration": False},
    "CAFE w/o HA": {"algorithm": "cafe", "history_average": False},
}


def _run(settings: dict[str, Any]) -> dict[str, float]:
    from fedstruct.runs import execute

    with tempfile.TemporaryDirectory() as folder:
        return execute("cafe", [settings], Path(folder), progress=False).metrics


def speed(repeats: int) -> None:
    from fedstruct.fl.grid import torch_threads
    from fedstruct.methods.cafe import CafeRun, SplitImages, method

    settings = CafeRun(rounds=100, local_epochs=5)
    start = time.perf_counter()
    source = SplitImages(settings)
    fed = source.federation  # prepared once, kept by the source
    prep = time.perf_counter() - start
    times, accuracy = [], 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        with torch_threads(1):
            model = method(settings, source).fit(fed.clients, test=fed.test)
        times.append(time.perf_counter() - start)
        accuracy = model.score(fed.test)
    print(
        f"CAFE speed: digits-LT, 100 clients, 10% sampled, CF 0.1, 100 rounds, 5 epochs: "
        f"data {prep:.2f} s, federation median {statistics.median(times):.1f} s over "
        f"{repeats} runs ({', '.join(f'{t:.1f}' for t in times)}), accuracy {accuracy:.3f}"
    )


def quality(
    datasets: list[str], seeds: list[int], rounds: int, variants: list[str], out: Path
) -> None:
    jobs = [
        (data, name, seed, {"dataset": data, "seed": seed, "rounds": rounds, **VARIANTS[name]})
        for data in datasets
        for name in variants
        for seed in seeds
    ]
    results: dict[str, dict[str, list[float]]] = {}
    with ProcessPoolExecutor(2) as pool:
        for (data, name, seed, _), metrics in zip(
            jobs, pool.map(_run, [j[3] for j in jobs]), strict=True
        ):
            results.setdefault(data, {}).setdefault(name, []).append(metrics["accuracy"])
            print(f"{data} {name} seed {seed}: {metrics['accuracy']:.3f}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    for data, rows in results.items():
        print(f"\n{data}-LT, Dir 0.1, CF 0.1, {rounds} rounds, seeds {seeds}")
        for name, values in rows.items():
            print(f"  {name:14s} {statistics.mean(values):.3f} ± {statistics.pstdev(values):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target", choices=("speed", "quality"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", nargs="+", default=["digits", "mnist"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("results/cafe-quality.json"))
    args = parser.parse_args()
    if args.target == "speed":
        speed(args.repeats)
    else:
        quality(args.datasets, args.seeds, args.rounds, args.variants, args.out)


if __name__ == "__main__":
    main()
