"""Flower deployment on loopback: SuperLink + SuperNodes as separate processes.

Flower starts a ClientApp process per message, so each round costs a few seconds
here even though the clusters poll every :data:`POLL` s instead of Flower's 3 s;
the runs are short and each test proves several things: a plain deployment's
result equals the local backend's in tests/experiments/test_node_sites_deployed.py
and, after a stop and a resume, here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from flwr.common.constant import ErrorCode

from fedstruct.errors import CheckpointError, DeploymentError
from fedstruct.experiments import execute
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.fl.flower.cluster import (
    CONNECTION,
    ControlAuth,
    Link,
    flower_env,
    flwr_json,
    wait_reachable,
    write_connection,
)
from fedstruct.fl.flower.loopback import FEDSTRUCT, LoopbackCluster

pytestmark = pytest.mark.slow

SIZES = {"samples": 1500, "test_samples": 500}
SMALL = [*(a for k, v in SIZES.items() for a in ("--set", f"{k}={v}")), "--quiet"]
#: Seconds between the polls of the clusters' SuperNodes and SuperExecs (Flower: 3 s, 1 s).
POLL = 0.25


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LoopbackCluster(tmp_path_factory.mktemp("insecure"), poll_interval=POLL)
    try:
        c.superlink("--insecure")
        c.supernode(0, "--insecure")
        c.supernode(1, "--insecure")
        yield c
    finally:
        c.close()


def run_args(
    cluster: LoopbackCluster, out: Path, clients: int, rounds: int, *extra: str
) -> list[str]:
    return [
        "run",
        "fedavg",
        "--clients",
        str(clients),
        "--rounds",
        str(rounds),
        *SMALL,
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


def wait_for_round(out: Path, rnd: int, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while checkpoint_round(out) < rnd:
        assert proc.poll() is None, f"the run ended before round {rnd}"
        assert time.monotonic() < deadline, f"round {rnd} not reached in {timeout} s"
        time.sleep(0.5)


def local_metrics(out: Path, clients: int, rounds: int) -> dict:
    """The local backend's metrics for :func:`run_args`'s settings (in this process:
    the command line's own path is the deployed runs')."""
    settings = {"clients": clients, "rounds": rounds, **SIZES}
    execute("fedavg", [settings], out)
    return json.loads((out / "metrics.json").read_text())


def test_bad_partition_stops_the_run_and_the_checkpoint_resumes(cluster, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*FEDSTRUCT, *run_args(cluster, out, 2, 4)],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_round(out, 1, proc)
        cluster.supernode(5, "--insecure", name="bad")  # the federation has partitions 0..1
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.stop("bad")
    assert proc.returncode == 2
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("error: a SuperNode hosts partition 5, but the federation has 2")
    done = checkpoint_round(out)
    assert 1 <= done < 4  # the finished rounds are kept
    resumed = cluster.fedstruct("run", "fedavg", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    # the deployed rounds, stopped and resumed, give the local backend's result
    assert json.loads((out / "metrics.json").read_text()) == local_metrics(tmp_path / "local", 2, 4)
    assert json.loads((out / "config.json").read_text())["backend"] == "flower"


def test_nodes_join_and_leave_mid_run(cluster, tmp_path):
    """Runs last in this module: it stops node 0."""
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*FEDSTRUCT, *run_args(cluster, out, 3, 6, "--min-nodes", "2")],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_round(out, 1, proc)
        cluster.supernode(2, "--insecure")  # joins: takes part from a later round
        wait_for_round(out, 3, proc)
        cluster.stop("node0", signal.SIGTERM)  # leaves: a dropout, not a crash
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    history = json.loads((out / "history.json").read_text())
    asked = [h["clients_asked"] for h in history]
    assert asked[0] == 2  # node 2 was not there yet
    assert 3 in asked[1:4]  # it joined
    assert asked[-1] == 2  # node 0 left
    assert all(h["clients_answered"] <= h["clients_asked"] for h in history)


def test_tls_with_node_and_control_keys_refuses_strangers(tmp_path, write_foreign_app):
    """With TLS, node keys and control keys: a node with an unregistered key, a node
    registration or run submitted without a control key, and an app that is not
    fedstruct's are all refused; the coordinator's signed run goes through."""
    c = LoopbackCluster(tmp_path, poll_interval=POLL)
    certs, keys = tmp_path / "certs", tmp_path / "keys"
    assert c.fedstruct("flower", "certificates", str(certs)).returncode == 0
    for name in ("hospital", "intruder"):
        assert c.fedstruct("flower", "node-key", str(keys / name)).returncode == 0
    assert c.fedstruct("flower", "control-key", str(keys / "coordinator")).returncode == 0
    tls = ["--root-certificates", str(certs / "ca.crt")]
    signed = ["--control-key", str(keys / "coordinator")]
    try:
        c.superlink(
            "--certificates", str(certs), "--node-auth",
            "--control-keys", str(keys / "coordinator.pub"),
        )  # fmt: skip
        register = ["flower", "register", "--superlink", c.address, *tls]
        stranger = c.fedstruct(*register, str(keys / "intruder.pub"))
        assert stranger.returncode == 2
        assert "refused 'flwr supernode': it answers only holders of a control key" in (
            stranger.stderr
        )
        reg = c.fedstruct(*register, str(keys / "hospital.pub"), *signed)
        assert reg.returncode == 0, reg.stdout + reg.stderr
        c.supernode(0, *tls, "--auth-key", str(keys / "hospital"))
        intruder = c.supernode(1, *tls, "--auth-key", str(keys / "intruder"), name="intruder")
        assert c.procs[intruder].wait(timeout=60) != 0  # refused: the process exits
        assert "Failed to activate SuperNode" in c.log(intruder)
        # a run submitted with the public ca.crt only
        unsigned = c.fedstruct(*run_args(c, tmp_path / "unsigned", 1, 1, *tls))
        assert unsigned.returncode == 2
        assert "error: the SuperLink refused 'flwr run'" in unsigned.stderr
        assert not (tmp_path / "unsigned" / "metrics.json").exists()
        # a foreign app, even signed, is refused by the SuperLink itself
        foreign = write_foreign_app(tmp_path / "foreign")
        with pytest.raises(DeploymentError, match="fedstruct's app only"):
            flwr_json(["run", str(foreign), CONNECTION], c.home,
                      control=ControlAuth(c.address, keys / "coordinator"))  # fmt: skip
        result = c.fedstruct(*run_args(c, tmp_path / "run", 1, 1, *tls, *signed))
        assert result.returncode == 0, result.stderr
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert metrics["rounds"] == 1 and metrics["mean_clients_answered"] == 1
    finally:
        c.close()


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
        wait_reachable(Link(c.address), 60)
        write_connection(c.home, Link(c.address))
        c.supernode(0, "--insecure")
        app = write_foreign_app(tmp_path / "foreign")
        marker, report = tmp_path / "node-ran-foreign-code", tmp_path / "report.json"
        config = tmp_path / "run-config.toml"
        config.write_text(f'marker = "{marker}"\nreport = "{report}"\n')
        flwr_json(["run", str(app), CONNECTION, "--run-config", str(config)], c.home)
        deadline = time.monotonic() + 150
        while not report.exists():
            assert time.monotonic() < deadline, c.log("superlink")[-2000:]
            time.sleep(0.5)
        assert json.loads(report.read_text()) == [int(ErrorCode.INVALID_FAB)]
        assert not marker.exists()
        assert "fedstruct guard: refused run" in c.log("node0")
    finally:
        c.close()


@pytest.mark.skipif(
    os.environ.get("FEDSTRUCT_DEPLOYED_SECAGG") != "1",
    reason="6.5 min on 2 busy cores (8 exchanges of 3 ClientApp processes each): "
    "FEDSTRUCT_DEPLOYED_SECAGG=1 runs it",
)
def test_nodes_that_require_secure_aggregation(tmp_path):
    """Three SuperNodes started with --require-secure-aggregation: a plain run stops at
    the first summable request with the node's one-line reason; with
    --secure-aggregation the deployed run gives the local secure run's metrics (the
    secure sums are exact modulo 2^64, and the messages are the same)."""
    with LoopbackCluster(tmp_path / "cluster", poll_interval=POLL) as c:
        c.superlink("--insecure")
        for k in range(3):
            c.supernode(k, "--insecure", "--require-secure-aggregation")
        plain = c.fedstruct(*run_args(c, tmp_path / "plain", 3, 1))
        assert plain.returncode == 2
        last = plain.stderr.strip().splitlines()[-1]
        assert "requires secure aggregation and refuses to answer 'fedavg.fit'" in last
        secure = c.fedstruct(*run_args(c, tmp_path / "secure", 3, 1, "--secure-aggregation"))
        assert secure.returncode == 0, secure.stderr
    settings = {"clients": 3, "rounds": 1, "secure_aggregation": True, **SIZES}
    local = execute("fedavg", [settings], tmp_path / "local").metrics
    assert json.loads((tmp_path / "secure" / "metrics.json").read_text()) == local
