"""The torch-trained methods on whatever device this machine has (issue 35).

One command records, on ``--device`` (default ``auto``: a CUDA GPU when torch finds
one, else the CPU), each case's wall time, peak memory (``torch.cuda.max_memory_allocated``
on a GPU; the process's peak resident memory always) and quality:

* ``enco-d20``: ENCO, 30 epochs, ER-2 with d = 20 (5,000 observational rows + 200 per
  variable; benchmarks/fedcd.py's setting): SHD.
* ``fedcd-d20``: FED-CD, 2 clients x 10 rounds x 2 epochs on the same data: SHD, and
  FED-CD Table 1 projected from the time per client-epoch (10 seeds x 7 graphs x 70
  client-epochs: a 2-client run, its single-client ENCO, a 4-client run, 5 rounds of 2
  epochs each).
* ``enco-d100``: ENCO in full (30 epochs) on an ER graph of expected degree 2
  (``edges_per_node = 1``), interventional data on every variable: SHD.
* ``enco-d1000``: the same family at d = 1,000, the ENCO paper's large-graph scale: a
  few steps of each stage are timed (the second epoch of two short fits; their
  difference separates the stages) and the epoch and the full 30-epoch run are
  **projected** from them.
* ``fcm-asia``, ``fcm-hailfinder``: F-CMs, the paper's protocol (App. D.3): task accuracy.
* ``cafe-digits``: CAFE, 100 clients, 10 % sampled, 100 rounds, 5 local epochs on
  digits-LT: test accuracy.

Each case runs in its own process (a clean peak memory) under a time limit; the
whole run stops at ``--budget`` seconds (a lent GPU is held ~15 minutes: the default
leaves time to rerun it). A case that runs out of time is recorded as such. Results
go to ``OUT/gpu.json`` and ``OUT/gpu.md`` (rewritten after every case).

Usage::

    python benchmarks/gpu.py [--device auto] [--size full|quick] [--budget 450]
        [--out results/gpu] [--only enco-d20 fedcd-d20 ...] [--no-cuda-graphs]

``--size quick`` shrinks every case (epochs, rounds, ENCO's steps, d = 200 for the
large graph) so that the CPU half runs in a few minutes; its quality figures are not
the paper's, and FED-CD's Table 1 projection then scales a shorter client-epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Full-size (GPU) and quick (CPU check) settings of every case.
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "full": {
        "enco-d20": {"epochs": 30},
        "fedcd-d20": {"rounds": 10},
        "enco-d1000": {"d": 1000, "model_steps": 40, "graph_steps": 4},
        "enco-d100": {"epochs": 30},
        "fcm-asia": {"rounds": 200},
        "cafe-digits": {"rounds": 100},
        "fcm-hailfinder": {"rounds": 200},
    },
    "quick": {
        "enco-d20": {"epochs": 1, "model_steps": 300, "graph_steps": 30},
        "fedcd-d20": {"rounds": 1, "model_steps": 150, "graph_steps": 15},
        "enco-d1000": {"d": 200, "model_steps": 10, "graph_steps": 2},
        "enco-d100": {"epochs": 1, "model_steps": 100, "graph_steps": 10},
        "fcm-asia": {"rounds": 3},
        "cafe-digits": {"rounds": 5},
        "fcm-hailfinder": {"rounds": 2},
    },
}
#: Most seconds each case may take at full size (the budget caps their sum).
LIMITS = {
    "enco-d20": 40,
    "fedcd-d20": 50,
    "enco-d1000": 150,  # its data alone: 1,000 regimes x 1,000 variables drawn on the CPU
    "enco-d100": 50,
    "fcm-asia": 40,
    "cafe-digits": 45,
    "fcm-hailfinder": 100,
}
#: The default budget: 7.5 minutes, under the 8 a lent GPU's run may take (the last
#: cases are cut when earlier ones ran long).
BUDGET = 450.0
#: FED-CD Table 1's client-epochs: 7 graphs x 10 seeds x (2 x 10 + 10 + 4 x 10).
TABLE1_CLIENT_EPOCHS = 7 * 10 * 70
#: The line an ENCO case prints after each epoch (epochs done, seconds so far): a
#: case stopped at its limit is reported from the last one.
EPOCH_MARK = "gpu.py-epoch"
#: Epochs of a full ENCO run at d = 1,000 (ENCO's default budget, as at d = 20).
LARGE_EPOCHS = 30


# ------------------------------------------------------------------ the cases
def _er_data(d: int, edges_per_node: float, clients: int = 1, seed: int = 0) -> tuple:
    from fedstruct.data.scm import CategoricalSCM
    from fedstruct.graphs.random import erdos_renyi_dag
    from fedstruct.methods.fedcd import horizontal_interventions

    dag = erdos_renyi_dag(d, seed=seed, edges_per_node=edges_per_node, shuffle=True)
    scm = CategoricalSCM(dag, seed=seed)
    sizes = {"n_observational": 5000, "n_per_intervention": 200, "seed": seed}
    return dag, horizontal_interventions(scm, clients, **sizes)


def _enco(device: str, d: int, edges: float, epochs: int, **steps: Any) -> dict[str, Any]:
    from fedstruct.graphs.metrics import shd
    from fedstruct.methods.fedcd import ENCO, Beliefs, InterventionalData, final_graph
    from fedstruct.methods.fedcd.enco import ENCOConfig

    dag, [whole] = _er_data(d, edges)
    data = InterventionalData.from_client(whole)
    learner = ENCO(ENCOConfig(device=device, **steps))
    start = time.perf_counter()

    def report(epoch: int, beliefs: Beliefs) -> None:  # read by _child if time runs out
        print(
            f"{EPOCH_MARK} {epoch} {time.perf_counter() - start:.3f}",
            file=sys.stderr,
            flush=True,
        )

    beliefs = learner.fit(data, Beliefs.uniform(d), epochs=epochs, seed=0, progress=report)
    seconds = _synced(time.perf_counter() - start, device)
    return {"seconds": seconds, "shd": shd(dag, final_graph(data.names, beliefs)), "d": d}


def enco_d20(device: str, epochs: int, **steps: Any) -> dict[str, Any]:
    """ENCO, ER-2, d = 20."""
    return {**_enco(device, 20, 2.0, epochs, **steps), "epochs": epochs, **steps}


def enco_d100(device: str, epochs: int, **steps: Any) -> dict[str, Any]:
    """ENCO, ER of expected degree 2, d = 100."""
    return {**_enco(device, 100, 1.0, epochs, **steps), "epochs": epochs, **steps}


def enco_large(
    device: str, d: int, model_steps: int, graph_steps: int, cuda_graphs: bool = True
) -> dict[str, Any]:
    """Per-step times of both stages at large ``d``, and the epoch (ENCO's 1,000 + 100
    steps) and the 30-epoch run projected from them.

    Two fits of two epochs each, ``(model_steps, graph_steps)`` and ``(model_steps,
    3 graph_steps)``; each one's second epoch is timed (the first carries the set-up
    and the GPU's warm-up; the progress callback copies the beliefs to the host, so
    the times include all the device's work), and the difference separates the
    stages.
    """
    from fedstruct.methods.fedcd import ENCO, Beliefs, InterventionalData
    from fedstruct.methods.fedcd.enco import ENCOConfig

    start = time.perf_counter()
    _, [whole] = _er_data(d, 1.0)
    data = InterventionalData.from_client(whole)
    data_s = time.perf_counter() - start

    def second_epoch(m: int, g: int) -> float:
        stamps: list[float] = []
        config = ENCOConfig(device=device, model_steps=m, graph_steps=g, cuda_graphs=cuda_graphs)
        tick = lambda epoch, beliefs: stamps.append(time.perf_counter())  # noqa: E731
        ENCO(config).fit(data, Beliefs.uniform(d), epochs=2, seed=0, progress=tick)
        return stamps[1] - stamps[0]

    few = second_epoch(model_steps, graph_steps)
    more = second_epoch(model_steps, 3 * graph_steps)
    per_graph = max(more - few, 0.0) / (2 * graph_steps)
    per_model = max(few - graph_steps * per_graph, 0.0) / model_steps
    default = _default_steps()
    epoch = default["model_steps"] * per_model + default["graph_steps"] * per_graph
    return {
        "d": d,
        "data_seconds": data_s,
        "seconds_per_model_step": per_model,
        "seconds_per_graph_step": per_graph,
        "projected_epoch_seconds": epoch,
        "projected_run_hours": epoch * LARGE_EPOCHS / 3600,
        "seconds": time.perf_counter() - start,
    }


def fedcd_d20(device: str, rounds: int, **steps: Any) -> dict[str, Any]:
    """FED-CD, 2 clients, ``rounds`` rounds of 2 epochs, ER-2, d = 20."""
    from fedstruct.graphs.metrics import shd
    from fedstruct.methods.fedcd import FedCD

    dag, clients = _er_data(20, 2.0, clients=2)
    start = time.perf_counter()
    fedcd = FedCD(rounds=rounds, epochs_per_round=2, seed=0, device=device, **steps)
    model = fedcd.fit(clients)
    seconds = _synced(time.perf_counter() - start, device)
    per_client_epoch = seconds / (2 * rounds * 2)
    return {
        "seconds": seconds,
        "shd": shd(dag, model.graph_),
        "rounds": rounds,
        **steps,
        "projected_table1_hours": per_client_epoch * TABLE1_CLIENT_EPOCHS / 3600,
    }


def fcm(device: str, network: str, rounds: int) -> dict[str, Any]:
    """F-CMs (C²BM), the paper's protocol on ``network``, at most ``rounds`` rounds."""
    from fedstruct.methods.fcm import ConceptSource, FCMRun, method

    settings = FCMRun(network=network, seed=0, rounds=rounds, device=device)
    source = ConceptSource(settings)
    _ = source.partition
    start = time.perf_counter()
    model = method(settings, source).fit(source.clients())
    seconds = _synced(time.perf_counter() - start, device)
    scores = model.evaluate(source.test, truth=source.truth)
    return {"seconds": seconds, "accuracy": scores["task_accuracy"], "rounds": len(model.history_)}


