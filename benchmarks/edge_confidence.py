"""Is a bootstrap's edge frequency informative? Precision by frequency, and the time of B = 50.

Target (issue 32, "Confidence is informative"): on alarm and insurance, in the default
FedCDnv federation of each (6 sites over overlapping variable sets, 15 % latent
variables, 100-2000 rows per site), seeds 0-4, the pairs adjacent in at least 80 % of
the resampled runs have precision >= 0.9 against the true skeleton (the true PAG's
adjacencies over the observed variables), and precision rises with the frequency; and
``fedstruct run fedcdnv --network alarm --bootstrap 50`` takes under 5 minutes on 2
cores.

Part 1 fits the estimator in this process (``FedCDnv(bootstrap=B, jobs=J)``, no run
folder) and pools every (network, seed)'s pairs: for each threshold ``t`` the precision
of the pairs with frequency >= ``t``, and per frequency bin the share of true pairs.
Part 2 runs the CLI command as a user would (defaults: central reference included,
``--jobs`` = the cores) and reports its wall time, the CPU time of it and its
processes, and the load average before and after (the machine may be shared: the wall
time is then an upper bound).

The resampling is the default (a bootstrap sample whose rows count half a row in the
CI tests); ``--plain`` is the plain bootstrap, ``--subsample F`` a share ``F`` without
replacement (docs/confidence.md, "Which resampling"). Each pair's record says whether
the learned graph has it (``learned``; ``learned_edges``: the curves of those pairs).

Run: ``.venv/bin/python benchmarks/edge_confidence.py [--replicates 20] [--seeds 5]
[--networks alarm insurance] [--plain | --subsample F] [--timing-replicates 50]
[--out results.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fedstruct.methods.fedcdnv.run import method
from fedstruct.methods.fedcdnv.settings import FedCDnvRun
from fedstruct.methods.fedcdnv.sources import VariableSubsetTask

NETWORKS = ("alarm", "insurance")
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
BINS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 0.95), (0.95, 1.01))


def pairs_of(
    network: str,
    seed: int,
    replicates: int,
    jobs: int | None,
    subsample: float | None,
    correct_duplicates: bool = True,
) -> dict[str, list]:
    """Every pair adjacent in some replicate: its adjacency frequency and whether the
    true PAG has it; also how long the fit took."""
    settings = FedCDnvRun(
        network=network,
        seed=seed,
        reference=False,
        bootstrap=replicates,
        jobs=jobs,
        subsample=subsample,
        correct_duplicates=correct_duplicates,
    )
    source = VariableSubsetTask(settings)
    started = time.perf_counter()
    model = method(settings, source).fit(list(source.clients()))
    seconds = time.perf_counter() - started
    frequencies = model.edge_frequencies_
    names = list(frequencies.names)
    truth = source.truth.expand([*names, *(v for v in source.truth.names if v not in names)])
    true = truth.restrict(names).adjacency()
    found = frequencies.adjacency_matrix()
    learned = model.graph_.expand(names).adjacency()
    i, j = np.nonzero(np.triu((found > 0) | learned, 1))
    return {
        "frequency": found[i, j].round(6).tolist(),
        "true": true[i, j].astype(int).tolist(),
        "learned": learned[i, j].astype(int).tolist(),
        "seconds": [round(seconds, 2)],
        "true_edges": [int(np.triu(true, 1).sum())],
    }


def curves(frequency: np.ndarray, true: np.ndarray) -> dict[str, list]:
    """Precision of the pairs at or above each threshold, and per bin."""
    above = []
    for t in THRESHOLDS:
        sure = frequency >= t - 1e-9
        above.append({"threshold": t, "pairs": int(sure.sum()), "precision": _share(true[sure])})
    binned = []
    for low, high in BINS:
        inside = (frequency >= low - 1e-9) & (frequency < high - 1e-9)
        binned.append(
            {
                "bin": [low, min(high, 1.0)],
                "pairs": int(inside.sum()),
                "precision": _share(true[inside]),
            }
        )
    return {"at_or_above": above, "by_bin": binned}


def _share(values: np.ndarray) -> float | None:
    return round(float(values.mean()), 4) if values.size else None


def time_cli(replicates: int) -> dict[str, float]:
    """Wall and CPU time of ``fedstruct run fedcdnv --network alarm --bootstrap B``."""
    before = os.getloadavg()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "fedstruct.cli", "run", "fedcdnv", "--network", "alarm",
                   "--bootstrap", str(replicates), "--quiet", "--out", f"{tmp}/run"]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        wall = time.perf_counter() - started
        metrics = json.loads(Path(f"{tmp}/run/metrics.json").read_text())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    return {
        "replicates": replicates,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "cores": len(os.sched_getaffinity(0)),
        "load_before": [round(x, 2) for x in before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "confident_precision": metrics.get("confident_precision"),
        "consensus_f1_edge": metrics.get("consensus_f1_edge"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS))
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--subsample", type=float, default=None)
    parser.add_argument(
        "--plain", action="store_true", help="the plain bootstrap (correct_duplicates=False)"
    )
    parser.add_argument("--timing-replicates", type=int, default=50, help="0: skip part 2")
    parser.add_argument("--only-timing", action="store_true", help="part 2 only")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    results: dict[str, object] = {
        "replicates": args.replicates,
        "seeds": args.seeds,
        "subsample": args.subsample,
        "correct_duplicates": not args.plain,
    }
    pooled: dict[str, list] = {"frequency": [], "true": []}
    for network in [] if args.only_timing else args.networks:
        mine: dict[str, list] = {
            "frequency": [],
            "true": [],
            "learned": [],
            "seconds": [],
            "true_edges": [],
        }
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            found = pairs_of(
                network, seed, args.replicates, args.jobs, args.subsample, not args.plain
            )
            for key, values in found.items():
                mine[key].extend(values)
            print(f"{network} seed {seed}: {found['seconds'][0]} s", flush=True)
        freq, true = np.array(mine["frequency"]), np.array(mine["true"])
        learned = np.array(mine["learned"], dtype=bool)
        results[network] = {
            **curves(freq, true),
            "fit_seconds": mine["seconds"],
            "true_edges": mine["true_edges"],
            "pairs": {k: mine[k] for k in ("frequency", "true", "learned")},
            # The learned graph's own edges (the rows of edges.csv) by their frequency.
            "learned_edges": curves(freq[learned], true[learned]),
        }
        pooled["frequency"].extend(mine["frequency"])
        pooled["true"].extend(mine["true"])
        print(json.dumps(results[network]["at_or_above"]), flush=True)
        if args.out:
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    if pooled["frequency"]:
        results["pooled"] = curves(np.array(pooled["frequency"]), np.array(pooled["true"]))
    if args.timing_replicates:
        results["timing"] = time_cli(args.timing_replicates)
        print(json.dumps(results["timing"]), flush=True)
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
