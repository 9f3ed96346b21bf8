"""A SuperNode's warm workers (fedstruct.fl.flower.dispatch, .worker), without a cluster.

The dispatcher hands each run's tasks to that run's worker (a spare one, its app loaded,
for a run's first task), replaces a worker that died, ends idle ones, and lets the
guard wait for the answer of the task a pull made; the worker answers a task as
``flwr-clientapp`` would, never with code from the run's bundle. The deployed tests
(tests/fl/test_flower_deploy.py) run them in real SuperNodes.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from fedstruct.fl.flower import adapter, dispatch
from fedstruct.fl.flower.dispatch import Dispatcher
from fedstruct.fl.flower.guard import FASTEST_POLL, guard_supernode, runtime_address

#: A stand-in worker: writes ready, then, for each token on its input, appends
#: "PID TOKEN" to the file given and writes done; the token "die" ends it at once.
FAKE_WORKER = """
import os, sys
report = os.fdopen(int(sys.argv[2]), "w", buffering=1)
report.write("ready\\n")
for line in sys.stdin:
    token = line.strip()
    if token == "die":
        os._exit(3)
    with open(sys.argv[1], "a") as seen:
        seen.write(f"{os.getpid()} {token}\\n")
    report.write("done\\n")
"""


class Tasks:
    """The node's tasks, as the dispatcher acquires them: ``(token, run id)``."""

    def __init__(self) -> None:
        self.waiting: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def add(self, token: str, run_id: int) -> None:
        with self.lock:
            self.waiting.append((token, run_id))

    def acquire(self) -> tuple[str, int] | None:
        with self.lock:
            return self.waiting.pop(0) if self.waiting else None


@pytest.fixture
def node(tmp_path):
    """A dispatcher with stand-in workers and tasks; ``answer(token, run)`` makes a task,
    wakes the dispatcher and waits for its end, as the guard does; ``seen()`` lists
    ``(worker pid, token)`` of the tasks the workers answered."""
    seen_file = tmp_path / "seen"
    spawned: list[subprocess.Popen] = []

    def spawn(report: int) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", FAKE_WORKER, str(seen_file), str(report)],
            stdin=subprocess.PIPE,
            pass_fds=(report,),
        )
        spawned.append(proc)
        return proc

    tasks = Tasks()
    dispatcher = Dispatcher("127.0.0.1:1", spawn=spawn, acquire=tasks.acquire).start()

    def answer(token: str, run_id: int) -> None:
        since = dispatcher.answered
        tasks.add(token, run_id)
        dispatcher.task_created()
        dispatcher.wait(since)

    def seen() -> list[tuple[int, str]]:
        if not seen_file.exists():
            return []
        return [
            (int(p), t)
            for p, t in (line.split() for line in seen_file.read_text().split("\n") if line)
        ]

    yield dispatcher, answer, seen, spawned
    with dispatcher._changed:
        workers = list(dispatcher._workers)
    for worker in workers:  # its listener logs its start before the test's output ends
        worker.ready.wait(timeout=60)
    dispatcher.close()  # no spare is started after the test
    for proc in spawned:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_every_task_of_a_run_goes_to_one_worker_and_each_run_has_its_own(node, monkeypatch):
    dispatcher, answer, seen, spawned = node
    for token, run_id in [("a1", 1), ("a2", 1), ("b1", 2), ("a3", 1), ("b2", 2)]:
        answer(token, run_id)
        assert seen()[-1][1] == token  # answered before wait returned
    by_token = dict((t, p) for p, t in seen())
    assert by_token["a1"] == by_token["a2"] == by_token["a3"]
    assert by_token["b1"] == by_token["b2"] != by_token["a1"]
    # run a's first task went to the spare started beforehand, run b's to a new worker:
    # no spare is started while tasks keep coming, one is once the node is idle
    assert by_token["a1"] == spawned[0].pid and by_token["b1"] == spawned[1].pid
    assert len(spawned) == 2
    assert dispatcher.answered == 5
    monkeypatch.setattr(dispatch, "SPARE_AFTER", 0.0)
    dispatcher.task_created()  # wakes it: the node is idle now
    deadline = time.monotonic() + 60
    while len(spawned) < 3:
        assert time.monotonic() < deadline, "no spare started"
        time.sleep(0.05)
    assert spawned[2].poll() is None


