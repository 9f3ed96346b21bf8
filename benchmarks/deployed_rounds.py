"""Issue 53's speed targets for a loopback deployment whose SuperNodes keep warm workers.

Three figures, each a ratio against a reference timed in the same script, medians of
``--repeats``:

1. **per-exchange overhead** (target at most 0.5 s): what one deployed exchange (a
   message to every node, answered in parallel) costs over the same exchange in
   process. fedavg (asia, 3 clients, 3,000 rows, as ``benchmarks/backends.py``) runs
   ``--r1`` and ``--r2`` rounds on the local backend and on a loopback deployment
   (a SuperLink and 3 SuperNodes started as ``fedstruct flower`` starts them, Flower's
   default intervals, no poll setting); the overhead is
   ``((T_flower(r2) - T_flower(r1)) - (T_local(r2) - T_local(r1))) / exchanges``, where
   ``exchanges`` is what the added rounds asked each node (the nodes' logs count them).
   Every deployed run starts once each node has a spare worker, its app loaded, and
   the SuperLink a spare ServerApp (their logs say so; each starts one once it has
   been idle a few seconds), as after a pause between runs; that wait is not timed.
   The CPU seconds of every process of the cluster (SuperLink, ServerApp, SuperNodes,
   their workers; Linux's ``/proc``) are counted the same way: on a loaded machine the
   wall time stretches with the load, the CPU time much less.
2. **a deployed round against a flower-sim round** (target at most 2): the per-round
   times ``(T(r2) - T(r1)) / (r2 - r1)`` of the two backends.
3. **a deployed secure run against a local one** (target at most 2): ``fedstruct run
   fedavg --secure-aggregation`` as a command (4 clients, 400 training and 100 test
   rows, 1 round: the deployed tests' settings), from its start to its results, on the
   local backend and submitted to 4 SuperNodes started with
   ``--require-secure-aggregation`` (results fetched back to the submitter's folder).

Run: ``.venv/bin/python benchmarks/deployed_rounds.py [--repeats 3] [--r1 2] [--r2 6]
[--targets overhead,secure]`` (``overhead`` gives figures 1 and 2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fedstruct.deployment.launcher import FlowerLauncher
from fedstruct.fl.flower.client_app import LOG_PREFIX
from fedstruct.fl.flower.cluster import DeploymentOptions
from fedstruct.fl.flower.loopback import FEDSTRUCT, LoopbackCluster
from fedstruct.runs import execute

SETTINGS = {"network": "asia", "clients": 3, "samples": 3000, "test_samples": 1000}
SECURE = ["--clients", "4", "--rounds", "1", "--set", "samples=400", "--set",
          "test_samples=100", "--secure-aggregation", "--quiet"]  # fmt: skip
TARGETS = ("overhead", "secure")


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def cluster_cpu(cluster: LoopbackCluster) -> float:
    """CPU seconds used so far by the cluster's processes and their children (every
    process of their sessions: each was started in a session of its own), from /proc."""
    sessions = {proc.pid for proc in cluster.procs.values()}
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) in sessions:  # utime, stime, cutime, cstime
            total += sum(int(x) for x in fields[11:15])
    return total / tick


def spare_ready(log: str) -> bool:
    """Whether a node's ``log`` says it has a spare worker, its app loaded: one started
    after the last run's messages went to a worker (a node starts it once it has been
    idle for a while), and every worker it started ready."""
    given, started = log.rfind(" is handed to worker"), log.rfind("started worker")
    ready = log.count("fedstruct dispatcher: worker ")
    return started > given and ready >= log.count("started worker")


def workers_ready(cluster: LoopbackCluster, timeout: float = 300.0) -> None:
    """Wait until every SuperNode has a spare worker that has loaded its app, and the
    SuperLink a spare ServerApp (each one's log says so): a run then starts on an idle
    cluster, as it would after a pause, and no worker's start competes with it."""
    deadline = time.monotonic() + timeout
    while True:
        logs = [cluster.log(n) for n in cluster.procs]
        if all(spare_ready(log) for log in logs):
            return
        if time.monotonic() > deadline:
            raise RuntimeError("the nodes' workers did not get ready")
        time.sleep(0.5)


def received(cluster: LoopbackCluster) -> int:
    """Messages the cluster's SuperNodes have received so far (their own log lines)."""
    return sum(
        LOG_PREFIX in line and " received " in line
        for name in cluster.procs
        if name != "superlink"
        for line in cluster.log(name).splitlines()
    )


def per_round(
    name: str, run, r1: int, r2: int, repeats: int, before=lambda: None
) -> list[tuple[float, float]]:
    """``(T(r1), T(r2))`` of each repeat of ``run(rounds, tag)`` (``before()`` is called,
    untimed, before each)."""
    times = []
    for rep in range(repeats):
        pair = []
        for rounds in (r1, r2):
            before()
            start = time.perf_counter()
            run(rounds, f"{name}-{rep}-{rounds}")
            pair.append(time.perf_counter() - start)
        print(f"  {name:<10} repeat {rep}: T({r1})={pair[0]:6.2f} s  T({r2})={pair[1]:6.2f} s"
              f"  (load {load()})", flush=True)  # fmt: skip
        times.append((pair[0], pair[1]))
    return times


def deployed_run(cluster: LoopbackCluster, launcher, out: Path, rounds: int) -> None:
    """One fedavg run of ``rounds`` rounds submitted to ``cluster``."""
    execute("fedavg", [{**SETTINGS, "rounds": rounds}], out, backend=launcher)


def overhead(args: argparse.Namespace, root: Path) -> None:
    """Figures 1 and 2."""
    span = args.r2 - args.r1

    def in_process(backend):
        def run(rounds: int, tag: str) -> None:
            execute("fedavg", [{**SETTINGS, "rounds": rounds}], root / tag, backend=backend)

        return run

    in_process("local")(1, "local-warm-up")  # imports
    local_cpu = {}
    for rounds in (args.r1, args.r2):
        started = time.process_time()
        in_process("local")(rounds, f"local-cpu-{rounds}")
        local_cpu[rounds] = time.process_time() - started
    local = per_round("local", in_process("local"), args.r1, args.r2, args.repeats)
    sim = per_round("flower-sim", in_process("flower-sim"), args.r1, args.r2, args.repeats)
    with LoopbackCluster(root / "cluster", runs=root) as cluster:
        cluster.superlink("--insecure")
        cluster.wait_connected(
            *(cluster.supernode(k, "--insecure") for k in range(SETTINGS["clients"]))
        )
        launcher = FlowerLauncher(DeploymentOptions(superlink=cluster.address))
        asked: dict[int, list[int]] = {args.r1: [], args.r2: []}
        cpu: dict[int, list[float]] = {args.r1: [], args.r2: []}
        deployed_run(cluster, launcher, root / "flower-warm-up", 1)  # the cluster's first run

        def deployed(rounds: int, tag: str) -> None:
            before, used = received(cluster), cluster_cpu(cluster)
            deployed_run(cluster, launcher, root / tag, rounds)
            asked[rounds].append((received(cluster) - before) // SETTINGS["clients"])
            cpu[rounds].append(cluster_cpu(cluster) - used)

        flower = per_round(
            "flower", deployed, args.r1, args.r2, args.repeats, lambda: workers_ready(cluster)
        )
    exchanges = statistics.median(asked[args.r2]) - statistics.median(asked[args.r1])

    def median_round(times: list[tuple[float, float]]) -> float:
        return statistics.median((b - a) / span for a, b in times)

    rounds = {"local": median_round(local), "flower-sim": median_round(sim),
              "flower": median_round(flower)}  # fmt: skip
    added = [(f[1] - f[0]) - (loc[1] - loc[0]) for f, loc in zip(flower, local, strict=True)]
    per_exchange = statistics.median(added) / exchanges
    print(f"\nfedavg {SETTINGS}, rounds {args.r1} and {args.r2}, median of {args.repeats}")
    for name, seconds in rounds.items():
        print(f"  {name:<10} per round {seconds:7.3f} s")
    print(f"  exchanges per added round: {exchanges / span:.1f}")
    print(f"1. per-exchange overhead of the deployment: {per_exchange:.3f} s (target <= 0.5)")
    added_cpu = statistics.median(cpu[args.r2]) - statistics.median(cpu[args.r1])
    local_added = local_cpu[args.r2] - local_cpu[args.r1]
    print(f"   CPU per exchange: deployed cluster {added_cpu / exchanges:.3f} s "
          f"({added_cpu / exchanges / SETTINGS['clients']:.3f} s per node's message), "
          f"in process {local_added / exchanges:.3f} s")  # fmt: skip
    ratio = rounds["flower"] / rounds["flower-sim"]
    print(f"2. deployed round / flower-sim round: {ratio:.2f} (target <= 2)")


def secure(args: argparse.Namespace, root: Path) -> None:
    """Figure 3."""
    import subprocess

    def command(*extra: str, env: dict[str, str] | None = None) -> float:
        start = time.perf_counter()
        done = subprocess.run([*FEDSTRUCT, "run", "fedavg", *SECURE, *extra], env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return time.perf_counter() - start

    with LoopbackCluster(root / "secure", runs=root) as cluster:
        cluster.superlink("--insecure")
        secure = ("--insecure", "--require-secure-aggregation")
        cluster.wait_connected(*(cluster.supernode(k, *secure) for k in range(4)))
        local, deployed = [], []
        for rep in range(args.repeats):
            workers_ready(cluster)  # no spare starts during the local run either
            local.append(command("--out", str(root / f"local-{rep}")))
            workers_ready(cluster)
            submit = ["--backend", "flower", "--superlink", cluster.address]
            deployed.append(
                command(*submit, "--out", str(root / f"deployed-{rep}"), env=cluster.env)
            )
            print(f"  secure run {rep}: local {local[-1]:6.2f} s, deployed {deployed[-1]:6.2f} s"
                  f"  (load {load()})", flush=True)  # fmt: skip
    ratio = statistics.median(deployed) / statistics.median(local)
    print(f"\nsecure fedavg (4 clients, 1 round), command start to results, median of "
          f"{args.repeats}: local {statistics.median(local):.2f} s, deployed "
          f"{statistics.median(deployed):.2f} s")  # fmt: skip
    print(f"3. deployed secure run / local secure run: {ratio:.2f} (target <= 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--r1", type=int, default=2)
    parser.add_argument("--r2", type=int, default=6)
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="comma-separated, from: " + ", ".join(TARGETS))  # fmt: skip
    args = parser.parse_args()
    chosen = args.targets.split(",")
    if unknown := sorted(set(chosen) - set(TARGETS)):
        parser.error(f"--targets: unknown {', '.join(unknown)}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load()}")
    with tempfile.TemporaryDirectory(prefix="fedstruct-deployed-rounds-") as folder:
        root = Path(folder)
        if "overhead" in chosen:
            overhead(args, root)
        if "secure" in chosen:
            secure(args, root)
    print(f"load at the end: {load()}")


if __name__ == "__main__":
    main()
