"""A dispatcher: every task of a run goes to that run's warm worker (a SuperNode's
ClientApp tasks, or a SuperLink's ServerApp).

``fedstruct flower supernode`` runs Flower's SuperNode with ``--isolation process``
(it then starts no ``flower-superexec``, which would start one ``flwr-clientapp``
process per message) and, in the same process, a :class:`Dispatcher`. When the node has
pulled a message and made a task of it, the guard (:mod:`fedstruct.fl.flower.guard`)
wakes the dispatcher (:meth:`Dispatcher.task_created`), which acquires the task from
the node's Runtime API (as ``flower-superexec`` would) and writes its token to the
worker of the task's run (:mod:`fedstruct.fl.flower.worker`): a process started for
the run's first message that answers all the others, so that a message costs what its
work costs. The guard then waits for the worker's answer (:meth:`Dispatcher.wait`)
before Flower's loop looks for it, instead of Flower's half-second polls.

A spare worker, its ClientApp (and torch, which most methods train with) already loaded,
is kept ready for the next run; once it is given a run, the next spare is started when
the node has had no task for :data:`SPARE_AFTER` seconds and no worker is answering one,
so that its start-up does not compete with the run's messages for the node's processors. A run's
worker that has had no message for :data:`IDLE_SECONDS` is ended (its input closed),
and so is the least recently used idle one when more than :data:`MAX_WORKERS` run.
A spare that ends before it has loaded its app (a broken installation) is started again
only :data:`RETRY_SPARE` seconds later, twice as long after each such end (at most
:data:`RETRY_SPARE_MOST`), not at every round of the dispatcher. A worker that dies is
replaced at its run's next message; the task it was answering
is then answered by Flower as a crashed ClientApp's (a lost reply). Workers end with
the node: their input closes with it.

``fedstruct flower superlink`` runs its SuperLink with ``--isolation process`` too (it
then starts no ``flower-superexec``, which would start a cold ``flwr-serverapp``
process for every run) and a dispatcher of its own: its workers are warm ServerApps
(:mod:`fedstruct.fl.flower.serverapp_worker`), each of which runs one run and ends. The
guard wakes it when the SuperLink accepts a run; it then asks for ServerApp tasks until
there is none, and also every ``look_every`` seconds (a run it was not woken for).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from logging import DEBUG, INFO, WARNING
from typing import IO, Any

from fedstruct.fl.flower.worker import DONE, READY

__all__ = [
    "IDLE_SECONDS",
    "MAX_WORKERS",
    "RETRY_SPARE",
    "RETRY_SPARE_MOST",
    "SPARE_AFTER",
    "Dispatcher",
]

#: Seconds a run's worker is kept without a message before it is ended.
IDLE_SECONDS = 600.0
#: Seconds before a spare is started again after one ended before it was ready (a
#: broken installation): doubled after each such end, at most :data:`RETRY_SPARE_MOST`.
RETRY_SPARE = 2.0
RETRY_SPARE_MOST = 300.0
#: At most this many runs' workers at once (the least recently used idle one ends).
MAX_WORKERS = 4
#: Seconds without a task after which a new spare worker is started.
SPARE_AFTER = 5.0
#: Seconds between the dispatcher's looks after the node's Runtime API failed it (a
#: task it was woken for is asked for again), and between its housekeeping rounds.
_LOOK_EVERY = 1.0


def _log(level: int, text: str) -> None:
    from flwr.common import log

    log(level, "fedstruct dispatcher: %s", text)


@dataclass(eq=False)
class _Worker:
    """One worker process and what the dispatcher knows of it."""

    proc: subprocess.Popen[bytes]
    report: IO[str]
    run_id: int | None = None
    busy: bool = False
    last: float = field(default_factory=time.monotonic)
    ready: threading.Event = field(default_factory=threading.Event)


class Dispatcher:
    """Hands the ClientApp tasks of the SuperNode whose Runtime API is at ``address`` to
    one warm worker per run (module docstring).

    Parameters
    ----------
    address
        The node's Runtime API (``host:port`` on this machine).
    spawn
        Starts a worker given its report pipe's write end (default: this Python
        running :mod:`fedstruct.fl.flower.worker`); for tests.
    acquire
        Acquires the next task: ``(token, run id)`` or ``None`` (default: a ClientApp
        task from the node's Runtime API).
    look_every
        ``None`` (a SuperNode's): ask once for each task the node made
        (:meth:`task_created`). Seconds (the SuperLink's): when woken, and at least
        this often, ask until there is no task.
    """

    def __init__(
        self,
        address: str,
        *,
        spawn: Callable[[int], subprocess.Popen[bytes]] | None = None,
        acquire: Callable[[], tuple[str, int] | None] | None = None,
        look_every: float | None = None,
    ) -> None:
        self.address = address
        self._spawn_process = spawn or self._start_worker
        self._acquire = acquire or self._acquire_from_node
        self._look_every = look_every
        self._last_look = float("-inf")
        self._client: Any = None
        self._workers: list[_Worker] = []
        self._changed = threading.Condition()
        self._answered = 0
        self._created = 0  # tasks the node made (task_created), under _changed
        self._asked = 0  # of them, those the dispatcher asked the node for
        self._last_task = float("-inf")
        self._wake = threading.Event()
        self._closed = False
        self._spare_not_before = float("-inf")
        self._retry = RETRY_SPARE
        self._thread = threading.Thread(target=self._serve, name="fedstruct-dispatcher")
        self._thread.daemon = True

    # ------------------------------------------------------------ the guard's side
    def start(self) -> Dispatcher:
        """Start the spare worker and the dispatching thread."""
        with self._changed:
            self._keep_spare()
        self._thread.start()
        return self

    def close(self) -> None:
        """End the dispatcher: no task is acquired and no spare started after this, and
        every worker's input is closed (a worker ends once its task is answered)."""
        with self._changed:
            self._closed = True
            for worker in list(self._workers):
                self._drop(worker)
            self._changed.notify_all()
        self._wake.set()
        self._thread.join(timeout=2 * _LOOK_EVERY)

    @property
    def answered(self) -> int:
        """How many tasks the workers have ended so far (answered, failed or died on)."""
        with self._changed:
            return self._answered

    def task_created(self) -> None:
        """The node made a task of a message: acquire it now."""
        with self._changed:
            self._created += 1
        self._wake.set()

    def wait(self, since: int) -> None:
        """Wait until a task has ended after :attr:`answered` was ``since`` (the task
        the node made meanwhile), or the dispatcher is gone."""
        with self._changed:
            while self._answered <= since and self._thread.is_alive():
                self._changed.wait(timeout=_LOOK_EVERY)

    # ------------------------------------------------------------- its own thread
    def _serve(self) -> None:
        """Acquire, when woken, each task the node made (:meth:`task_created`), one call
        of the node's Runtime API per task; one that the node did not give (its API not up
        yet, or failing) is asked for again :data:`_LOOK_EVERY` seconds later. An idle
        node is not asked at all. The wake is cleared before the tasks are counted: a
        task made after that wakes it again. With ``look_every`` (the SuperLink's), every
        task there is is acquired when woken and at least that often. A spare is
        started once no worker has been given a task for :data:`SPARE_AFTER` seconds
        and none is at work."""
        while True:
            woken = self._wake.wait(_LOOK_EVERY)
            self._wake.clear()
            try:
                with self._changed:
                    if self._closed:
                        return
                    now = time.monotonic()
                    self._retire(now)
                    idle = not any(w.busy for w in self._workers)
                    if now - self._last_task > SPARE_AFTER and idle:
                        self._keep_spare()
                    owed = self._created - self._asked
                if self._look_every is not None:
                    if woken or now - self._last_look >= self._look_every:
                        self._last_look = now
                        while (task := self._acquire()) is not None:
                            self._hand(*task)
                    continue
                while owed > 0 and (task := self._acquire()) is not None:
                    self._asked, owed = self._asked + 1, owed - 1
                    self._hand(*task)
            except Exception as exc:  # the node's API not up yet, or gone: look again
                _log(DEBUG, f"no task acquired ({type(exc).__name__}: {exc})")
                self._client = None

    def _acquire_from_node(self) -> tuple[str, int] | None:
        from fedstruct.fl.flower import adapter

        if self._client is None:
            self._client = adapter.runtime_client(self.address, "SuperExec")
        return adapter.acquire_clientapp_task(self._client)

    def _hand(self, token: str, run_id: int) -> None:
        """Write ``token`` to the worker of run ``run_id`` (the spare, or a new one, for
        its first task)."""
        with self._changed:
            self._last_task = time.monotonic()
            for attempt in range(2):
                worker = self._worker_of(run_id)
                worker.run_id, worker.busy, worker.last = run_id, True, time.monotonic()
                try:
                    assert worker.proc.stdin is not None
                    worker.proc.stdin.write(f"{token}\n".encode())
                    worker.proc.stdin.flush()
                    break
                except OSError:  # it died since its last task: start another
                    worker.busy = False
                    self._drop(worker)
                    if attempt:
                        raise

    def _worker_of(self, run_id: int) -> _Worker:
        for worker in self._workers:
            if worker.run_id == run_id:
                return worker
        worker = next((w for w in self._workers if w.run_id is None), None) or self._spawn()
        _log(INFO, f"run {run_id} is handed to worker {worker.proc.pid}")
        return worker

    def _keep_spare(self) -> None:
        """Start a spare unless there is one, or the last one ended before it was ready
        less than the retry wait ago (each such end doubles the wait)."""
        if time.monotonic() < self._spare_not_before:
            return
        if not any(w.run_id is None for w in self._workers):
            self._spawn()

    def _spawn(self) -> _Worker:
        read, write = os.pipe()
        try:
            proc = self._spawn_process(write)
        finally:
            os.close(write)
        worker = _Worker(proc, os.fdopen(read, "r"))
        _log(INFO, f"started worker {proc.pid}")
        self._workers.append(worker)
        threading.Thread(target=self._listen, args=(worker,), daemon=True).start()
        return worker

    def _start_worker(self, report: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "fedstruct.fl.flower.worker", self.address, str(report)],
            stdin=subprocess.PIPE,
            pass_fds=(report,),
        )

    def _listen(self, worker: _Worker) -> None:
        """Follow ``worker``'s report until it ends."""
        for line in worker.report:
            with self._changed:
                if line.strip() == READY:
                    worker.ready.set()
                    self._retry = RETRY_SPARE
                    _log(INFO, f"worker {worker.proc.pid} ready")
                elif line.strip() == DONE:
                    worker.busy, worker.last = False, time.monotonic()
                    self._answered += 1
                    self._changed.notify_all()
        code = worker.proc.wait()
        with self._changed:
            if not worker.ready.is_set() and not self._closed:  # it could not load its app
                self._spare_not_before = time.monotonic() + self._retry
                _log(WARNING, f"worker {worker.proc.pid} ended before it was ready (exit code "
                              f"{code}); the next spare starts in {self._retry:g} s")  # fmt: skip
                self._retry = min(2 * self._retry, RETRY_SPARE_MOST)
            if worker.busy:  # the task it was answering ends with it
                _log(WARNING, f"the worker of run {worker.run_id} ended (exit code {code})")
                worker.busy = False
                self._answered += 1
            self._drop(worker)
            self._changed.notify_all()

    def _drop(self, worker: _Worker) -> None:
        if worker in self._workers:
            self._workers.remove(worker)
            if worker.proc.stdin is not None:
                try:
                    worker.proc.stdin.close()
                except OSError:
                    pass

    def _retire(self, now: float) -> None:
        """End the runs' workers idle for :data:`IDLE_SECONDS`, and the least recently
        used idle ones beyond :data:`MAX_WORKERS`."""
        runs = [w for w in self._workers if w.run_id is not None]
        idle = sorted((w for w in runs if not w.busy), key=lambda w: w.last)
        over = len(runs) - MAX_WORKERS
        for worker in idle:
            if now - worker.last > IDLE_SECONDS or over > 0:
                over -= 1
                self._drop(worker)  # its input closes: it ends
