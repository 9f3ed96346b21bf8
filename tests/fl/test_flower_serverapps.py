"""The SuperLink's warm ServerApps (fedstruct.fl.flower.serverapps, .serverapp_worker).

The SuperLink's dispatcher hands each run it accepts to a warm ServerApp (a spare
process, its imports done) that runs that run and ends; the SuperLink's ask for a run
to start is signed with a secret only its own process holds. The deployed tests
(tests/fl/test_flower_deploy.py) run them in a real SuperLink.
"""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from fedstruct.fl.flower import adapter, dispatch
from fedstruct.fl.flower.cluster import superlink_command
from fedstruct.fl.flower.dispatch import Dispatcher
from fedstruct.fl.flower.serverapps import SuperLinkRuntime, write_secret

SRC = str(Path(__file__).parents[2] / "src")

#: A stand-in ServerApp: writes ready, takes one token, appends "PID TOKEN" to the file
#: given, waits until the file "<that file>.TOKEN" exists (its run ends), writes done
#: and ends.
FAKE_SERVERAPP = """
import os, sys, time
report = os.fdopen(int(sys.argv[2]), "w", buffering=1)
report.write("ready\\n")
token = sys.stdin.readline().strip()
if token:
    with open(sys.argv[1], "a") as seen:
        seen.write(f"{os.getpid()} {token}\\n")
    while not os.path.exists(f"{sys.argv[1]}.{token}"):
        time.sleep(0.02)
    report.write("done\\n")
"""


def wait_until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_the_superlinks_runtime_is_read_from_its_arguments(tmp_path):
    from fedstruct.fl.flower.credentials import make_certificates

    insecure = superlink_command("0.0.0.0", 9091)
    assert SuperLinkRuntime.of(insecure[1:]) == SuperLinkRuntime("127.0.0.1:9091", None)
    make_certificates(tmp_path)
    tls = superlink_command("127.0.0.1", 9092, certificates=tmp_path)
    assert SuperLinkRuntime.of(tls[1:]) == SuperLinkRuntime("127.0.0.1:9092", tmp_path / "ca.crt")
    assert SuperLinkRuntime.of(["--port", "9091"]) is None  # Flower's own SuperExec
    assert SuperLinkRuntime.of(["--isolation", "process"]) is None  # no port named


def test_the_secret_is_for_its_user_only_and_gone_when_the_superlink_ends(tmp_path):
    code = (
        "from fedstruct.fl.flower.serverapps import write_secret; "
        "print(write_secret(b'0123456789abcdef'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": SRC, "PATH": "", "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    path = Path(done.stdout.strip())
    assert path.parent.parent == tmp_path and not path.parent.exists()  # removed at exit
    kept = write_secret(b"s3cret")
    try:
        assert kept.read_bytes() == b"s3cret"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    finally:
        kept.unlink()
        kept.parent.rmdir()


def test_each_run_goes_to_a_warm_serverapp_that_ends_with_it(tmp_path, monkeypatch):
    """A run the SuperLink accepts goes to the spare ServerApp, started beforehand; a run
    it was not woken for is found by its periodic look; each ServerApp runs one run and
    ends; no spare starts while a run is going, one does once none is."""
    monkeypatch.setattr(dispatch, "SPARE_AFTER", 0.0)
    seen_file = tmp_path / "seen"
    spawned: list[subprocess.Popen] = []
    lock = threading.Lock()
    waiting: list[tuple[str, int]] = []

    def spawn(report: int) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", FAKE_SERVERAPP, str(seen_file), str(report)],
            stdin=subprocess.PIPE,
            pass_fds=(report,),
        )
        spawned.append(proc)
        return proc

    def acquire() -> tuple[str, int] | None:
        with lock:
            return waiting.pop(0) if waiting else None

    def seen() -> list[tuple[int, str]]:
        text = seen_file.read_text() if seen_file.exists() else ""
        return [(int(p), t) for p, t in (line.split() for line in text.splitlines())]

    dispatcher = Dispatcher("127.0.0.1:1", spawn=spawn, acquire=acquire, look_every=0.2)
    try:
        dispatcher.start()
        assert len(spawned) == 1  # the spare
        with lock:
            waiting.append(("run1", 1))
        dispatcher.task_created()  # the SuperLink accepted run 1
        wait_until(lambda: len(seen()) == 1, "run 1 to start")
        assert seen() == [(spawned[0].pid, "run1")]
        time.sleep(0.5)  # several of the dispatcher's rounds while run 1 goes
        assert len(spawned) == 1  # no spare while a ServerApp is at work
        with lock:
            waiting.append(("run2", 2))  # not woken: its look finds it
        wait_until(lambda: len(seen()) == 2, "run 2 to start")
        assert seen()[1][1] == "run2" and seen()[1][0] == spawned[1].pid
        (tmp_path / "seen.run1").touch()
        (tmp_path / "seen.run2").touch()
        for proc in spawned[:2]:
            assert proc.wait(timeout=60) == 0  # each ends with its run
        wait_until(lambda: len(spawned) == 3, "a spare once no run goes")
        assert dispatcher.answered == 2
    finally:
        dispatcher.close()
        for proc in spawned:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_a_superlink_refuses_an_unsigned_ask_for_a_run_to_start(tmp_path):
    """Whoever reaches the SuperLink's port cannot take a run's ServerApp token: the ask
    needs the SuperLink's secret (its dispatcher's asks are signed)."""
    from fedstruct.fl.flower.loopback import LoopbackCluster

    with LoopbackCluster(tmp_path) as cluster:
        cluster.superlink("--insecure")
        client = adapter.runtime_client(cluster.address, "SuperExec")
        try:
            with pytest.raises(Exception, match="401"):
                adapter.acquire_serverapp_task(client)
            forged = adapter.runtime_client(
                cluster.address, "SuperExec", auth_secret=b"a guess at the secret"
            )
            with pytest.raises(Exception, match="401"):
                adapter.acquire_serverapp_task(forged)
            forged.close()
        finally:
            client.close()
        log = cluster.log("superlink")
    assert "started worker" in log  # its spare ServerApp


