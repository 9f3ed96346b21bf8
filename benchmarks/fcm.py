"""F-CMs speed on 2 cores (targets: docs/benchmarks.md).

The paper's protocol for one model (App. D.3): 20 clients, 10 sampled per round, the
late cohort at round 10 (asia) or 20 (hailfinder), 2 local epochs, up to 200 rounds
with early stopping (patience 10). Targets: asia <= 3 minutes, hailfinder <= 20
minutes. Reported: data preparation and federation wall time, rounds run, task
accuracy, peak resident memory.

Usage: ``python benchmarks/fcm.py [--network asia] [--model c2bm] [--seed 0]``
"""

from __future__ import annotations

import argparse
import resource
import time

from fedstruct.methods.fcm import ConceptSource, FCMRun, method


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="asia")
    parser.add_argument("--model", default="c2bm")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    settings = FCMRun(network=args.network, model=args.model, seed=args.seed)
    start = time.perf_counter()
    source = ConceptSource(settings)
    _ = source.partition  # the data set and its split, timed apart from the federation
    prep_s = time.perf_counter() - start
    start = time.perf_counter()
    model = method(settings, source).fit(source.clients())
    fit_s = time.perf_counter() - start
    scores = model.evaluate(source.test, truth=source.truth)
    print(
        f"F-CMs {args.model} on {args.network}: data {prep_s:.1f} s, federation {fit_s:.1f} s "
        f"({len(model.history_)} rounds, best {model.best_round_}), task accuracy "
        f"{scores['task_accuracy']:.3f}, coverage {scores['concept_coverage']:.2f}, "
        f"peak {peak_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