def test_a_worker_that_died_ends_its_task_and_is_replaced_at_the_next(node):
    dispatcher, answer, seen, spawned = node
    answer("a1", 1)
    first = seen()[-1][0]
    answer("die", 1)  # the worker dies while answering: the wait ends all the same
    assert spawned[0].wait(timeout=60) == 3
    answer("a2", 1)
    assert seen()[-1][1] == "a2" and seen()[-1][0] != first
    assert dispatcher.answered == 3


def test_idle_workers_end_and_at_most_max_workers_run(node, monkeypatch):
    dispatcher, answer, seen, spawned = node
    monkeypatch.setattr(dispatch, "MAX_WORKERS", 2)
    for run_id in (1, 2, 3):
        answer(f"t{run_id}", run_id)
    pids = {t: p for p, t in seen()}
    with dispatcher._changed:
        dispatcher._retire(time.monotonic())  # one too many: the least recently used ends
    proc = next(p for p in spawned if p.pid == pids["t1"])
    assert proc.wait(timeout=60) == 0  # its input closed: it ended
    assert all(p.poll() is None for p in spawned if p.pid != pids["t1"])
    with dispatcher._changed:
        dispatcher._retire(time.monotonic() + dispatch.IDLE_SECONDS + 1)  # idle too long
    for token in ("t2", "t3"):
        assert next(p for p in spawned if p.pid == pids[token]).wait(timeout=60) == 0
    answer("again", 1)  # a new worker for run 1
    assert seen()[-1][0] not in pids.values()


def test_the_guard_waits_for_the_answer_of_the_task_its_pull_made(monkeypatch):
    """guard_supernode with a dispatcher: a pull that made a task wakes the dispatcher
    and returns only once the task was answered; an empty pull waits for nothing."""
    node = importlib.import_module("flwr.supernode.start_client_internal")
    calls: list[str] = []

    class Recorder:
        answered = 4

        def task_created(self) -> None:
            calls.append("woken")

        def wait(self, since: int) -> None:
            calls.append(f"waited since {since}")

    answers = iter([None, 7])
    monkeypatch.setattr(node, "_pull_and_store_message", lambda **kwargs: next(answers))
    monkeypatch.setattr("fedstruct.fl.flower.guard.time.sleep", lambda s: calls.append(s))
    guard_supernode(1.0, Recorder())  # type: ignore[arg-type]
    assert node._pull_and_store_message(receive=lambda: None, get_fab=None) == 7
    assert calls == [FASTEST_POLL, "woken", "waited since 4"]


def test_a_guarded_supernode_polls_soon_after_a_message_then_less_often(monkeypatch):
    """After a message the node polls again soon, then 1.5 times later each time, at
    most ACTIVE_POLL apart while a run is likely going (ACTIVE_SECONDS), then up to
    the interval the environment gives."""
    from fedstruct.fl.flower import guard

    node = importlib.import_module("flwr.supernode.start_client_internal")
    clock = [0.0]
    answers = iter([1] + [None] * 60 + [2, None, 3])
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(round(seconds, 4))
        clock[0] += seconds

    monkeypatch.setattr(node, "_pull_and_store_message", lambda **kwargs: next(answers))
    monkeypatch.setattr("fedstruct.fl.flower.guard.time.sleep", sleep)
    monkeypatch.setattr("fedstruct.fl.flower.guard.time.monotonic", lambda: clock[0])
    guard_supernode(1.0)
    pull = node._pull_and_store_message
    assert pull(receive=lambda: None, get_fab=None) == 1
    assert pull(receive=lambda: None, get_fab=None) == 2
    assert waits[:6] == [0.05, 0.075, 0.1125, 0.1688, 0.25, 0.25]  # soon, then every 0.25
    ramp = next(i for i, w in enumerate(waits) if w > guard.ACTIVE_POLL)
    assert sum(waits[:ramp]) >= guard.ACTIVE_SECONDS  # longer waits once the run is idle
    assert waits[ramp:60] == [0.375, 0.5625, 0.8438] + [1.0] * (57 - ramp)
    assert pull(receive=lambda: None, get_fab=None) == 3
    assert waits[60:] == [FASTEST_POLL]  # soon again after a message


