"""Discovery at scale: PC and FCI from 37 to 1,041 variables, against causal-learn.

Usage: ``python benchmarks/discovery_scale.py [--networks alarm hepar2 andes pigs link munin]
[--rows 10000] [--learners pc fci] [--limit 1800] [--theirs-limit 600] [--device cuda]
[--out DIR]`` (``--theirs-limit 0``: causal-learn not run; ``--device``: fedstruct's
batched G² counts on that torch device, ``make_ci_test(device=...)``, each run recorded
with its device and its skeleton's digest, so a GPU run and a CPU run of the same
network can be checked for the identical graph)

For each network: ``load_network(name).sample(rows, seed=0)`` with its constant columns
dropped, G² with fedstruct's defaults (the toolbox small-sample rule, adjusted degrees of
freedom), alpha = 0.05, in a child process (CPU seconds of that process and of the worker
processes it started, wall seconds, peak resident memory): ``pc(data)`` and
``fci(data)`` with their defaults (FCI's Possible-D-SEP phase on the available cores).
causal-learn's ``pc`` and ``fci`` (``gsq``; no small-sample rule, ``depth=-1``) run on the
same rows, each stopped after ``--theirs-limit`` seconds: the ratio of CPU seconds where
it finishes, "did not finish in N s" where it does not. Each skeleton's edge F1 is read
against the true DAG's skeleton.

Writes ``DIR/scale.json`` (every run), ``DIR/scale.md`` (the table) and ``DIR/scale.png``
(CPU seconds and tests against variables, both learners, log-log).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fci_scale import _clock, edge_f1, isolated, sample

from fedstruct.data import load_network
from fedstruct.discovery import fci, make_ci_test, pc
from fedstruct.discovery.pds import available_workers


def _ours(name: str, rows: int, learner: str, device: str | None = None) -> dict:
    data = sample(name, rows)
    test = make_ci_test(data, "g2", device=device)
    cpu, wall = _clock()
    if learner == "pc":
        graph = pc(test, alpha=0.05).graph
    else:
        graph = fci(test, alpha=0.05, workers=available_workers()).graph
    cpu_end, wall_end = _clock()
    return {"cpu": cpu_end - cpu, "wall": wall_end - wall, "tests": test.n_tests,
            "skeleton": (graph.marks != 0).tolist()}  # fmt: skip


def _theirs(name: str, rows: int, learner: str) -> dict:
    from causallearn.search.ConstraintBased.FCI import fci as cl_fci
    from causallearn.search.ConstraintBased.PC import pc as cl_pc

    data = sample(name, rows)
    values = data.to_numpy()
    cpu, wall = _clock()
    with contextlib.redirect_stdout(io.StringIO()):
        if learner == "pc":
            graph = cl_pc(values, 0.05, "gsq", stable=True, show_progress=False).G.graph
        else:
            graph, _ = cl_fci(values, independence_test_method="gsq", alpha=0.05, depth=-1,
                              max_path_length=-1, verbose=False, show_progress=False)  # fmt: skip
            graph = graph.graph
    cpu_end, wall_end = _clock()
    return {"cpu": cpu_end - cpu, "wall": wall_end - wall, "skeleton": (graph != 0).tolist()}


def _plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for learner, marker in (("pc", "o"), ("fci", "s")):
        done = sorted(
            (r for r in results if r["learner"] == learner and r["ours"]),
            key=lambda r: r["variables"],
        )
        if not done:
            continue
        d = [r["variables"] for r in done]
        style = {"marker": marker, "linestyle": ":", "label": learner.upper()}
        axes[0].loglog(d, [r["ours"]["cpu"] for r in done], **style)
        axes[1].loglog(d, [r["ours"]["tests"] for r in done], **style)
        for r in done if learner == "pc" else []:  # one name per network
            for ax, key in ((axes[0], "cpu"), (axes[1], "tests")):
                ax.annotate(r["network"], (r["variables"], r["ours"][key]), fontsize=7,
                            xytext=(4, -10), textcoords="offset points")  # fmt: skip
    axes[0].set(xlabel="variables", ylabel="CPU seconds", title="time, 10,000 rows")
    axes[1].set(xlabel="variables", ylabel="CI tests computed", title="tests")
    for ax in axes:
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xticks([30, 100, 300, 1000])
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--networks", nargs="+", default=["alarm", "hepar2", "andes", "pigs", "link", "munin"]
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--learners", nargs="+", default=["pc", "fci"])
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds per run of ours")
    parser.add_argument("--theirs-limit", type=float, default=600.0)
    parser.add_argument("--device", default=None, help="torch device of the G² counts")
    parser.add_argument("--out", type=Path, default=Path("discovery-scale"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "scale.json"
    results: list[dict] = json.loads(store.read_text()) if store.exists() else []
    done = {(r["network"], r["learner"], r.get("device")) for r in results}
    for name in args.networks:
        data = sample(name, args.rows)
        truth = load_network(name).graph.restrict(list(data.columns)).marks != 0
        truth = truth | truth.T
        for learner in args.learners:
            if (name, learner, args.device) in done:
                continue
            ours = isolated(_ours, (name, args.rows, learner, args.device), args.limit)
            theirs = (
                isolated(_theirs, (name, args.rows, learner), args.theirs_limit)
                if args.theirs_limit > 0
                else None
            )
            record = {"network": name, "variables": int(data.shape[1]), "learner": learner,
                      "ours": ours, "theirs": theirs, "limit": args.limit,
                      "theirs_limit": args.theirs_limit, "device": args.device}  # fmt: skip
            for side in ("ours", "theirs"):
                if record[side]:
                    skeleton = np.array(record[side].pop("skeleton"))
                    record[side]["f1"] = edge_f1(skeleton, truth)
                    record[side]["digest"] = hashlib.sha256(skeleton.tobytes()).hexdigest()[:16]
            results.append(record)
            store.write_text(json.dumps(results, indent=1))
            print(_row(record), flush=True)
    lines = [
        "| network | variables | learner | CPU s | wall s | tests | skeleton F1 | peak MB "
        "| causal-learn CPU s | its F1 | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_row(r) for r in results),
    ]
    (args.out / "scale.md").write_text("\n".join(lines) + "\n")
    _plot(results, args.out / "scale.png")
    print("\n".join(lines))


def _row(r: dict) -> str:
    ours, theirs = r["ours"], r["theirs"]
    if ours is None:
        mine = f"did not finish in {r['limit']:.0f} s | | | | "
    else:
        mine = (f"{ours['cpu']:.1f} | {ours['wall']:.1f} | {ours['tests']:,} | {ours['f1']:.3f} "
                f"| {ours['peak_mb']:.0f}")  # fmt: skip
    if theirs is None and not r["theirs_limit"]:
        other = "not run | |"
    elif theirs is None:
        bound = f">{r['theirs_limit'] / ours['cpu']:.1f}" if ours else ""
        other = f"did not finish in {r['theirs_limit']:.0f} s | | {bound}"
    else:
        ratio = f"{theirs['cpu'] / ours['cpu']:.1f}" if ours else ""
        other = f"{theirs['cpu']:.1f} | {theirs['f1']:.3f} | {ratio}"
    return f"| {r['network']} | {r['variables']} | {r['learner'].upper()} | {mine} | {other} |"


if __name__ == "__main__":
    main()
