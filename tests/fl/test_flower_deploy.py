"""Flower deployment on loopback: SuperLink + SuperNodes as separate processes.

Each SuperNode answers a run's messages with one warm worker (its first message
builds the client, the others reuse it) and its SuperExec polls every :data:`POLL` s
instead of Flower's 1 s; the runs are short and each test proves several things: a
plain deployment's result equals the local backend's in
tests/runs/test_node_sites_deployed.py and, after a stop and a resume, here; nodes that
require secure aggregation give the local secure run's result, and the survivors' sum
when one of them is stopped mid-round; a control token is good for one call, once, and
is never stored; a run's results reach a submitter in another folder and home, and are
fetched again elsewhere, where the run resumes. A node joins or leaves between a run
stopped after a round (``--stop-after``) and its ``--resume``: a round of warm workers
is over sooner than a node starts.

Every wait is on an event (a log line, a checkpoint, a process's end) bounded by
:data:`~fedstruct.fl.flower.loopback.PATIENCE`, far above what a busy machine needs;
no test depends on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("flwr")


from fedstruct.errors import CheckpointError, DeploymentError
from fedstruct.fl import LocalBackend, LocalGrid, Message
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.fl.flower import control
from fedstruct.fl.flower.adapter import INVALID_APP_CODE, list_runs_request
from fedstruct.fl.flower.client_app import LOG_PREFIX
from fedstruct.fl.flower.cluster import Link, flower_env, wait_reachable
from fedstruct.fl.flower.control import register_node, run_status, start_run
from fedstruct.fl.flower.credentials import call_binding
from fedstruct.fl.flower.grid import HELLO
from fedstruct.fl.flower.loopback import FEDSTRUCT, PATIENCE, LoopbackCluster
from fedstruct.fl.secagg import protocol as p
from fedstruct.runs import execute
from fedstruct.runs.launch import LocalLauncher
from fedstruct.runs.progress import read_progress

pytestmark = [pytest.mark.slow, pytest.mark.deploy]

SIZES = {"samples": 1500, "test_samples": 500}
#: Seconds between the polls of the clusters' SuperNodes and SuperExecs (Flower: 3 s, 1 s).
POLL = 0.25


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two SuperNodes; runs write under the session's temporary folder (each test's
    ``tmp_path``)."""
    runs = tmp_path_factory.getbasetemp()
    c = LoopbackCluster(tmp_path_factory.mktemp("insecure"), poll_interval=POLL, runs=runs)
    try:
        c.superlink("--insecure")
        c.wait_connected(c.supernode(0, "--insecure"), c.supernode(1, "--insecure"))
        yield c
    finally:
        c.close()


def run_args(
    cluster: LoopbackCluster,
    out: Path,
    clients: int,
    rounds: int,
    *extra: str,
    sizes: Mapping[str, int] = SIZES,
) -> list[str]:
    return [
        "run",
        "fedavg",
        "--clients",
        str(clients),
        "--rounds",
        str(rounds),
        *(a for k, v in sizes.items() for a in ("--set", f"{k}={v}")),
        "--quiet",
        "--backend",
        "flower",
        "--superlink",
        cluster.address,
        "--out",
        str(out),
        *extra,
    ]


def checkpoint_round(out: Path) -> int:
    try:
        return int(read_checkpoint_header(out / CHECKPOINT_FILE)["round"])
    except CheckpointError:
        return 0


def wait_for_progress(
    out: Path, rnd: int, proc: subprocess.Popen, timeout: float = PATIENCE
) -> None:
    """Wait until the submitter's folder ``out`` says round ``rnd`` is done (the progress
    it mirrors from the SuperLink while it waits)."""
    deadline = time.monotonic() + timeout
    while ((read_progress(out) or {}).get("round") or 0) < rnd:
        assert proc.poll() is None, f"the run ended before round {rnd}"
        assert time.monotonic() < deadline, f"round {rnd} not reached in {timeout} s"
        time.sleep(0.2)


def local_metrics(out: Path, clients: int, rounds: int) -> dict:
    """The local backend's metrics for :func:`run_args`'s settings (in this process:
    the command line's own path is the deployed runs')."""
    settings = {"clients": clients, "rounds": rounds, **SIZES}
    execute("fedavg", [settings], out)
    return json.loads((out / "metrics.json").read_text())