def cafe_digits(device: str, rounds: int) -> dict[str, Any]:
    """CAFE on digits-LT: 100 clients, 10 % per round, 5 local epochs."""
    from fedstruct.methods.cafe import CafeRun, SplitImages, method

    settings = CafeRun(rounds=rounds, local_epochs=5, device=device)
    source = SplitImages(settings)
    fed = source.federation
    start = time.perf_counter()
    model = method(settings, source).fit(fed.clients, test=fed.test)
    seconds = _synced(time.perf_counter() - start, device)
    return {"seconds": seconds, "accuracy": model.score(fed.test), "rounds": rounds}


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    "enco-d20": enco_d20,
    "fedcd-d20": fedcd_d20,
    "enco-d1000": enco_large,
    "enco-d100": enco_d100,
    "fcm-asia": lambda device, **kw: fcm(device, "asia", **kw),
    "cafe-digits": cafe_digits,
    "fcm-hailfinder": lambda device, **kw: fcm(device, "hailfinder", **kw),
}


#: The cases that train ENCO (``--no-cuda-graphs`` runs them op by op on a GPU).
ENCO_CASES = ("enco-d20", "fedcd-d20", "enco-d1000", "enco-d100")


def _default_steps() -> dict[str, int]:
    from fedstruct.methods.fedcd.enco import ENCOConfig

    config = ENCOConfig()
    return {"model_steps": config.model_steps, "graph_steps": config.graph_steps}