def test_a_serverapp_task_with_a_foreign_bundle_fails_before_anything_runs(tmp_path, monkeypatch):
    """run_serverapp_task checks the run's bundle before it runs the app: a bundle the
    check refuses ends the task as failed with the reason, and the app never runs; a
    bundle it accepts runs the app with the run's config and completes the task."""
    from flwr.app import Context, RecordDict
    from flwr.common.serde import context_to_proto
    from flwr.proto.fab_pb2 import Fab
    from flwr.proto.run_pb2 import Run

    from fedstruct.deployment.submit import write_app

    def our_bundle(folder: Path) -> bytes:
        return adapter.app_bundle(write_app(folder))

    class Client:
        """The SuperLink's Runtime API, as the task sees it."""

        def __init__(self, fab: bytes) -> None:
            self.fab = fab
            self.ended: list[tuple[str, str]] = []

        def SendTaskHeartbeat(self, request):
            return type("Answer", (), {"success": True})()

        def PullTaskInput(self, request):
            context = Context(run_id=7, node_id=0, node_config={}, state=RecordDict(),
                              run_config={})  # fmt: skip
            return type("Input", (), {
                "task_id": 3, "run": Run(run_id=7), "context": context_to_proto(context),
                "fab": Fab(hash_str="0" * 64, content=self.fab),
            })()  # fmt: skip

        def PushLogs(self, request):
            return None

        def PushTaskOutput(self, request):
            self.ended.append((request.sub_status, request.details))

        def close(self) -> None:
            pass

    ran: list[dict] = []

    class App:
        def __call__(self, grid, context):
            ran.append(dict(context.run_config))

    for fab, check, expected in [
        (b"foreign", lambda b: "not fedstruct's app", "failed"),
        (None, lambda b: None, "completed"),
    ]:
        content = fab if fab is not None else our_bundle(tmp_path / "app")
        client = Client(content)
        monkeypatch.setattr(adapter, "runtime_client", lambda *a, c=client, **k: c)
        done = adapter.run_serverapp_task("127.0.0.1:1", "token", App(), check)
        ((status, details),) = client.ended
        assert status == expected and done == (expected == "completed")
        if expected == "failed":
            assert "not fedstruct's app" in details and ran == []
        else:
            assert details == "" and len(ran) == 1 and "method" in ran[0]


def test_a_warm_serverapp_loads_fedstructs_own_and_what_a_run_imports():
    """Before it reports ready, a warm ServerApp has loaded fedstruct's ServerApp and
    what every run imports (the run contract, scikit-learn, pyplot): a run waits for
    none of them."""
    code = (
        "import sys; from fedstruct.fl.flower.guard import load_component; "
        "from fedstruct.fl.flower.serverapp_worker import PRELOAD, load_serverapp; "
        "from fedstruct.deployment.app import server_app; "
        "assert load_serverapp() is server_app; "
        "before = [m in sys.modules for m in ('sklearn', 'matplotlib.pyplot')]; "
        "load_component(PRELOAD)(); "
        "print(before, [m in sys.modules for m in "
        "('sklearn', 'matplotlib.pyplot', 'fedstruct.runs.contract')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": SRC, "PATH": ""},
    )  # fmt: skip
    assert done.stdout.strip() == "[False, False] [True, True, True]"