#: The secure runs' data: four nodes of 100 training rows each, one round.
SECURE_SIZES = {"samples": 400, "test_samples": 100}


@pytest.fixture(scope="class")
def secure_cluster(tmp_path_factory):
    """Four SuperNodes started with --require-secure-aggregation (4 nodes: k = 3
    neighbours, t = 2, so one node may drop out after sending its shares)."""
    runs = tmp_path_factory.getbasetemp()
    c = LoopbackCluster(tmp_path_factory.mktemp("secure"), poll_interval=POLL, runs=runs)
    try:
        c.superlink("--insecure")
        c.wait_connected(
            *(c.supernode(k, "--insecure", "--require-secure-aggregation") for k in range(4))
        )
        yield c
    finally:
        c.close()


@pytest.fixture(scope="class")
def local_secure(tmp_path_factory) -> dict:
    """The local secure run's metrics for :func:`secure_args`'s settings (every node
    answering)."""
    return local_secure_metrics(tmp_path_factory.mktemp("local-secure"))


def secure_args(cluster: LoopbackCluster, out: Path, *extra: str) -> list[str]:
    return run_args(cluster, out, 4, 1, *extra, sizes=SECURE_SIZES)


def local_secure_metrics(out: Path, launcher: LocalLauncher | None = None) -> dict:
    """The local secure run's metrics for :func:`secure_args`'s settings."""
    settings = {"clients": 4, "rounds": 1, "secure_aggregation": True, **SECURE_SIZES}
    return execute("fedavg", [settings], out, backend=launcher or "local").metrics


@dataclass(frozen=True)
class DiesAtItsFirstMask(LocalLauncher):
    """Runs here on a local grid where node ``dead`` answers nothing from the first
    masked-answer stage on: a node killed after sending its shares."""

    dead: int = 3

    def launch(self, run):
        return run.here(_DyingBackend(self.dead))


class _DyingBackend(LocalBackend):
    def __init__(self, dead: int) -> None:
        self.dead = dead

    def run(self, server_fn, method, clients, participation, seed):
        dead, built = self.dead, [method.make_client(self.site_data(c)) for c in clients]

        class Grid(LocalGrid):
            gone = False

            def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
                self.gone = self.gone or any(m.kind == p.MASK for m in messages.values())
                if self.gone:
                    messages = {n: m for n, m in messages.items() if n != dead}
                return super()._exchange(messages)

        return server_fn(Grid(built, participation, seed))


def node_lines(cluster: LoopbackCluster, name: str) -> list[str]:
    """The node's own log lines about the messages it received and answered."""
    return [line for line in cluster.log(name).splitlines() if LOG_PREFIX in line]


def answered(lines: list[str]) -> list[str]:
    """The kinds of the requests that ``lines`` say were answered, in order."""
    return [line.split(" answered ")[1].split()[0] for line in lines if " answered " in line]