def test_a_guarded_supernode_asks_again_soon_after_a_poll_the_superlink_held(monkeypatch):
    """A SuperLink that held an empty poll listens for the node's next message: the node
    asks again FASTEST_POLL later (once per HOLD_SECONDS), not after a longer wait."""
    from fedstruct.fl.flower import guard

    node = importlib.import_module("flwr.supernode.start_client_internal")
    clock = [0.0]
    answers = iter([None] * 4 + [4])
    waits: list[float] = []

    def held_pull(**kwargs) -> int | None:
        clock[0] += guard.HOLD_SECONDS  # the SuperLink held it that long
        return next(answers)

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(node, "_pull_and_store_message", held_pull)
    monkeypatch.setattr("fedstruct.fl.flower.guard.time.sleep", sleep)
    monkeypatch.setattr("fedstruct.fl.flower.guard.time.monotonic", lambda: clock[0])
    guard_supernode(3.0)
    clock[0] = 100.0  # long after the node's last message: it would wait 3 s
    assert node._pull_and_store_message(receive=lambda: None, get_fab=None) == 4
    assert waits == [FASTEST_POLL] * 4  # not 1.5 times longer each time


def test_the_runtime_api_of_a_node_with_warm_workers_is_read_from_its_arguments():
    from fedstruct.fl.flower.cluster import Link, supernode_command

    cmd = supernode_command(0, Link("127.0.0.1:9091"), port=9200)
    assert runtime_address(cmd[1:]) == "127.0.0.1:9200"
    assert cmd[cmd.index("--isolation") + 1] == adapter.CLIENTAPP_ISOLATION
    assert runtime_address(["--port", "9200"]) is None  # Flower's subprocess isolation
    assert runtime_address(["--isolation", "process", "--host", "::1", "--port", "9"]) == (
        "[::1]:9"
    )


def test_a_worker_answers_a_foreign_bundle_with_the_invalid_app_error(monkeypatch):
    """answer_clientapp_task never runs the app for a bundle the check refuses: the task
    is answered with Flower's invalid-app error and the reason, and fails."""
    from flwr.app import Context, Message, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    for name in ("_run_id", "_node_id", "_task_id"):  # as in a task's process
        monkeypatch.setattr(TaskIdentity, name, 1, raising=False)

    runtime = importlib.import_module("flwr.supernode.runtime.run_clientapp")
    message = Message(RecordDict(), dst_node_id=1, message_type="query")
    message.metadata.__dict__["_message_id"] = message.object_id
    context = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})

    class Bundle:
        content = b"foreign"

    class Client:
        def SendTaskHeartbeat(self, request):
            return type("Answer", (), {"success": True})()

        def close(self) -> None:
            pass

    pushed, ended, ran = [], [], []
    monkeypatch.setattr(adapter, "runtime_client", lambda *args: Client())
    monkeypatch.setattr(runtime, "pull_task_input", lambda c: (message, context, None, Bundle()))
    monkeypatch.setattr(runtime, "push_message", lambda c, reply, ctx: pushed.append(reply))
    monkeypatch.setattr(runtime, "push_task_output", lambda **kw: ended.append(kw["sub_status"]))
    adapter.answer_clientapp_task(
        "127.0.0.1:1", "token", lambda m, c: ran.append(m), lambda b: f"refused {b!r}"
    )
    (reply,) = pushed
    assert ran == [] and reply.has_error()
    assert (
        reply.error.code == adapter.INVALID_APP_CODE and reply.error.reason == "refused b'foreign'"
    )
    assert ended == ["failed"]