def _synced(seconds: float, device: str) -> float:
    """``seconds``, after the GPU's queued work (if any) has finished (fits end with a
    copy to the host, so this adds nothing; kept for safety)."""
    import torch

    if torch.cuda.is_available() and device != "cpu":
        torch.cuda.synchronize()
    return seconds


# ------------------------------------------------------------------ one case (child)
def run_case(name: str, device: str, size: str, cuda_graphs: bool = True) -> dict[str, Any]:
    """Run case ``name`` here and return its figures and the peak memory; ENCO's cases
    (FED-CD's included) with ``cuda_graphs`` (ENCOConfig.cuda_graphs)."""
    import torch

    from fedstruct.fl.device import resolve_device

    where = resolve_device(device)
    if where.type == "cuda":
        torch.cuda.reset_peak_memory_stats(where)
    settings = dict(SIZES[size][name])
    if name in ENCO_CASES:
        settings["cuda_graphs"] = cuda_graphs
    out = CASES[name](str(where), **settings)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if where.type == "cuda":
        out["peak_device_mb"] = torch.cuda.max_memory_allocated(where) / 2**20
    return out


# ------------------------------------------------------------------ the run (parent)
def machine(device: str) -> dict[str, Any]:
    """What ran: the device's name, CPU, cores, torch's version."""
    import torch

    from fedstruct.fl.device import resolve_device

    where = resolve_device(device)
    name = torch.cuda.get_device_name(where) if where.type == "cuda" else "cpu"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "device": str(where),
        "device_name": name,
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "torch": torch.__version__,
        "threads": os.environ.get("FEDSTRUCT_THREADS", "1 (fedstruct's default)"),
    }


