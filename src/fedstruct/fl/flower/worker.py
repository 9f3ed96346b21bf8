"""A warm ClientApp worker: one process answers every message of one run at a SuperNode.

Flower's SuperNode starts a fresh ``flwr-clientapp`` process for every message it
receives, which imports fedstruct (and torch) and rebuilds the node's client: seconds
per message whatever the message's work. ``fedstruct flower supernode`` runs its node
with ``--isolation process`` and a dispatcher (:mod:`fedstruct.fl.flower.dispatch`)
that hands every ClientApp task of a run to that run's worker, this process. It loads
the ClientApp once, when it starts (fedstruct's only: the ``clientapp`` component of
:data:`~fedstruct.fl.flower.guard.FEDSTRUCT_COMPONENTS`, never code from the run's app
bundle, which it checks again with :func:`~fedstruct.fl.flower.guard.app_problem`),
and keeps what the app caches per process (the method, the node's data, its site's
client) from one message to the next. Each task is answered as ``flwr-clientapp``
answers it (:func:`~fedstruct.fl.flower.adapter.answer_clientapp_task`): the node's
state for the run travels with the task's context, so nothing else is kept between
messages but those caches.

With its dispatcher it speaks lines: the dispatcher writes one task token per line to
the worker's standard input; the worker writes ``ready`` to its report pipe (the file
descriptor given) once the app is loaded, then ``done`` after each task, whether it was
answered or failed. The end of its input ends the worker. Its output and errors are the
node's, so its log lines land in the node's log as a ``flwr-clientapp``'s do.

Run: ``python -m fedstruct.fl.flower.worker RUNTIME_ADDRESS REPORT_FD``.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from logging import ERROR, WARNING
from typing import Any, TextIO

__all__ = ["DONE", "PRELOAD", "READY", "load_clientapp", "main"]

#: The line a worker writes once its ClientApp is loaded.
READY = "ready"
#: The line a worker writes after each task.
DONE = "done"
#: What a worker calls before it reports ready: fedstruct's own imports of a node's first
#: method message (named as the app's components are: it lives in a layer above this one).
PRELOAD = "fedstruct.deployment.app:preload_client"


def load_clientapp() -> Any:
    """fedstruct's ClientApp (the guard's ``clientapp`` component), imported here."""
    from fedstruct.fl.flower.guard import FEDSTRUCT_COMPONENTS, load_component

    return load_component(FEDSTRUCT_COMPONENTS["clientapp"])


class _Tasks:
    """Whether a task is being answered: the node stops a task by a SIGINT to its
    process (its heartbeat refused), which ends that task only, never the worker."""

    busy = False

    @classmethod
    def interrupt(cls, signum: int, frame: Any) -> None:
        if cls.busy:
            raise KeyboardInterrupt


def _preload() -> None:
    """Import what a task needs of Flower, of fedstruct (:data:`PRELOAD`) and torch,
    which most methods train with, before the run's first message (a spare worker starts
    while its node is idle); a node without torch goes on."""
    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.guard import load_component

    adapter.load_clientapp_runtime()
    load_component(PRELOAD)()
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def _tell(report: TextIO, line: str) -> bool:
    """Write ``line`` to the dispatcher; ``False`` if it has ended (its node stopped,
    e.g. while this worker was still loading): the report then goes nowhere, so that
    nothing is left to fail when the worker exits."""
    try:
        report.write(line + "\n")
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), report.fileno())
        return False
    return True


def main(argv: Sequence[str] | None = None) -> None:
    """Answer the tasks whose tokens arrive on standard input (module docstring)."""
    from flwr.common import log

    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.guard import app_problem

    address, fd = list(sys.argv[1:] if argv is None else argv)
    report = os.fdopen(int(fd), "w", buffering=1)
    app = load_clientapp()
    _preload()
    signal.signal(signal.SIGINT, _Tasks.interrupt)
    if not _tell(report, READY):
        return
    for line in sys.stdin:
        token = line.strip()
        if not token:
            continue
        _Tasks.busy = True
        try:
            adapter.answer_clientapp_task(
                address, token, lambda message, context: app(message=message, context=context),
                app_problem,
            )  # fmt: skip
        except KeyboardInterrupt:
            log(WARNING, "fedstruct worker: the node stopped a task of this run")
        except Exception as exc:  # the task failed; the worker serves the next
            log(ERROR, "fedstruct worker: a task failed: %s: %s", type(exc).__name__, exc)
        finally:
            _Tasks.busy = False
        if not _tell(report, DONE):
            return


if __name__ == "__main__":
    main()
