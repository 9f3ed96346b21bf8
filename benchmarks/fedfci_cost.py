"""Pooled federated discovery: exactness and cost against the one-process search.

For each case the same rows are searched twice in this process: once by ``FedFCI`` over
``--sites`` sites on the local backend (every site's statistics computed here, the
batches summed, the search run on the sums), once by the one-process search on the
concatenated rows. It prints, per case: whether the graphs, separating sets and
p-values agree (largest p-value difference), the exchanges, the statistics requested,
the bytes each site sent, and the CPU time of each path (median of ``--repeats``) with
their ratio (issue 50's target: at most 1.5), after one warm-up run (the first run
imports the runtime's modules). ``--secure`` adds secure aggregation.

Run: ``.venv/bin/python benchmarks/fedfci_cost.py [--cases alarm insurance ecoli70 ...]
[--rows 10000] [--sites 10] [--missing 0.1] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from fedstruct.data import ClientData, load_network
from fedstruct.data.gaussian import GAUSSIAN_NETWORKS, load_gaussian_network
from fedstruct.discovery import fci, make_ci_test
from fedstruct.methods.fedfci import FedFCI
from fedstruct.methods.fedfci.sources import mixed_model, with_holes


def rows_of(case: str, n: int, seed: int) -> tuple[pd.DataFrame, str, dict[str, str]]:
    """The case's rows, its test and the kinds the sites declare."""
    if case in GAUSSIAN_NETWORKS:
        rows = load_gaussian_network(case).sample(n, seed=seed)
        return rows, "fisherz", dict.fromkeys(rows.columns, "continuous")
    if case in ("cg", "dg"):
        model = mixed_model(12, seed)
        rows = model.sample(n, seed=seed)
        rows = rows.frame if hasattr(rows, "frame") else rows
        kinds = {c: "continuous" if rows[c].dtype.kind == "f" else "categorical" for c in rows}
        return rows, case, kinds
    rows = load_network(case).sample(n, seed=seed)
    return rows, "g2", dict.fromkeys(rows.columns, "categorical")


def one_case(case: str, n: int, k: int, missing: float, repeats: int, secure: bool) -> dict:
    rows, test, kinds = rows_of(case, n, seed=0)
    if missing:
        rows = with_holes(rows, missing, seed=1)
    parts = np.array_split(np.arange(len(rows)), k)
    sites = [
        ClientData(
            f"site-{s + 1}", rows.iloc[p].reset_index(drop=True), missing_values=bool(missing)
        )
        for s, p in enumerate(parts)
    ]
    pooled_times, local_times = [], []
    FedFCI(ci_test=test, kinds=kinds).fit(sites[:2])  # warm: imports are not the method's cost
    for _ in range(repeats):
        start = time.process_time()
        model = FedFCI(ci_test=test, kinds=kinds, secure_aggregation=secure).fit(sites)
        pooled_times.append(time.process_time() - start)
        start = time.process_time()
        cards = {c: int(rows[c].max()) + 1 for c in rows} if test == "g2" else None
        ci = make_ci_test(rows, test, kinds=kinds, cardinalities=cards, missing="testwise")
        local = fci(ci, workers=1)
        local_times.append(time.process_time() - start)
    p_fed = np.nan_to_num(model.pvalues_.to_numpy(), nan=-1.0)
    p_one = np.nan_to_num(local.pvalues, nan=-1.0)
    names = local.names
    same_sepsets = model.sepsets_ == {
        (names[a], names[b]): tuple(names[c] for c in z) for (a, b), z in local.sepsets.items()
    }
    up = model.traffic_.total("up")
    return {
        "case": f"{case}{' +holes' if missing else ''}",
        "test": test,
        "graph": model.graph_ == local.graph,
        "sepsets": same_sepsets,
        "max_dp": float(np.abs(p_fed - p_one).max()),
        "exchanges": model.exchanges_,
        "tests": model.n_tests_,
        "one_process_tests": local.ci_test.n_tests,
        "kb_per_site": up / k / 1e3,
        "cpu_fed": statistics.median(pooled_times),
        "cpu_one": statistics.median(local_times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", nargs="+", default=["alarm", "insurance", "ecoli70", "magic-niab", "dg", "cg"]
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--sites", type=int, default=10)
    parser.add_argument("--missing", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--secure", action="store_true")
    args = parser.parse_args()
    header = (
        "case", "test", "graph", "sepsets", "max |dp|", "exchanges", "tests", "1-proc tests",
        "kB/site up", "CPU fed (s)", "CPU 1-proc (s)", "ratio",
    )  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for case in args.cases:
        for missing in args.missing:
            r = one_case(case, args.rows, args.sites, missing, args.repeats, args.secure)
            print(
                f"| {r['case']} | {r['test']} | {'same' if r['graph'] else 'DIFFERENT'} | "
                f"{'same' if r['sepsets'] else 'DIFFERENT'} | {r['max_dp']:.1e} | "
                f"{r['exchanges']} | {r['tests']:,} | {r['one_process_tests']:,} | "
                f"{r['kb_per_site']:.0f} | {r['cpu_fed']:.2f} | {r['cpu_one']:.2f} | "
                f"{r['cpu_fed'] / r['cpu_one']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