def markdown(report: dict[str, Any]) -> str:
    """The results as a markdown table."""
    m = report["machine"]
    lines = [
        f"{m['device_name']} ({m['device']}), {m['cpu']}, {m['cores']} cores, torch "
        f"{m['torch']}, size {report['size']}, budget {report['budget']} s"
        + ("" if m["device"] == "cpu" else f", cuda_graphs {report['cuda_graphs']}"),
        "",
        "| case | time | peak device | peak RSS | quality | notes |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in report["cases"].items():
        if "error" in r:
            lines.append(f"| {name} | — | — | — | — | {r['error']} |")
            continue
        device_mb = f"{r['peak_device_mb']:.0f} MB" if "peak_device_mb" in r else "—"
        quality = (
            f"SHD {r['shd']}" if "shd" in r
            else f"accuracy {r['accuracy']:.3f}" if "accuracy" in r
            else "—"
        )  # fmt: skip
        lines.append(
            f"| {name} | {r['seconds']:.1f} s | {device_mb} | {r['peak_rss_mb']:.0f} MB | "
            f"{quality} | {_notes(r)} |"
        )
    return "\n".join(lines) + "\n"


def _notes(r: dict[str, Any]) -> str:
    if "projected_epoch_seconds" in r:
        return (
            f"d = {r['d']}: {r['seconds_per_model_step'] * 1e3:.1f} ms per distribution step, "
            f"{r['seconds_per_graph_step'] * 1e3:.1f} ms per graph step; projected epoch "
            f"{r['projected_epoch_seconds']:.0f} s, {LARGE_EPOCHS} epochs "
            f"{r['projected_run_hours']:.2f} h (a projection)"
        )
    if "projected_table1_hours" in r:
        return f"{r['rounds']} rounds; Table 1 projected {r['projected_table1_hours']:.2f} h"
    if "epochs" in r:
        return f"d = {r['d']}, {r['epochs']} epochs"
    return f"{r['rounds']} rounds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--budget", type=float, default=BUDGET)
    parser.add_argument("--out", type=Path, default=Path("results/gpu"))
    parser.add_argument("--only", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument(
        "--limit",
        nargs="+",
        default=[],
        metavar="CASE=SECONDS",
        help="override a case's time limit at full size, e.g. enco-d20=90",
    )
    parser.add_argument(
        "--cuda-graphs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ENCO's steps recorded as CUDA graphs and replayed (--no-cuda-graphs: op by op)",
    )
    parser.add_argument("--case", choices=list(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:  # a child: one case, its figures as one JSON line
        print(json.dumps(run_case(args.case, args.device, args.size, args.cuda_graphs)))
        return

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "machine": machine(args.device),
        "size": args.size,
        "budget": args.budget,
        "cuda_graphs": args.cuda_graphs,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "cases": {},
    }
    limits = {**LIMITS, **{k: float(v) for k, v in (x.split("=") for x in args.limit)}}
    deadline = time.monotonic() + args.budget
    for name in args.only:
        left = deadline - time.monotonic()
        limit = min(left, limits[name]) if args.size == "full" else left
        if limit < 5:
            report["cases"][name] = {"error": "not run: the budget was spent"}
        else:
            report["cases"][name] = _child(name, args, limit)
        print(name, json.dumps(report["cases"][name]), flush=True)
        (args.out / "gpu.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "gpu.md").write_text(markdown(report))
    print(markdown(report))


def _child(name: str, args: argparse.Namespace, limit: float) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--case", name, "--device", args.device, "--size", args.size]
    cmd.append("--cuda-graphs" if args.cuda_graphs else "--no-cuda-graphs")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired as stopped:
        return {"error": f"stopped at its time limit, {limit:.0f} s{_epochs_done(stopped.stderr)}"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _epochs_done(stderr: bytes | str | None) -> str:
    """What a stopped ENCO case had done: its last epoch line, as a rate."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr or ""
    marks = [line.split() for line in text.splitlines() if line.startswith(EPOCH_MARK)]
    if not marks:
        return ""
    epochs, seconds = int(marks[-1][1]), float(marks[-1][2])
    return f" ({epochs} epochs in {seconds:.1f} s: {seconds / epochs:.2f} s per epoch)"


if __name__ == "__main__":
    main()