class TestNodesThatRequireSecureAggregation:
    """Four SuperNodes that require secure aggregation (one cluster for the class;
    the test with a killed node runs last)."""

    def test_a_plain_run_is_refused_and_a_secure_run_is_the_local_secure_run(
        self, secure_cluster, local_secure, tmp_path
    ):
        """A plain run stops at the first summable request with the node's one-line
        reason; with --secure-aggregation the deployed run gives the local secure
        run's metrics (the secure sums are exact modulo 2^64, the messages the same),
        and each node's log names every message it answered, never a value."""
        c = secure_cluster
        plain = c.fedstruct(*secure_args(c, tmp_path / "plain"))
        assert plain.returncode == 2
        last = plain.stderr.strip().splitlines()[-1]
        assert "requires secure aggregation and refuses to answer 'fedavg.fit'" in last
        secure = c.fedstruct(*secure_args(c, tmp_path / "secure", "--secure-aggregation"))
        assert secure.returncode == 0, secure.stderr
        deployed = json.loads((tmp_path / "secure" / "metrics.json").read_text())
        assert deployed == local_secure
        refusals = [
            line for k in range(4) for line in node_lines(c, f"node{k}") if " refused " in line
        ]  # the node whose refusal stopped the run logged it (others may not have got there)
        assert refusals and all("refused fedavg.fit: PrivacyViolationError" in r for r in refusals)
        lines = node_lines(c, "node0")
        stages = [p.KEYS, p.SHARE, p.MASK, p.UNMASK]
        assert answered(lines) == [HELLO, HELLO, *stages, *stages]
        masked = next(line for line in lines if f"answered {p.MASK}" in line)
        assert f"arrays {p.MASKED} uint64[" in masked and "config secagg.layout;" in masked

    def test_a_node_stopped_mid_round_leaves_the_survivors_sum(
        self, secure_cluster, local_secure, tmp_path
    ):
        """Node 3 is stopped (SIGTERM to its process group, its ClientApp included)
        once it has sent its shares and started its masked answer to the training
        request: it leaves the SuperLink, so the server stops waiting for it at once
        (no reply timeout to outlast: the run's default, 600 s, lets the survivors
        take what a busy machine needs), removes its pairwise masks with its
        neighbours' shares, and the round completes with the three survivors' sum, as
        a local run in which node 3 dies at the same stage. Runs last in its class: it
        stops node 3."""
        c = secure_cluster
        before = {k: len(node_lines(c, f"node{k}")) for k in (0, 3)}
        out = tmp_path / "run"
        proc = subprocess.Popen(
            [*FEDSTRUCT, *secure_args(c, out, "--secure-aggregation")],
            env=c.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started = f"received {p.MASK} (round 1; inner fedavg.fit)"
        try:
            deadline = time.monotonic() + PATIENCE
            while not any(started in line for line in node_lines(c, "node3")[before[3] :]):
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "node 3 got no masked-answer stage"
                time.sleep(0.05)
            c.stop("node3", signal.SIGTERM)  # returns once node 3 has ended
            if p.MASK in answered(node_lines(c, "node3")[before[3] :]):
                pytest.fail(
                    "race lost: node 3 answered its masked stage before the stop landed, "
                    "so this run tests no dropout; rerun (a training message should "
                    "outlast the log poll by seconds)"
                )
            _, stderr = proc.communicate(timeout=PATIENCE)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, stderr
        history = json.loads((out / "history.json").read_text())
        answers = [(h["clients_asked"], h["clients_answered"]) for h in history]
        assert answers == [(4, 3)]
        deployed = json.loads((out / "metrics.json").read_text())
        # the survivors' sum: a local run whose node 3 dies at the same stage
        assert deployed == local_secure_metrics(tmp_path / "dies", DiesAtItsFirstMask(dead=3))
        # ... which is not the sum of all four (the deployed test above)
        assert deployed != local_secure
        stages = [p.KEYS, p.SHARE, p.MASK, p.UNMASK]
        assert answered(node_lines(c, "node0")[before[0] :]) == [HELLO, *stages, *stages]
        assert answered(node_lines(c, "node3")[before[3] :]) == [HELLO, p.KEYS, p.SHARE]


def test_bad_partition_stops_the_run_and_the_checkpoint_resumes(cluster, tmp_path):
    """A run stopped after round 1 is resumed once a SuperNode hosting a partition the
    federation does not have has joined: the run stops with that node's one-line error
    and the checkpoint keeps round 1; resumed again without that node, the deployed
    rounds give the local backend's result. (The node joins between the two runs: a
    round of warm workers is over sooner than a node starts.)"""
    out = tmp_path / "run"
    first = cluster.fedstruct(*run_args(cluster, out, 2, 4, "--stop-after", "1"))
    assert first.returncode == 0, first.stderr
    assert checkpoint_round(out) == 1
    bad = cluster.supernode(5, "--insecure", name="bad")  # the federation has partitions 0..1
    try:
        cluster.wait_connected(bad)
        failed = cluster.fedstruct("run", "fedavg", "--resume", str(out), "--quiet")
    finally:
        cluster.stop("bad")
    assert failed.returncode == 2
    lines = [line for line in failed.stderr.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("error: a SuperNode hosts partition 5, but the federation has 2")
    assert checkpoint_round(out) == 1  # the finished round is kept
    resumed = cluster.fedstruct("run", "fedavg", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    # the deployed rounds, stopped and resumed, give the local backend's result
    assert json.loads((out / "metrics.json").read_text()) == local_metrics(tmp_path / "local", 2, 4)
    assert json.loads((out / "config.json").read_text())["backend"] == "flower"


def test_a_tracked_deployed_run_and_its_status_by_run_id(cluster, tmp_path):
    """issue 53, items 1, 5 and 6, on loopback (submitter, SuperLink and SuperNodes in
    their own processes): the submitter names the run id and mirrors the run's progress
    into its own folder while it runs; ``fedstruct status ID --superlink`` gives Flower's
    status and the rounds done, asked of the SuperLink; the submitter logs the run to
    MLflow (every round's series equal to history.json's, metrics.json's values, the
    files fetched back); an id the SuperLink does not know is one line."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    out = tmp_path / "run"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    track = ("--track", "mlflow", "--track-uri", uri)
    proc = subprocess.Popen(
        [*FEDSTRUCT, *run_args(cluster, out, 2, 2, *track)],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = next((line for line in proc.stderr if line.startswith("submitted: run ")), "")
        assert said, proc.communicate(timeout=PATIENCE)[1]  # the submitter names the run
        run_id = said.split()[2]
        wait_for_progress(out, 1, proc)  # mirrored from the SuperLink's folder
        running = cluster.fedstruct("status", run_id, "--superlink", cluster.address)
        here = cluster.fedstruct("status", str(out))  # the submitter's own folder
        _, stderr = proc.communicate(timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert running.returncode == 0, running.stderr
    lines = running.stdout.splitlines()
    assert lines[0].startswith(f"run {run_id} at {cluster.address}: ")
    assert any(line.startswith("  round      ") and line.endswith(" of 2") for line in lines)
    assert here.returncode == 0, here.stderr
    assert "a fedavg run, " in here.stdout and " of 2" in here.stdout  # running, or just ended
    ended = cluster.fedstruct("status", run_id, "--superlink", cluster.address)
    lines = ended.stdout.splitlines()
    assert lines[0] == f"run {run_id} at {cluster.address}: finished:completed"
    assert "a fedavg run, finished" in lines[1] and lines[2] == "  round      2 of 2"
    unknown = cluster.fedstruct("status", "987654321", "--superlink", cluster.address)
    assert unknown.returncode == 2
    (line,) = unknown.stderr.strip().splitlines()
    assert line.startswith("error: run 987654321: ") and "knows no run 987654321" in line
    client = MlflowClient(uri)
    (tracked,) = client.search_runs([client.get_experiment_by_name("fedstruct").experiment_id])
    assert tracked.info.status == "FINISHED"
    assert tracked.data.params["backend"] == "flower"
    history = json.loads((out / "history.json").read_text())
    for key in ("test_accuracy", "clients_answered"):
        logged = client.get_metric_history(tracked.info.run_id, f"round/{key}")
        assert sorted((m.step, m.value) for m in logged) == [(h["round"], h[key]) for h in history]
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: tracked.data.metrics[k] for k in metrics} == metrics
    artifacts = {a.path for a in client.list_artifacts(tracked.info.run_id)}
    assert {"config.json", "history.json", "metrics.json", "model.safetensors"} <= artifacts


def test_nodes_join_and_leave_between_rounds(cluster, tmp_path):
    """Runs last of the tests on the module's cluster: it stops node 0. Five rounds with
    --min-nodes 2, stopped after round 1 and after round 3 and resumed: node 2 joins
    after round 1 and is asked from round 2 on; node 0 leaves after round 3 (its SIGTERM
    deregisters it as it exits) and is asked no more. (A node dropping out during a
    round: the secure-aggregation class above.)"""
    out = tmp_path / "run"
    first = cluster.fedstruct(
        *run_args(cluster, out, 3, 5, "--min-nodes", "2", "--stop-after", "1")
    )
    assert first.returncode == 0, first.stderr
    cluster.wait_connected(cluster.supernode(2, "--insecure"))  # joins
    middle = cluster.fedstruct(
        "run", "fedavg", "--resume", str(out), "--stop-after", "3", "--quiet"
    )
    assert middle.returncode == 0, middle.stderr
    cluster.stop("node0", signal.SIGTERM)  # leaves: a dropout, not a crash
    last = cluster.fedstruct("run", "fedavg", "--resume", str(out), "--quiet")
    assert last.returncode == 0, last.stderr
    history = json.loads((out / "history.json").read_text())
    assert [h["clients_asked"] for h in history] == [2, 3, 3, 2, 2]
    assert all(h["clients_answered"] == h["clients_asked"] for h in history)


def at_once(
    cluster: LoopbackCluster, *commands: list[str], timeout: float = PATIENCE
) -> list[subprocess.CompletedProcess]:
    """Run independent ``fedstruct`` commands (each writing its own files) at the same
    time with the cluster's environment; their results, in order."""
    procs = [
        subprocess.Popen(
            [*FEDSTRUCT, *args],
            env=cluster.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    results = []
    try:
        for args, proc in zip(commands, procs, strict=True):
            out, err = proc.communicate(timeout=timeout)
            results.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def test_tls_with_node_and_control_keys_refuses_strangers(tmp_path, write_foreign_app):
    """With TLS, node keys and control keys: a node with an unregistered key, a node
    registration or run submitted without a control key, and an app that is not
    fedstruct's are all refused; the coordinator's signed run goes through, and its
    commands leave no token on disk."""
    c = LoopbackCluster(tmp_path, poll_interval=POLL)
    certs, keys = tmp_path / "certs", tmp_path / "keys"
    made = at_once(
        c,
        ["flower", "certificates", str(certs)],
        *(["flower", "node-key", str(keys / name)] for name in ("hospital", "intruder")),
        ["flower", "control-key", str(keys / "coordinator")],
    )
    assert [m.returncode for m in made] == [0, 0, 0, 0], [m.stderr for m in made]
    tls = ["--root-certificates", str(certs / "ca.crt")]
    signed = ["--control-key", str(keys / "coordinator")]
    try:
        c.superlink(
            "--certificates", str(certs), "--node-auth",
            "--control-keys", str(keys / "coordinator.pub"),
        )  # fmt: skip
        register = ["flower", "register", "--superlink", c.address, *tls]
        # the stranger registers at the same time
        stranger, reg = at_once(
            c,
            [*register, str(keys / "intruder.pub")],
            [*register, str(keys / "hospital.pub"), *signed],
        )
        assert stranger.returncode == 2
        assert "refused to register a node: it answers only holders of a control key" in (
            stranger.stderr
        )
        assert reg.returncode == 0, reg.stdout + reg.stderr
        c.wait_connected(c.supernode(0, *tls, "--auth-key", str(keys / "hospital")))
        intruder = c.supernode(1, *tls, "--auth-key", str(keys / "intruder"), name="intruder")
        # the coordinator's signed run, while the refusals below go on
        run = subprocess.Popen(
            [*FEDSTRUCT, *run_args(c, tmp_path / "run", 1, 1, *tls, *signed)],
            env=c.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert c.procs[intruder].wait(timeout=PATIENCE) != 0  # refused: the process exits
            assert "Failed to activate SuperNode" in c.log(intruder)
            # a run submitted with the public ca.crt only
            unsigned = c.fedstruct(*run_args(c, tmp_path / "unsigned", 1, 1, *tls))
            assert unsigned.returncode == 2
            assert "error: the SuperLink refused to submit a run" in unsigned.stderr
            assert not (tmp_path / "unsigned" / "metrics.json").exists()
            # a foreign app, even signed, is refused by the SuperLink itself
            foreign = write_foreign_app(tmp_path / "foreign")
            link = Link(c.address, certs / "ca.crt")
            with pytest.raises(DeploymentError, match="fedstruct's app only"):
                start_run(link, keys / "coordinator", foreign, {})
            _, stderr = run.communicate(timeout=PATIENCE)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, stderr
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert metrics["rounds"] == 1 and metrics["mean_clients_answered"] == 1
    finally:
        c.close()
    # the signed commands left no token behind (they used to keep the last one in
    # $FLWR_HOME/credentials.yaml, good for any call for 5 minutes)
    assert not list(tmp_path.rglob("credentials.yaml"))
    assert not [f for f in tmp_path.rglob("*") if f.is_file() and b"fsc2." in f.read_bytes()]


def test_a_supernode_refuses_an_app_that_is_not_fedstruct(tmp_path, write_foreign_app):
    """Even behind a SuperLink that is not fedstruct's (or was compromised), a node
    started by 'fedstruct flower supernode' answers a foreign app's messages with
    Flower's invalid-app error and never runs its code."""
    c = LoopbackCluster(tmp_path, poll_interval=POLL)
    try:
        c.start(
            "superlink", "--insecure", "--host", "127.0.0.1", "--port", str(c.port),
            "--disable-runtime-dependency-installation",
            env=flower_env(c.home), program=["flower-superlink"],
        )  # fmt: skip
        wait_reachable(Link(c.address), PATIENCE)
        c.supernode(0, "--insecure")
        app = write_foreign_app(tmp_path / "foreign")
        marker, report = tmp_path / "node-ran-foreign-code", tmp_path / "report.json"
        start_run(Link(c.address), None, app, {"marker": str(marker), "report": str(report)})
        deadline = time.monotonic() + PATIENCE
        while not report.exists():
            assert time.monotonic() < deadline, c.log("superlink")[-2000:]
            time.sleep(0.5)
        assert json.loads(report.read_text()) == [int(INVALID_APP_CODE)]
        assert not marker.exists()
        assert "fedstruct guard: refused run" in c.log("node0")
    finally:
        c.close()


def test_nodes_run_only_the_runs_their_operators_approved(tmp_path):
    """Two nodes started with --approve FILE approving FedAvg with exactly one run's
    settings (the line 'fedstruct flower approve' prints): a run of another method
    stops at the nodes' first message, before any data are read, with the node's
    one-line reason at the submitter (exit 2) and one line in its log; the approved
    run runs and gives the local backend's result."""
    from typer.testing import CliRunner

    from fedstruct.cli import app

    sets = [
        a for k, v in {"clients": 2, "rounds": 1, **SIZES}.items() for a in ("--set", f"{k}={v}")
    ]
    printed = CliRunner().invoke(app, ["flower", "approve", "fedavg", *sets])
    line = printed.output.strip().splitlines()[-1].strip()
    assert line.startswith("- fedavg@"), printed.output
    approval = tmp_path / "approve.yaml"
    approval.write_text(f"approve:\n  {line}\n")
    with LoopbackCluster(tmp_path / "cluster", poll_interval=POLL, runs=tmp_path) as c:
        c.superlink("--insecure")
        c.wait_connected(
            *(c.supernode(k, "--insecure", "--approve", str(approval)) for k in (0, 1))
        )
        refused = c.fedstruct(
            "run", "fedcdnv", "--clients", "2", "--quiet", "--backend", "flower",
            "--superlink", c.address, "--out", str(tmp_path / "unapproved"),
        )  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith("error: SuperNode of partition ")
        assert "does not approve this run: its approval file approves fedavg (1 settings" in last
        assert "'- fedcdnv@" in last
        logs = [node_lines(c, f"node{k}") for k in (0, 1)]
        refusals = [x for lines in logs for x in lines if " refused " in x]
        assert refusals and all("refused fedstruct.hello: DeploymentError:" in x for x in refusals)
        assert not any(" answered " in x for lines in logs for x in lines)
        approved = c.fedstruct(*run_args(c, tmp_path / "approved", 2, 1))
        assert approved.returncode == 0, approved.stderr
    deployed = json.loads((tmp_path / "approved" / "metrics.json").read_text())
    assert deployed == local_metrics(tmp_path / "local", 2, 1)


def test_a_control_token_is_good_for_one_call_once_and_never_stored(tmp_path, monkeypatch):
    """The attacks of issue 49 on a TLS SuperLink with control keys and node keys: a
    token is never on disk (nothing to steal after signed calls); a captured token
    replayed is refused; a token made for one call (a run's status), sent with another
    (registering a rogue node key) or with other arguments (another run's status), is
    refused, and the rogue key stays unregistered; a signed run whose results folder
    is outside the SuperLink's runs folder fails in one line and writes nothing there."""
    from fedstruct.deployment.submit import write_app
    from fedstruct.fl.flower.cluster import ControlKeyRefused
    from fedstruct.fl.flower.credentials import (
        make_certificates,
        make_control_key,
        make_node_key,
    )
    from fedstruct.fl.flower.guard import WRONG_CALL

    (tmp_path / "runs").mkdir()
    c = LoopbackCluster(tmp_path / "cluster", runs=tmp_path / "runs")
    certs, keys = tmp_path / "certs", tmp_path / "keys"
    make_certificates(certs)
    key = make_control_key(keys / "coordinator")[0]
    hospital, rogue = (make_node_key(keys / n)[1].read_bytes() for n in ("hospital", "rogue"))
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "home"))  # this process's: stays empty
    sent: list[str] = []
    made = control.control_token

    def keep(path: Path, binding: str) -> str:
        sent.append(made(path, binding))
        return sent[-1]

    monkeypatch.setattr(control, "control_token", keep)
    try:
        c.superlink(
            "--certificates", str(certs), "--node-auth",
            "--control-keys", str(keys / "coordinator.pub"),
        )  # fmt: skip
        link = Link(c.address, certs / "ca.crt")
        register_node(link, key, hospital)
        # replayed: the registration's token, captured, for the rogue key
        monkeypatch.setattr(control, "control_token", lambda path, binding: sent[0])
        with pytest.raises(ControlKeyRefused, match="refused to register a node"):
            register_node(link, key, rogue)
        assert "the control token was used before (a replay)" in c.log("superlink")
        # fresh tokens made for one run's status: for another call, for other arguments
        status = made(key, call_binding(list_runs_request(1)))
        monkeypatch.setattr(control, "control_token", lambda path, binding: status)
        with pytest.raises(DeploymentError, match=f"refused to register a node: {WRONG_CALL}"):
            register_node(link, key, rogue)
        other = made(key, call_binding(list_runs_request(1)))
        monkeypatch.setattr(control, "control_token", lambda path, binding: other)
        with pytest.raises(DeploymentError, match=f"refused to tell a run's status: {WRONG_CALL}"):
            run_status(link, key, 2)
        monkeypatch.setattr(control, "control_token", keep)
        register_node(link, key, rogue)  # the rogue key was never registered before
        # a run writing outside the runs folder
        outside = tmp_path / "outside"
        run_id = start_run(
            link, key, write_app(tmp_path / "app"), {"method": "fedavg", "out": str(outside)}
        )
        deadline = time.monotonic() + PATIENCE
        while not (answer := run_status(link, key, run_id))[0].startswith("finished"):
            assert time.monotonic() < deadline, c.log("superlink")[-3000:]
            time.sleep(0.5)
        assert answer[0] == "finished:failed"
        assert f"results folder {outside} is not inside the SuperLink's runs folder" in answer[1]
        assert not outside.exists()
    finally:
        c.close()
    # stolen from disk: no file holds a token, whoever reads it
    assert len(sent) >= 4
    for path in (f for f in tmp_path.rglob("*") if f.is_file()):
        content = path.read_bytes()
        assert b"fsc2." not in content and not any(t.encode() in content for t in sent), path


def test_results_reach_a_submitter_elsewhere_and_are_fetched_again(tmp_path):
    """Issue 53 on a TLS SuperLink with control keys, started in its own folder (runs
    in superlink/runs), and a submitter in another working directory and HOME, with no
    FLWR_HOME: a run stopped after round 1 comes back whole to the submitter's ./run
    over the signed channel, the same bytes as the SuperLink's copy, its run.json
    naming the Flower run; 'fedstruct flower fetch RUN --out DIR' brings it into a new
    folder on another 'machine', where '--resume' finishes the run, and 'show' and
    'predict' read it; fetching again brings that folder up to date. An unknown run, and
    a folder holding files of no run, are one line and exit 2. Each node answered each
    run's messages with one warm worker, and started no ClientApp process per message."""
    c = LoopbackCluster(
        tmp_path / "superlink", poll_interval=POLL, runs=tmp_path / "superlink" / "runs"
    )
    c.runs.mkdir()
    certs, keys = tmp_path / "superlink" / "certs", tmp_path / "superlink" / "keys"
    made = at_once(
        c, ["flower", "certificates", str(certs)], ["flower", "control-key", str(keys / "c")]
    )
    assert [m.returncode for m in made] == [0, 0], [m.stderr for m in made]
    tls = ["--root-certificates", str(certs / "ca.crt")]
    env = {**c.env, "HOME": str(tmp_path / "home")}
    env.pop("FLWR_HOME")
    if env.get("PYTHONPATH"):  # the same fedstruct from another working directory
        paths = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
    signed = ["--superlink", c.address, *tls, "--control-key", str(keys / "c")]

    def command(where: str, *args: str) -> subprocess.CompletedProcess:
        cwd = tmp_path / where
        cwd.mkdir(exist_ok=True)
        return subprocess.run([*FEDSTRUCT, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=PATIENCE, check=False)  # fmt: skip

    try:
        c.superlink("--certificates", str(certs), "--control-keys", str(keys / "c.pub"))
        c.wait_connected(c.supernode(0, *tls), c.supernode(1, *tls))
        sizes = [a for k, v in SIZES.items() for a in ("--set", f"{k}={v}")]
        first = command("workstation", "run", "fedavg", "--clients", "2", "--rounds", "2",
                        *sizes, "--stop-after", "1", "--quiet", "--backend", "flower",
                        *signed, "--out", "run")  # fmt: skip
        assert first.returncode == 0, first.stderr
        out = tmp_path / "workstation" / "run"
        record = json.loads((out / "run.json").read_text())
        assert record["status"] == "stopped" and record["figures"]
        run_id = record["flower_run"]
        kept = c.runs / json.loads((out / "config.json").read_text())["deployment"]["results"]
        assert kept.name == record["results"] and kept.name.startswith("run-")
        names = ["metrics.json", "history.json", CHECKPOINT_FILE, *record["figures"]]
        for name in names:
            assert (out / name).read_bytes() == (kept / name).read_bytes(), name
        assert checkpoint_round(out) == 1
        # another machine fetches it, resumes it there, and reads its results
        again = command("laptop", "flower", "fetch", str(run_id), "--out", "copy", *signed)
        assert again.returncode == 0, again.stderr
        copy = tmp_path / "laptop" / "copy"
        for name in names:
            assert (copy / name).read_bytes() == (kept / name).read_bytes(), name
        deployment = json.loads((copy / "config.json").read_text())["deployment"]
        assert deployment["results"] == kept.name and deployment["superlink"] == c.address
        resumed = command("laptop", "run", "fedavg", "--resume", "copy", "--quiet")
        assert resumed.returncode == 0, resumed.stderr
        finished = json.loads((copy / "run.json").read_text())
        assert finished["status"] == "finished" and finished["flower_run"] != run_id
        assert len(json.loads((copy / "history.json").read_text())) == 2
        assert (copy / "model.json").read_bytes() == (kept / "model.json").read_bytes()
        shown = command("laptop", "show", "copy")
        assert shown.returncode == 0, shown.stderr
        rows = first_client_rows({"clients": 2, **SIZES}).head(20)
        rows.to_csv(tmp_path / "laptop" / "rows.csv", index=False)
        predicted = command("laptop", "predict", "copy", "--data", "rows.csv", "--out", "p.csv")
        assert predicted.returncode == 0, predicted.stderr
        assert len((tmp_path / "laptop" / "p.csv").read_text().splitlines()) == 21
        update = command("laptop", "flower", "fetch", str(finished["flower_run"]), "--out",
                         "copy", *signed)  # fmt: skip
        assert update.returncode == 0, update.stderr  # the same run: brought up to date
        # bad input: one line, exit 2
        (tmp_path / "laptop" / "notes").mkdir()
        (tmp_path / "laptop" / "notes" / "mine.txt").write_text("mine\n")
        for args, words in [
            (["12345", "--out", "x"], "knows no run 12345"),
            ([str(run_id), "--out", "notes"], "holds no fedstruct run"),
        ]:
            bad = command("laptop", "flower", "fetch", *args, *signed)
            assert bad.returncode == 2 and words in bad.stderr, bad.stderr
            assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert (tmp_path / "laptop" / "notes" / "mine.txt").read_text() == "mine\n"
        for node in ("node0", "node1"):
            log = c.log(node)
            assert "Start `flwr-clientapp` process" not in log
            for flower_run in (run_id, finished["flower_run"]):
                assert log.count(f"run {flower_run} is handed to worker") == 1
            assert len(answered(node_lines(c, node))) > 4
        # each run went to a warm ServerApp on the SuperLink (no flwr-serverapp process)
        log = c.log("superlink")
        assert "Start `flwr-serverapp` process" not in log
        for flower_run in (run_id, finished["flower_run"]):
            assert log.count(f"run {flower_run} is handed to worker") == 1
    finally:
        c.close()


def first_client_rows(settings: dict):
    """The rows of client 0 of fedavg's built-in federation with ``settings``."""
    from fedstruct.runs import runnable
    from fedstruct.runs.settings import apply_settings

    entry = runnable("fedavg")
    chosen = apply_settings(entry.settings(), settings, method="fedavg")
    return entry.resolve(chosen).clients()[0].rows.reset_index(drop=True)