def test_the_worker_loads_fedstructs_own_clientapp():
    from fedstruct.deployment.app import client_app
    from fedstruct.fl.flower.worker import load_clientapp

    assert load_clientapp() is client_app


def test_loading_the_clientapp_imports_no_method_or_torch(tmp_path):
    """A worker loads fedstruct's ClientApp, which imports no method (nor torch: the
    worker imports it itself, before it reports ready)."""
    code = (
        "import sys; from fedstruct.fl.flower.worker import load_clientapp; load_clientapp(); "
        "print('torch' in sys.modules)"
    )
    env_path = str(Path(__file__).parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": env_path, "PATH": ""},
    )  # fmt: skip
    assert done.stdout.strip() == "False"


def test_the_dispatcher_asks_the_node_once_per_task_and_never_when_idle(node, monkeypatch):
    """One Runtime API call per task the node made: none for an idle node, none that
    comes back empty (each was a request the node's server had to answer)."""
    dispatcher, answer, _, _ = node
    asked: list[str] = []
    acquire = dispatcher._acquire

    def counted() -> tuple[str, int] | None:
        task = acquire()
        asked.append("task" if task else "none")
        return task

    monkeypatch.setattr(dispatcher, "_acquire", counted)
    for token in ("a1", "a2", "a3"):
        answer(token, 1)
    dispatcher._wake.set()  # woken with no task made: it does not ask
    answer("a4", 1)
    assert asked == ["task"] * 4


def test_a_worker_preloads_what_a_first_method_message_imports(tmp_path):
    """Before it reports ready, a worker imports the estimators' base (scikit-learn),
    which loading the ClientApp does not: a run's first message then waits for none."""
    code = (
        "import sys; from fedstruct.fl.flower.guard import load_component; "
        "from fedstruct.fl.flower.worker import PRELOAD, load_clientapp; load_clientapp(); "
        "before = 'sklearn' in sys.modules; load_component(PRELOAD)(); "
        "print(before, 'fedstruct.estimators.base' in sys.modules)"
    )
    env_path = str(Path(__file__).parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": env_path, "PATH": ""},
    )  # fmt: skip
    assert done.stdout.strip() == "False True"


def test_a_spare_that_cannot_start_is_retried_later_not_at_once(monkeypatch):
    """A worker that ends before it is ready (a broken installation) is not replaced at
    every round of the dispatcher: the next spare waits, longer after each such end."""
    monkeypatch.setattr(dispatch, "RETRY_SPARE", 100.0)
    monkeypatch.setattr(dispatch, "SPARE_AFTER", 0.0)
    spawned: list[subprocess.Popen] = []

    def spawn(report: int) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"],
                                stdin=subprocess.PIPE, pass_fds=(report,))  # fmt: skip
        spawned.append(proc)
        return proc

    dispatcher = Dispatcher("127.0.0.1:1", spawn=spawn, acquire=lambda: None).start()
    try:
        deadline = time.monotonic() + 60
        while dispatcher._workers or dispatcher._spare_not_before == float("-inf"):
            assert time.monotonic() < deadline, "the worker's end was not seen"
            time.sleep(0.02)
        assert dispatcher._retry == 200.0  # doubled for the next end
        for _ in range(5):  # five rounds of the dispatcher: no spare started again
            dispatcher._wake.set()
            time.sleep(0.05)
        assert len(spawned) == 1 and spawned[0].wait(timeout=60) == 3
    finally:
        dispatcher.close()
